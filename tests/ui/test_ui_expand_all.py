"""``*`` (expand all below) at once: the rows and the expanded nodes that one numpy pass over
the source's preorder gives (``TraceRowSource.subtree_rows`` + ``VisibleRows.expand_all_at``)
are exactly those of expanding node by node breadth first (``VisibleRows.subtree_plan``), for
every root of real traces, python rows hidden or shown, within a budget of rows or not, and
with nodes expanded before (some under collapsed parents)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from shared_traces import SAMPLES, kineto_path

from tracetui.store.traces import load_cached
from tracetui.ui.view.trace_row_source import TraceRowSource
from tracetui.ui.view.visible_rows import VisibleRows


def _node_by_node(src: TraceRowSource, root: int, budget: int, marks: list[int]) -> VisibleRows | None:
    rows = VisibleRows(src)
    rows.mark_expanded(*marks)
    new = [n for n in rows.subtree_plan(root, budget) if n not in rows.expanded]
    if not new:
        return None
    row = rows.find_row(root)
    rows.mark_expanded(*new)
    rows.unmark_expanded(root)
    rows.expand_at(row)
    return rows


@pytest.mark.parametrize("path", [SAMPLES / "h100_bert_inference.json.gz",
                                  kineto_path("a100_cudagraph_nccl_rank0.json.gz")], ids=["bert", "a100_109k"])
def test_expand_all_at_once_equals_node_by_node(path):
    src = TraceRowSource(load_cached([str(path)]))
    kt = src.kt
    rng = random.Random(26)
    checked = 0
    for hide in (True, False):
        src.set_hide_python(hide)
        for root in [int(r) for r in src.root_nodes()]:
            below = kt.order.subtree(root)[1:]
            for budget in (50, 2_000, 10**7):
                for marks in ([], [int(x) for x in rng.sample(list(below[:5_000]), min(40, below.size))]):
                    slow = _node_by_node(src, root, budget, marks)
                    if slow is None:
                        continue
                    fast = VisibleRows(src)
                    fast.mark_expanded(*marks)
                    assert fast.expand_all_at(fast.find_row(root), *src.subtree_rows(root), budget)
                    assert np.array_equal(fast.nodes, slow.nodes) and np.array_equal(fast.depths, slow.depths)
                    assert fast.expanded == slow.expanded
                    checked += 1
    assert checked > 20
