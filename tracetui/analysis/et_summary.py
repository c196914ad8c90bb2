"""What an Execution Trace alone holds: node counts, threads, schema, ops by name and by input
shapes (``tracetui info``/``summary``/``export`` of an ET without its Kineto trace).

An ET has no timestamps, so every number here is a count: ``nodes`` (every node of the file),
``ops`` (nodes that are not the process or thread roots), per thread its ops, and ops grouped
by name and by (name, input shapes, input types) as the ET records them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import numpy as np

from ..et.trace import ETTrace

#: rows of the ops tables of a summary (the export keeps every row)
DEFAULT_TOP = 15


def et_counts(et: ETTrace) -> dict[str, Any]:
    """``schema``, ``layout``, ``pid``, ``time``, ``nodes``, ``ops``, ``threads`` (per ET
    thread: ``tid`` and its ``ops``), ``ops_with_rf_id``, ``ops_with_seq_id``."""
    ops = ~et.structural_mask()
    tids, n = np.unique(et.tid[ops], return_counts=True)
    return {"schema": et.schema, "layout": et.layout, "pid": et.pid, "time": et.time, "nodes": len(et),
            "ops": int(ops.sum()), "threads": [{"tid": int(t), "ops": int(c)} for t, c in zip(tids, n)],
            "ops_with_rf_id": int((ops & (et.rf_id != 0)).sum()),
            "ops_with_seq_id": int((ops & (et.seq_id >= 0)).sum())}


def ops_by_name(et: ETTrace, positions: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Per op name (most first): ``name``, ``count``, ``threads`` (ET tids, comma separated)."""
    pos = _ops(et, positions)
    if not pos.size:
        return []
    names, inv, counts = np.unique(et.name_ids[pos], return_inverse=True, return_counts=True)
    out = []
    for i in np.lexsort((names, -counts)).tolist():
        tids = sorted(set(et.tid[pos[inv == i]].tolist()))
        out.append({"name": et.names[int(names[i])], "count": int(counts[i]), "threads": ",".join(map(str, tids))})
    return out


def ops_by_shape(et: ETTrace, positions: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Per (name, input shapes, input types), most first: ``name``, ``input_shapes``,
    ``input_types`` (compact JSON text of the lists the ET writes), ``count``."""
    pos = _ops(et, positions)
    sig: Counter = Counter()
    for p in pos.tolist():
        shapes, types = et.input_shapes_types(p)
        sig[(et.name(p), _text(shapes), _text(types))] += 1
    return [{"name": k[0], "input_shapes": k[1], "input_types": k[2], "count": c}
            for k, c in sorted(sig.items(), key=lambda kv: (-kv[1], kv[0]))]


def et_summary(et: ETTrace, top: int = DEFAULT_TOP) -> dict[str, Any]:
    """The ``et`` section of ``summary --json`` for an ET alone: :func:`et_counts` plus the
    ``top`` rows of ``ops_by_name`` and ``ops_by_shape`` (and how many rows each has)."""
    names = ops_by_name(et)
    shapes = ops_by_shape(et)
    return {**et_counts(et), "op_names": len(names), "ops_by_name": names[:top], "op_signatures": len(shapes),
            "ops_by_shape": shapes[:top]}


def _ops(et: ETTrace, positions: np.ndarray | None) -> np.ndarray:
    ops = ~et.structural_mask()
    pos = np.flatnonzero(ops) if positions is None else np.asarray(positions, dtype=np.int64)
    return pos[ops[pos]] if positions is not None else pos


def _text(v: Any) -> str:
    return "" if v is None else msgspec.json.encode(v).decode()
