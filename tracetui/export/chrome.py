"""Chrome-trace (Kineto JSON) export of a subtree, loadable in Perfetto and in tracetui.

The file holds, in ``traceEvents`` form:

- the subtree's host events (root and everything nested under it) and, by default, the
  root's ancestors (its parent chain, for context);
- every GPU event the subtree launched (kernels, memcpys, memsets), unchanged;
- ``[memory]`` and other instant events of the root's thread inside the root's span;
- ``ac2g`` flows from each launch call to its GPU events (id = the launch's correlation,
  ``bp: "e"`` on the GPU side) and the original ``fwdbwd`` flows whose two ends are kept;
- ``M`` metadata events naming every process and thread used, and every top-level key of
  the source file (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds`` ...).

Timestamps are absolute (``origin_us + ts``, the source file's clock) written as exact
decimal text (integer microseconds, then up to 6 fractional digits), so nothing is lost to
float rounding; ``args`` are copied from the source as they are (big integers stay exact),
with control, bidi and invisible characters inside their strings written as JSON ``\\u``
escapes, as everywhere in the file (:func:`tracetui.io.jsonout.escape_controls`: every value
reads back exact).
Whole-trace export (no root) writes every event and flow-derived link.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..io import jsonout
from ..kineto import schema
from ..kineto.kinds import FWDBWD_FLOW_CATEGORIES, GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.trace import KinetoTrace

_GPU_WORK = [int(k) for k in GPU_WORK_KINDS]


def abs_ts_token(origin_us: int, rel_us: float) -> bytes:
    """Exact decimal text of ``origin_us + rel_us`` (µs), at most 6 fractional digits."""
    if not math.isfinite(rel_us):
        return str(origin_us).encode()
    ip = math.floor(rel_us)
    micro = round((rel_us - ip) * 1_000_000)
    if micro >= 1_000_000:
        ip += 1
        micro -= 1_000_000
    whole = origin_us + int(ip)
    if micro == 0:
        return str(whole).encode()
    frac = f"{micro:06d}".rstrip("0")
    if whole < 0:  # negative absolute times do not occur in real traces; keep them exact anyway
        return repr(whole + micro / 1e6).encode()
    return f"{whole}.{frac}".encode()


def _event(head: dict[str, Any], ts: bytes, args: bytes | None) -> bytes:
    b = jsonout.dumps(head)
    tail = b',"ts":' + ts
    if args:
        tail += b',"args":' + args
    return b[:-1] + tail + b"}"


def select_events(kt: KinetoTrace, root: int | None, with_parents: bool = True) -> np.ndarray:
    """Event indices the export writes for ``root`` (sorted), see the module docstring."""
    if root is None:
        return np.arange(kt.n_events, dtype=np.int64)
    nodes = kt.subtree(root)
    ev = nodes[nodes < kt.n_events]
    parts = [ev]
    if with_parents:
        anc = np.asarray([a for a in kt.ancestors(root) if a < kt.n_events], dtype=np.int64)
        parts.append(anc)
    # instant events on the root's thread during its span
    lane = kt.lane_of_node(root)
    if lane is not None and not lane.is_gpu:
        lo, hi = kt.node_span(root)
        inst = np.flatnonzero((kt.kind == int(Kind.INSTANT)) & (kt.lane_of == lane.index)
                              & (kt.ts >= lo) & (kt.ts <= hi))
        parts.append(inst)
    return np.unique(np.concatenate(parts).astype(np.int64))


def _metadata_events(kt: KinetoTrace, ev: np.ndarray) -> list[bytes]:
    """process/thread name events, stamped with the first exported event's time (as Kineto does)."""
    t0 = abs_ts_token(kt.origin_us, float(kt.ts[ev].min())) if ev.size else b"0"
    pids: dict[Any, None] = {}
    threads: dict[tuple[Any, Any], None] = {}
    for i in ev.tolist():
        pids.setdefault(kt.pids[i], None)
        threads.setdefault((kt.pids[i], kt.tids[i]), None)
    out = []
    for pid in pids:
        if pid in kt.process_names:
            out.append(_event({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                               "args": {"name": kt.process_names[pid]}}, t0, None))
        if pid in kt.process_labels:
            out.append(_event({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
                               "args": {schema.LABELS: kt.process_labels[pid]}}, t0, None))
    for pid, tid in threads:
        name = kt.thread_names.get((pid, tid))
        if name:
            out.append(_event({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": name}}, t0, None))
    return out


def _flow_events(kt: KinetoTrace, ev: np.ndarray) -> list[bytes]:
    keep = np.zeros(kt.n_events, dtype=bool)
    keep[ev] = True
    out: list[bytes] = []
    gpu = ev[np.isin(kt.kind[ev], _GPU_WORK)]
    launch = kt.launch_of[gpu].astype(np.int64)
    ok = (launch >= 0) & keep[np.maximum(launch, 0)]
    gpu, launch = gpu[ok], launch[ok]
    origin = kt.origin_us
    for lch in np.unique(launch).tolist():
        fid = int(kt.correlation[lch])
        out.append(_event({"ph": "s", "id": fid, "pid": kt.pids[lch], "tid": kt.tids[lch], "cat": "ac2g",
                           "name": "ac2g"}, abs_ts_token(origin, float(kt.ts[lch])), None))
    for g, lch in zip(gpu.tolist(), launch.tolist()):
        fid = int(kt.correlation[lch])
        out.append(_event({"ph": "f", "id": fid, "pid": kt.pids[g], "tid": kt.tids[g], "cat": "ac2g",
                           "name": "ac2g", "bp": "e"}, abs_ts_token(origin, float(kt.ts[g])), None))
    # fwdbwd flows whose both ends are kept
    fl = kt.flows
    if any(c in FWDBWD_FLOW_CATEGORIES for c in fl.cat):
        pos = {(kt.pids[i], kt.tids[i], float(kt.ts[i])) for i in ev.tolist()
               if kt.kind[i] == int(Kind.CPU_OP)}
        ends: dict[Any, list[int]] = {}
        for j, c in enumerate(fl.cat):
            if c in FWDBWD_FLOW_CATEGORIES and (fl.pid[j], fl.tid[j], float(fl.ts[j])) in pos:
                ends.setdefault(fl.flow_id[j], []).append(j)
        for fid, js in ends.items():
            phs = {chr(int(fl.ph[j])) for j in js}
            if not {"s", "f"} <= phs:
                continue
            for j in js:
                head: dict[str, Any] = {"ph": chr(int(fl.ph[j])), "id": fid, "pid": fl.pid[j], "tid": fl.tid[j],
                                        "cat": fl.cat[j], "name": fl.cat[j]}
                if head["ph"] == "f":
                    head["bp"] = "e"
                out.append(_event(head, abs_ts_token(origin, float(fl.ts[j])), None))
    return out


def chrome_pieces(kt: KinetoTrace, ev: np.ndarray, note: tuple[str, dict[str, Any]] | None = None):
    """The Chrome-trace JSON of the events ``ev`` (model indices, with the metadata and flows
    described in the module docstring) as byte pieces, for :func:`~tracetui.io.files.write_atomically`.
    ``note`` = (key, value): one more top-level key saying what was written (``tracetui_export``)."""
    ev = np.unique(np.asarray(ev, dtype=np.int64))
    origin = kt.origin_us
    blob, offs = kt.args_blob, kt.args_offsets
    top: dict[str, Any] = {k: v for k, v in kt.metadata.items() if k != "traceEvents"}
    if note is not None:
        top[note[0]] = note[1]
    head_b = jsonout.dumps(top)
    yield head_b[:-1] + (b"," if len(head_b) > 2 else b"") + b'"traceEvents":[\n'
    items: list[bytes] = _metadata_events(kt, ev)
    gpu_kinds = {int(k) for k in GPU_KINDS}
    first = True
    for i in ev[np.argsort(kt.ts[ev], kind="stable")].tolist():
        ph = chr(int(kt.ph[i])) or "X"
        head: dict[str, Any] = {"ph": ph, "cat": kt.cats[kt.cat_id[i]], "name": kt.names[kt.name_id[i]],
                                "pid": kt.pids[i], "tid": kt.tids[i]}
        if ph == "X":
            head["dur"] = float(kt.dur[i])
        elif ph in ("i", "I"):
            head["s"] = "t" if int(kt.kind[i]) not in gpu_kinds else "p"
        a, b = int(offs[i]), int(offs[i + 1])
        items.append(_event(head, abs_ts_token(origin, float(kt.ts[i])), blob[a:b] if b > a else None))
        if len(items) >= 65536:  # (args are the file's JSON text: escape_controls as jsonout.dumps does)
            yield jsonout.escape_controls((b"" if first else b",\n") + b",\n".join(items))
            items, first = [], False
    items += _flow_events(kt, ev)
    if items:
        yield jsonout.escape_controls((b"" if first else b",\n") + b",\n".join(items))
    yield b"\n]}\n"


def render_chrome(kt: KinetoTrace, root: int | None, with_parents: bool = True) -> bytes:
    """The Chrome-trace JSON bytes of the subtree under ``root`` (None: the whole trace)."""
    note = {"source": kt.name_of_file, "root": root, "root_name": kt.name(root) if root is not None else None}
    return b"".join(chrome_pieces(kt, select_events(kt, root, with_parents), ("tracetui_export", note)))
