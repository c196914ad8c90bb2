"""The diff as one JSON-ready document (``tracetui diff --json``; the text report prints it),
and the ``--fail-above`` check.

Keys (times µs, ``_a``/``_b`` the two sides, ``delta`` = B - A, ``pct`` of A; docs/diff.md):
``format``, ``a``/``b`` (source, steps found and compared, template step, per-step
numbers), ``alignment`` (rows by match method, added/removed ops, shapes changed, ops of
other steps with no match in the template), ``step_time`` and ``gpu_time_per_step`` and
``gpu_events_per_step`` ({``a``, ``b``, ``delta``, ``delta_pct``}), the summary deltas
(``gpu_timeline``, ``kernel_categories``, ``kernels``, ``top_ops``, ``launches``, ``idle``:
:mod:`tracetui.diff.deltas`), ``tree`` and ``tree_host`` (rows of the merged tree with the
largest change of their own GPU time, of their own host time), ``changed_subtrees`` (the
largest added and removed subtrees), ``kernel_changes`` (ops whose kernels changed),
``by_name`` {``cpu``, ``gpu``} and ``ops`` (HTA-compatible totals over the compared steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .align import RowKind
from .compare import TraceDiff
from .deltas import hta_tables, summary_deltas
from .kernels import SAME, kernel_changes, rows_with_kernel_changes
from .model import MATCH_WORDS, DiffSide, DiffTree, Match

FORMAT = 1


def _side_doc(side: DiffSide) -> dict[str, Any]:
    st = side.steps
    return {
        "label": side.label,
        "source": side.linked.title,
        "steps_found": {"how": st.how, "annotation": st.annotation, "count": len(st.steps)},
        "steps_compared": [st.steps[k].name for k in side.used],
        "template_step": side.template_step.name,
        "per_step": [{"step": st.steps[k].name, "host_us": float(h), "gpu_us": float(g), "gpu_events": float(n)}
                     for k, h, g, n in zip(side.used, side.step_host_us, side.step_gpu_us, side.step_gpu_n)],
    }


def _change(a: float, b: float, unit: str = "_us") -> dict[str, Any]:
    return {f"a{unit}": a, f"b{unit}": b, f"delta{unit}": b - a, "delta_pct": (b - a) * 100.0 / a if a else None}


def row_doc(tree: DiffTree, row: int) -> dict[str, Any]:
    """One merged-tree row as JSON: its path of names, how it matched and each side's numbers."""
    return {
        "row": int(row),
        "path": [tree.name(r) for r in tree.path(row)],
        "method": MATCH_WORDS[Match(int(tree.method[row]))],
        "shapes_changed": bool(tree.shapes_changed[row]),
        "event_a": int(tree.ev_a[row]), "event_b": int(tree.ev_b[row]),
        "host_us_a": float(tree.host_a[row]), "host_us_b": float(tree.host_b[row]),
        "gpu_us_a": float(tree.gpu_a[row]), "gpu_us_b": float(tree.gpu_b[row]),
        "self_gpu_us_a": float(tree.self_gpu_a[row]), "self_gpu_us_b": float(tree.self_gpu_b[row]),
        "self_host_us_a": float(tree.self_host_a[row]), "self_host_us_b": float(tree.self_host_b[row]),
        "gpu_events_a": float(tree.gpu_n_a[row]), "gpu_events_b": float(tree.gpu_n_b[row]),
        "delta_gpu_us": float(tree.d_gpu[row]),
    }


def top_self_changes(tree: DiffTree, top: int, host: bool = False) -> np.ndarray:
    """Op rows by |change of their own GPU time| (``host``: own host time), largest first,
    non-zero changes only."""
    d = tree.self_host_b - tree.self_host_a if host else tree.self_gpu_b - tree.self_gpu_a
    rows = np.flatnonzero((tree.kind == int(RowKind.OP)) & (d != 0))
    return rows[np.argsort(-np.abs(d[rows]), kind="stable")][:top]


def changed_subtrees(tree: DiffTree, top: int) -> dict[str, list[dict[str, Any]]]:
    """The largest added and removed subtrees (their top rows), by GPU time."""
    out = {}
    for key, mask, gpu in (("added", tree.added, tree.gpu_b), ("removed", tree.removed, tree.gpu_a)):
        par = tree.parent
        roots = np.flatnonzero(mask & (tree.kind == int(RowKind.OP)))
        roots = roots[~mask[np.maximum(par[roots], 0)] | (par[roots] < 0)]
        roots = roots[np.argsort(-gpu[roots], kind="stable")]
        out[key] = [dict(row_doc(tree, r), ops=int(tree.size[r])) for r in roots[:top]]
        out[f"{key}_subtrees"] = int(roots.size)
    return out


def kernel_change_docs(tree: DiffTree, top: int) -> list[dict[str, Any]]:
    """Ops whose own kernels changed (names or number), by |change of their own GPU time|."""
    rows = rows_with_kernel_changes(tree)
    d = np.abs(tree.self_gpu_b - tree.self_gpu_a)[rows]
    out = []
    for r in rows[np.argsort(-d, kind="stable")][:top].tolist():
        changes = [c.as_dict() for c in kernel_changes(tree, r) if c.status != SAME]
        out.append(dict(row_doc(tree, r), kernels=changes))
    return out


def alignment_doc(tree: DiffTree) -> dict[str, Any]:
    counts = np.bincount(tree.method, minlength=len(Match))
    op = tree.kind == int(RowKind.OP)
    return {
        "rows": tree.n_rows,
        "methods": {MATCH_WORDS[m]: int(counts[int(m)]) for m in Match},
        "paired_ops": int((op & tree.in_a & tree.in_b).sum()),
        "added_ops": int((op & tree.added).sum()),
        "removed_ops": int((op & tree.removed).sum()),
        "shapes_changed": int(tree.shapes_changed.sum()),
        "unmatched_in_other_steps": {key: {"ops": s.unmatched_ops, "gpu_us": s.unmatched_gpu_us}
                                     for key, s in (("a", tree.a), ("b", tree.b))},
    }


def diff_document(d: TraceDiff, top: int = 15) -> dict[str, Any]:
    """The whole diff as one JSON-ready dict (module docstring)."""
    tree = d.tree
    doc: dict[str, Any] = {
        "format": FORMAT,
        "a": _side_doc(tree.a),
        "b": _side_doc(tree.b),
        "alignment": alignment_doc(tree),
        "step_time": _change(float(tree.host_a[0]), float(tree.host_b[0])),
        "gpu_time_per_step": _change(float(tree.gpu_a[0]), float(tree.gpu_b[0])),
        "gpu_events_per_step": _change(float(tree.gpu_n_a[0]), float(tree.gpu_n_b[0]), ""),
    }
    doc.update(summary_deltas(d, top))
    doc["tree"] = [row_doc(tree, r) for r in top_self_changes(tree, top)]
    doc["tree_host"] = [row_doc(tree, r) for r in top_self_changes(tree, top, host=True)]
    doc["changed_subtrees"] = changed_subtrees(tree, top)
    doc["kernel_changes"] = kernel_change_docs(tree, top)
    doc.update(hta_tables(d))
    return doc
