"""The summary deltas of a diff as tables of the summaries screen (A, B, Δ), without Textual.

One tab each: the step (step time, GPU time and GPU events launched in it, and the GPU
timeline breakdown: computation, exposed communication, exposed memcpy, idle ...), kernel
categories, kernels, ops (direct and subtree GPU time), launch statistics and idle gaps.  The
numbers are :func:`tracetui.diff.deltas.summary_deltas`'s (per-step means, the functions
``tracetui summary`` uses, on the compared steps' events), so they are ``tracetui diff
--json``'s.  Enter on a kernel or an op goes to the merged tree's rows that hold it (an op of
that name; an op whose own kernels include that kernel, on either side), ``n``/``N`` cycle
them.  Times are microseconds; Δ is B - A, Δ % of A.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import units
from ...analysis.gpu_breakdown import TIMELINE_KEYS
from ...diff.align import RowKind
from ...diff.compare import TraceDiff
from ...diff.deltas import summary_deltas
from ...diff.kernels import own_gpu
from ...diff.model import DiffTree
from .summary_table import MAX_ROWS, SummaryTable

_US = units.US
_PCT_D = f"{units.PCT} Δ"
_NO_ROWS = np.zeros(0, dtype=np.int64)
_TIMELINE_LABELS = {"total": "GPU span", "computation": "computation", "exposed_comm": "exposed communication",
                    "exposed_memcpy": "exposed memcpy", "busy": "busy", "idle": "idle",
                    "total_comm": "all communication", "total_memcpy": "all memcpy"}


def _n(v: float) -> Any:
    """A count as an int when it is whole (one step), else the per-step mean."""
    return int(v) if float(v).is_integer() else float(v)


def _pct(a: float, b: float) -> float | None:
    return (b - a) * 100.0 / a if a else None


def _abd(a: float, b: float) -> tuple[float, float, float, float | None]:
    return a, b, b - a, _pct(a, b)


def _rows_by_op_name(tree: DiffTree) -> dict[str, np.ndarray]:
    """Op rows by the op's name on either side."""
    out: dict[str, list[int]] = {}
    for which, ev in (("a", tree.ev_a), ("b", tree.ev_b)):
        kt = tree.side(which).linked.kineto
        rows = np.flatnonzero((tree.kind == int(RowKind.OP)) & (ev >= 0))
        for r, nid in zip(rows.tolist(), kt.name_id[ev[rows]].tolist()):
            out.setdefault(kt.names[nid], []).append(r)
    return {k: np.unique(v) for k, v in out.items()}


def _rows_by_kernel_name(tree: DiffTree) -> dict[str, np.ndarray]:
    """Op rows by the names of their own GPU events (kernels their own calls launched)."""
    out: dict[str, list[np.ndarray]] = {}
    for which, op_col in (("a", tree.op_a), ("b", tree.op_b)):
        f = tree.side(which).forest
        kt = f.trace
        start, index = own_gpu(f)
        row_of_op = np.full(f.n, -1, dtype=np.int64)
        ok = np.flatnonzero(op_col >= 0)
        row_of_op[op_col[ok]] = ok
        owner = np.repeat(np.arange(f.n), np.diff(start))
        rows = row_of_op[owner]
        keep = rows >= 0
        names, rows = kt.name_id[index[keep]], rows[keep]
        for nid in np.unique(names).tolist():
            out.setdefault(kt.names[nid], []).append(rows[names == nid])
    return {k: np.unique(np.concatenate(v)) for k, v in out.items()}


def _step(tree: DiffTree, deltas: dict[str, Any], per: str) -> SummaryTable:
    t = SummaryTable("step", "Step", [("", False), ("A", True), ("B", True), ("Δ", True), (_PCT_D, True)],
                     note=f"{per}; GPU timeline: unions over every stream of the step's GPU events")
    t.add((f"step time (host, {_US})", *_abd(float(tree.host_a[0]), float(tree.host_b[0]))), "the step",
          np.zeros(1, dtype=np.int64))
    t.add((f"GPU time launched in the step ({_US})", *_abd(float(tree.gpu_a[0]), float(tree.gpu_b[0]))),
          "the step", np.zeros(1, dtype=np.int64))
    a, b = float(tree.gpu_n_a[0]), float(tree.gpu_n_b[0])
    t.add(("GPU events launched in the step", _n(a), _n(b), _n(b - a), _pct(a, b)), "the step",
          np.zeros(1, dtype=np.int64))
    for key in TIMELINE_KEYS:
        v = deltas["gpu_timeline"][key]
        t.add((f"GPU timeline: {_TIMELINE_LABELS.get(key, key)} ({_US})", *_abd(v["a_us"], v["b_us"])),
              key, _NO_ROWS)
    return t


