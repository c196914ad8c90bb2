"""Which host line an API call line belongs with.

Older JAX/XLA on ROCm (the shared MI300 sample) writes the runtime calls that launch kernels
(``hipModuleLaunchKernel`` with ``hlo_op``, ``hlo_module`` and ``correlation_id`` stats) on
lines of their own (``Host Threads/583``), while the XLA ops that issue them (events named after
the ``hlo_op``: ``loop_transpose_fusion``, ``cudnn-conv.1``) are on the executing thread's line
(``py_xla_execute/-1472503042444199177``).  Both are one OS thread; the file does not say so.
The rule (:func:`call_line_owners`): a line whose calls carry ``hlo_op`` stats, none of them
inside an event of that name on its own line, belongs with the one other line of its plane
where *every* such call lies within an event named as its ``hlo_op``; when no line, or more
than one, holds all of them, the line stays as it is.  Its events are then shown on that
line's lane, so the op nests its calls as a cpu_op nests its runtime calls in a PyTorch trace.
"""

from __future__ import annotations

import numpy as np


def contained(call_key: np.ndarray, call_end: np.ndarray, op_key: np.ndarray, op_end: np.ndarray,
              span: int) -> np.ndarray:
    """Bool per call: an op of the same name starts at or before it and ends at or after its
    end.  Keys are ``name rank * span + start`` (int64; ``span`` exceeds every start)."""
    if not op_key.size or not call_key.size:
        return np.zeros(call_key.size, dtype=bool)
    order = np.argsort(op_key, kind="stable")
    k, e = op_key[order], op_end[order]
    # the latest-ending op among those that start first: a running maximum of ends per name
    at = np.searchsorted(k, call_key, side="right") - 1
    ok = at >= 0
    at = np.maximum(at, 0)
    same = (k[at] // span) == (call_key // span)
    run_end = _running_max_by_group(e, k // span)
    return ok & same & (run_end[at] >= call_end)


def _running_max_by_group(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The running maximum of ``values`` restarted where ``group`` changes (both sorted by group)."""
    out = values.copy()
    if out.size < 2:
        return out
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), out.size]):  # one step per distinct name
        np.maximum.accumulate(out[a:b], out=out[a:b])
    return out


def call_line_owners(call_line: np.ndarray, call_rank: np.ndarray, call_t: np.ndarray, call_end: np.ndarray,
                     op_line: np.ndarray, op_rank: np.ndarray, op_t: np.ndarray, op_end: np.ndarray,
                     plane_of_line: np.ndarray) -> dict[int, int]:
    """Line -> the line its calls belong with (the rule of the module docstring).

    ``call_*``: the calls that carry an ``hlo_op`` (line, rank of the op name, start, end: int64
    ns from the earliest event); ``op_*``: the events named as some ``hlo_op`` (cpu_ops)."""
    out: dict[int, int] = {}
    if not call_line.size or not op_line.size:
        return out
    span = int(max(call_t.max(), op_t.max())) + 1
    ranks = int(max(call_rank.max(), op_rank.max())) + 1
    if ranks * span >= 1 << 62:  # cannot key by (name, time) in 64 bits: times in µs instead
        return call_line_owners(call_line, call_rank, call_t // 1000, -(-call_end // 1000), op_line, op_rank,
                                op_t // 1000, -(-op_end // 1000), plane_of_line)
    call_key = call_rank * span + call_t
    op_key = op_rank * span + op_t
    lines = np.unique(call_line)
    self_ok = np.zeros(call_line.size, dtype=bool)
    for ln in np.unique(op_line).tolist():  # calls inside ops of their own line need no owner
        c, o = np.flatnonzero(call_line == ln), op_line == ln
        self_ok[c] = contained(call_key[c], call_end[c], op_key[o], op_end[o], span)
    todo = [int(ln) for ln in lines.tolist() if not self_ok[call_line == ln].any()]
    if not todo:
        return out
    calls = np.flatnonzero(np.isin(call_line, todo))
    hits = {}  # candidate line -> calls of each todo line it contains
    for cand in np.unique(op_line).tolist():
        o = op_line == cand
        inside = contained(call_key[calls], call_end[calls], op_key[o], op_end[o], span)
        hits[cand] = np.bincount(np.searchsorted(todo, call_line[calls][inside]), minlength=len(todo))
    need = np.bincount(np.searchsorted(todo, call_line[calls]), minlength=len(todo))
    for k, ln in enumerate(todo):
        full = [cand for cand, h in hits.items() if h[k] == need[k] and cand != ln
                and plane_of_line[cand] == plane_of_line[ln]]
        if len(full) == 1:
            out[ln] = full[0]
    return out
