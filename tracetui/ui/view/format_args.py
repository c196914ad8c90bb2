"""The detail pane's "Args" section for a trace read from another format than a PyTorch
profiler trace (rocprofv3, a generic Chrome trace ...): every arg of the event that the rows
above it do not show (a rocprofv3 kernel's VGPRs, SGPRs, LDS and scratch; a Chrome trace
span's own args), each as the file wrote it.  A PyTorch trace's events show their args as
before (shapes, launch facts), with no such section."""

from __future__ import annotations

from typing import Any

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