def diff_tables(d: TraceDiff) -> list[SummaryTable]:
    """Every tab of the summary deltas (module docstring); runs in a worker thread."""
    tree = d.tree
    deltas = summary_deltas(d, MAX_ROWS)
    steps = (tree.a.n_steps, tree.b.n_steps)
    per = "per step" if steps == (1, 1) else f"per-step means of {steps[0]} and {steps[1]} steps"
    tables = [_step(tree, deltas, per)]

    cats = SummaryTable("categories", "Categories", [("category", False), ("count A", True), ("count B", True),
                                                     (f"A {_US}", True), (f"B {_US}", True), (f"Δ {_US}", True),
                                                     (_PCT_D, True)], note=f"{per}; summed durations",
                        drop=("count A", "count B"))
    for r in deltas["kernel_categories"]:
        cats.add((r["category"], _n(r["count_a"]), _n(r["count_b"]), *_abd(r["total_us_a"], r["total_us_b"])),
                 f"category {r['category']}", _NO_ROWS)
    tables.append(cats)

    by_kernel = _rows_by_kernel_name(tree)
    kern = SummaryTable("kernels", "Kernels", [("name", False), ("category", False), ("count A", True),
                                               ("count B", True), (f"A {_US}", True), (f"B {_US}", True),
                                               (f"Δ {_US}", True), (_PCT_D, True)],
                        note=f"{per}, by |Δ|; Enter: the ops that launched it (n/N)",
                        drop=("category", "count A", "count B"))
    for r in deltas["kernels"]:
        kern.add((r["name"], r["kernel_category"], _n(r["count_a"]), _n(r["count_b"]),
                  *_abd(r["total_us_a"], r["total_us_b"])), f"{r['kind']} {r['name']}",
                 by_kernel.get(r["name"], _NO_ROWS))
    tables.append(kern)

    by_op = _rows_by_op_name(tree)
    ops = SummaryTable("ops", "Ops", [("name", False), ("count A", True), ("count B", True),
                                      (f"direct A {_US}", True), (f"direct B {_US}", True), (f"Δ direct {_US}", True),
                                      (_PCT_D, True), (f"subtree A {_US}", True), (f"subtree B {_US}", True)],
                       note=f"{per}, by |Δ direct|; GPU direct: its own launches, subtree: everything under it",
                       short={f"direct A {_US}": f"A {_US}", f"direct B {_US}": f"B {_US}",
                              f"Δ direct {_US}": f"Δ {_US}"},
                       drop=(f"subtree A {_US}", f"subtree B {_US}", "count A", "count B"))
    for r in deltas["top_ops"]:
        a, b = r["direct_gpu_us_a"], r["direct_gpu_us_b"]
        ops.add((r["name"], _n(r["count_a"]), _n(r["count_b"]), *_abd(a, b), r["subtree_gpu_us_a"],
                 r["subtree_gpu_us_b"]), f"op {r['name']}", by_op.get(r["name"], _NO_ROWS))
    tables.append(ops)

    launches = SummaryTable("launches", "Launches", [("class", False), ("count A", True), ("count B", True),
                                                     (f"mean delay A {_US}", True), (f"mean delay B {_US}", True),
                                                     (f"p90 delay A {_US}", True), (f"p90 delay B {_US}", True),
                                                     (f"mean call A {_US}", True), (f"mean call B {_US}", True)],
                            note=f"count {per}; delay = first GPU start - call start",
                            short={f"mean delay A {_US}": f"delay A {_US}", f"mean delay B {_US}": f"delay B {_US}",
                                   f"p90 delay A {_US}": f"A p90 {_US}", f"p90 delay B {_US}": f"B p90 {_US}",
                                   f"mean call A {_US}": f"call A {_US}", f"mean call B {_US}": f"call B {_US}"},
                            drop=(f"p90 delay A {_US}", f"p90 delay B {_US}", f"mean call A {_US}",
                                  f"mean call B {_US}"))
    for cls, v in deltas["launches"].items():
        launches.add((cls, _n(v["count"]["a"]), _n(v["count"]["b"]), v["delay_mean_us"]["a"],
                      v["delay_mean_us"]["b"], v["delay_p90_us"]["a"], v["delay_p90_us"]["b"],
                      v["call_mean_us"]["a"], v["call_mean_us"]["b"]), f"launches ({cls})", _NO_ROWS)
    tables.append(launches)

    idle = SummaryTable("idle", "Idle gaps", [("class", False), ("gaps A", True), ("gaps B", True),
                                              (f"A {_US}", True), (f"B {_US}", True), (f"Δ {_US}", True),
                                              (_PCT_D, True)],
                        note=f"{per}; gaps between the step's GPU events on each stream")
    for r in deltas["idle"]:
        idle.add((r["idle_class"], _n(r["count_a"]), _n(r["count_b"]), *_abd(r["total_us_a"], r["total_us_b"])),
                 f"idle gaps ({r['idle_class']})", _NO_ROWS)
    tables.append(idle)
    return tables
