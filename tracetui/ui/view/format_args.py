"""The detail pane's "Args" section for a trace read from another format than a PyTorch
profiler trace (rocprofv3, a generic Chrome trace ...): every arg of the event that the rows
above it do not show (a rocprofv3 kernel's VGPRs, SGPRs, LDS and scratch; a Chrome trace
span's own args), each as the file wrote it.  A PyTorch trace's events show their args as
before (shapes, launch facts), with no such section."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import formats
from ...io import jsonout
from ...kineto import schema
from ...kineto.kinds import GPU_WORK_KINDS, Kind
from .detail_section import DetailSection
from .detail_section import cell as _t
from .detail_section import grid as _grid

#: args the kind's own rows already show (device, stream, ids, launch configuration, bytes)
_SHOWN_FOR_GPU = frozenset({schema.DEVICE, schema.STREAM, schema.CORRELATION, schema.GRID, schema.BLOCK,
                            schema.BYTES, schema.EXTERNAL_ID, schema.REGISTERS_PER_THREAD, schema.SHARED_MEMORY,
                            schema.BLOCKS_PER_SM, schema.WARPS_PER_SM, schema.EST_OCCUPANCY,
                            schema.MEMORY_BANDWIDTH})
_SHOWN_FOR_HOST = frozenset({schema.CORRELATION, schema.EXTERNAL_ID, schema.RECORD_FUNCTION_ID,
                             schema.SEQUENCE_NUMBER, schema.CBID, schema.INPUT_DIMS, schema.INPUT_TYPE,
                             schema.INPUT_STRIDES, schema.CONCRETE_INPUTS})


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return " × ".join(map(str, value))  # as the Grid and Block rows write a shape
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return jsonout.dumps(value).decode()


def format_args_sections(kt: Any, ev: int) -> list[DetailSection]:
    """The "Args" section of event ``ev`` of a trace of another format (none for a PyTorch
    trace, or when every arg is shown above)."""
    if formats.other_format(kt) is None:
        return []
    args = kt.args(ev)
    if not isinstance(args, dict) or not args:
        return []
    shown = _SHOWN_FOR_GPU if Kind(int(kt.kind[ev])) in GPU_WORK_KINDS else _SHOWN_FOR_HOST
    rows = [(str(k), _t(_text(v))) for k, v in args.items() if k not in shown]
    return [DetailSection("Args", [_grid(rows)])] if rows else []


def _innermost(kt: Any, lane: int, ts: float) -> int:
    """The innermost event on ``lane`` whose span holds ``ts``; else the first top-level event
    starting at or after it (a flow end binds to the next slice); -1 when none."""
    node = kt.n_events + lane
    found = -1
    while True:
        kids = kt.children(node)
        if not kids.size:
            return found
        starts = kt.ts[kids]
        at = int(np.searchsorted(starts, ts, side="right")) - 1
        inside = -1
        for k in kids[max(0, at - 8):at + 1][::-1].tolist():  # the latest starts first (siblings may share one)
            if k < kt.n_events and kt.ts[k] <= ts <= kt.ts[k] + kt.dur[k]:
                inside = k
                break
        if inside < 0:
            if found < 0 and node >= kt.n_events and at + 1 < kids.size:
                return int(kids[at + 1])
            return found
        found = node = inside


def _lane_index(kt: Any) -> dict[tuple[Any, Any], int]:
    return {(ln.pid, ln.tid): ln.index for ln in kt.lanes if not ln.is_gpu}


def flow_sections(kt: Any, ev: int) -> list[DetailSection]:
    """The flows (ph s/t/f) of a trace of another format that start or end in event ``ev``: each
    end is bound to the innermost span on its thread holding its time (else the next span), and
    the event at the other end is named.  A PyTorch trace's flows are its launch and
    forward/backward links, shown as those."""
    fl = kt.flows
    if formats.other_format(kt) is None or not len(fl.ph) or not (0 <= ev < kt.n_events):
        return []
    t0, t1 = float(kt.ts[ev]), float(kt.ts[ev] + kt.dur[ev])
    near = np.flatnonzero((fl.ts >= t0) & (fl.ts <= t1))
    lanes = _lane_index(kt)
    me = (kt.pids[ev], kt.tids[ev])
    rows: list[tuple[str, Any]] = []
    for j in near.tolist():
        if (fl.pid[j], fl.tid[j]) != me or _innermost(kt, lanes[me], float(fl.ts[j])) != ev:
            continue
        for k in range(len(fl.ph)):
            if k == j or fl.flow_id[k] != fl.flow_id[j] or fl.flow_id[k] is None:
                continue
            lane = lanes.get((fl.pid[k], fl.tid[k]))
            other = _innermost(kt, lane, float(fl.ts[k])) if lane is not None else -1
            out = int(fl.ts[k]) >= int(fl.ts[j]) if fl.ph[j] != fl.ph[k] else k > j
            where = kt.lanes[lane].label if lane is not None else f"pid {fl.pid[k]}, tid {fl.tid[k]}"
            what = kt.name(other) if other >= 0 else "(no span there)"
            rows.append(("out →" if out else "in ←", _t(f"{what} · {where} · {fl.cat[k]} {fl.flow_id[k]}")))
    return [DetailSection("Flows", [_grid(rows)])] if rows else []
