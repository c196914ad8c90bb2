"""Benchmark VirtualTree and TimelineStrip on trace-sized synthetic data.

Run: ``python bench/bench_widgets.py`` (headless Textual app, 200x50 cells).
Prints one table row per measurement (milliseconds, median of repeats unless noted).

* Tree: 2,000,001 nodes: one thread root with 200,000 children, each child with 3
  children of 2 children each (9 descendants), served through a CSR RowSource.
* Timeline: 4 lanes of 1,000,000 intervals each, rendered 200 time cells wide; highlights
  as 5,000 tuples and as 1,000,000 ranges given as arrays.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Callable

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region

from tracetui.ui.timeline.timeline_strip import TimelineStrip
from tracetui.ui.tree.virtual_tree import VirtualTree
from tracetui.ui.view.track import Track

WIDTH, HEIGHT = 200, 50


class CsrTree:
    """RowSource over CSR children arrays (what a flat trace model would provide)."""

    def __init__(self, parent: np.ndarray, weight: np.ndarray) -> None:
        self.parent = parent
        self.weight = weight
        self.order = np.argsort(parent, kind="stable")
        counts = np.bincount(parent + 1, minlength=parent.size + 1)
        self.offsets = np.concatenate(([0], np.cumsum(counts)))

    def root_nodes(self):
        return self.order[self.offsets[0] : self.offsets[1]]

    def child_nodes(self, node):
        return self.order[self.offsets[node + 1] : self.offsets[node + 2]]

    def parent_of(self, node):
        return int(self.parent[node])

    def row_label(self, node):
        return Text(f"aten::op_{node % 97}[{node}]")

    def row_columns(self, node):
        return (f"{self.weight[node]:.1f}", f"{node % 7}", "1")

    def column_headers(self):
        return ("Total µs", "Self", "Calls")

    def column_widths(self):
        return (10, 6, 6)

    def node_weight(self, node):
        return float(self.weight[node])

    def child_weights(self, node):
        return self.weight[self.child_nodes(node)]


def synthetic_tree(children: int = 200_000) -> np.ndarray:
    """Parent array: node 0 is the root; node ids are in depth-first display order."""
    per_child = 10  # the child, 3 grandchildren, 6 great-grandchildren
    n = 1 + children * per_child
    parent = np.empty(n, dtype=np.int64)
    parent[0] = -1
    base = 1 + per_child * np.arange(children)
    # Layout of one child block: c, g0, gg0, gg1, g1, gg2, gg3, g2, gg4, gg5.
    rel_parent = np.array([-1, 0, 1, 1, 0, 4, 4, 0, 7, 7])
    block = base[:, None] + rel_parent[None, :]
    block[:, 0] = 0
    parent[1:] = block.ravel()
    return parent


def synthetic_lanes(lanes: int = 4, per_lane: int = 1_000_000) -> list[Track]:
    rng = np.random.default_rng(0)
    out = []
    for k in range(lanes):
        starts = np.cumsum(rng.uniform(1.0, 20.0, per_lane))
        ends = starts + rng.uniform(0.5, 10.0, per_lane)
        out.append(Track(f"stream {k}", starts, ends))
    return out


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def render_frame(widget, *, full: bool = True) -> None:
    """Render ``widget``'s visible lines the way the compositor does.

    ``full`` drops Textual's per-widget line cache first (a full repaint, as after a
    scroll); otherwise only the lines marked dirty since the last frame are rendered.
    """
    if full:
        widget._styles_cache.clear()
    widget.render_lines(Region(0, 0, widget.outer_size.width, widget.outer_size.height))


async def press_ms(pilot, app: App, presses: int = 20) -> float:
    """Median milliseconds for Pilot to deliver 'j' and the screen to re-render."""
    samples = []
    for _ in range(presses):
        started = time.perf_counter()
        await pilot.press("j")
        app.screen._compositor.render_strips()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


class BenchApp(App):
    def compose(self) -> ComposeResult:
        yield VirtualTree(id="tree")
        yield TimelineStrip(id="timeline")


async def run(children: int, per_lane: int) -> list[tuple[str, float, str]]:
    rows: list[tuple[str, float, str]] = []
    started = time.perf_counter()
    parent = synthetic_tree(children)
    weight = np.random.default_rng(1).uniform(1, 1000, parent.size)
    source = CsrTree(parent, weight)
    rows.append(("tree: build CSR source (not widget cost)", (time.perf_counter() - started) * 1e3,
                 f"{parent.size:,} nodes"))
    app = BenchApp()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        tree = app.query_one(VirtualTree)
        timeline = app.query_one(TimelineStrip)
        tree.focus()
        started = time.perf_counter()
        tree.set_source(source)
        await pilot.pause()
        app.screen._compositor.render_strips()
        rows.append(("tree: set_source + first screen render", (time.perf_counter() - started) * 1e3,
                     "includes one event-loop turn"))

        def expand_root():
            tree.expand(0)

        def collapse_root():
            tree.collapse(0)

        samples_expand, samples_collapse = [], []
        for _ in range(5):
            samples_expand.append(timed(expand_root, 1))
            samples_collapse.append(timed(collapse_root, 1))
        rows.append(("tree: expand 200k-children root", statistics.median(samples_expand),
                     f"{children:,} rows inserted"))
        rows.append(("tree: collapse 200k-children root", statistics.median(samples_collapse), ""))
        tree.expand(0)
        rows.append(("tree: full repaint (root expanded)", timed(lambda: render_frame(tree)),
                     f"{tree.size.height} lines x {tree.size.width} cells"))
        # Remember 1,000 expanded children, then re-expand the root (rebuild with nesting).
        for child in source.child_nodes(0)[::200]:
            tree.expand(int(child))
        tree.collapse(0)
        rows.append(("tree: re-expand root with 1k expanded children",
                     timed(lambda: (tree.expand(0), tree.collapse(0)), 3), "expand+collapse"))
        tree.expand(0)
        tree.action_cursor_bottom()
        last = int(source.child_nodes(0)[-1])
        rows.append(("tree: toggle last child (cursor at row ~2M)",
                     timed(lambda: tree.toggle(last), 9), f"{tree.row_count:,} visible rows"))

        def move_and_render():
            tree.action_cursor_up()
            render_frame(tree, full=False)

        tree.action_cursor_bottom()
        render_frame(tree)
        view = tree.size.height - 1
        rows.append(("tree: cursor move inside the view + repaint", timed(move_and_render, view - 2),
                     "2 dirty lines"))
        rows.append(("tree: cursor move that scrolls + repaint", timed(move_and_render, 100),
                     "all lines dirty"))
        rows.append(("tree: page down + full repaint", timed(
            lambda: (tree.action_page_up(), render_frame(tree)), 50), "direct call"))
        tree.action_cursor_top()
        await pilot.pause()
        rows.append(("tree: 'j' key round-trip via Pilot", await press_ms(pilot, app),
                     "mostly Pilot's idle wait, see next"))
        deep = int(parent.size - 1)
        started = time.perf_counter()
        expanded = tree.expand_subtree(0, max_nodes=parent.size)
        rows.append(("tree: expand_subtree(root), everything visible",
                     (time.perf_counter() - started) * 1e3, f"{expanded:,} nodes expanded, once"))
        middle = int(source.child_nodes(0)[children // 2])
        tree.select_node(middle)
        rows.append(("tree: toggle a child mid-way, 2M rows visible", timed(
            lambda: tree.toggle(middle), 9), f"{tree.row_count:,} visible rows"))
        rows.append(("tree: select_node last node, 2M rows visible", timed(
            lambda: tree.select_node(deep), 5), "row search"))
        rows.append(("tree: page up + full repaint, 2M rows", timed(
            lambda: (tree.action_page_up(), render_frame(tree)), 20), ""))
        medium = CsrTree(synthetic_tree(10_000), np.ones(100_001))
        tree.set_source(medium)
        ms = timed(lambda: (tree.collapse_all(), tree.action_expand_subtree()), 3)
        rows.append(("tree: '*' on a root of 10k x 9 (default budget)", ms,
                     f"{tree.row_count:,} rows, {len(tree.rows.expanded):,} nodes expanded"))
        tree.set_source(CsrTree(np.array([-1, 0]), np.ones(2)))
        await pilot.pause()
        rows.append(("baseline: 'j' round-trip via Pilot, 2-node tree", await press_ms(pilot, app), ""))
        tree.set_source(source)
        tree.collapse_all()
        rows.append(("tree: select_node deep (expands 3 ancestors)",
                     timed(lambda: (tree.collapse_all(), tree.select_node(deep)), 3),
                     "incl. collapse_all"))
        rows.append(("tree: L (longest child) on the root", timed(
            lambda: (tree.collapse_all(), tree.action_longest_child()), 3), "child_weights fast path"))

        lanes = synthetic_lanes(4, per_lane)
        started = time.perf_counter()
        timeline.set_tracks(lanes)
        rows.append(("timeline: set_tracks (merge runs)", (time.perf_counter() - started) * 1e3,
                     f"4 x {per_lane:,} intervals"))
        timeline.styles.width = timeline.label_width + 200
        await pilot.pause()
        cells = timeline.size.width - timeline.label_width

        def render_timeline():
            timeline._strip_cache.clear()
            render_frame(timeline)

        rows.append(("timeline: render ruler + 4 lanes, whole trace", timed(render_timeline, 9),
                     f"{cells} cells"))
        t0, t1 = timeline.extent
        timeline.zoom_to(t0 + (t1 - t0) * 0.5, t0 + (t1 - t0) * 0.5 + 20_000)
        rows.append(("timeline: render, 20 ms window", timed(render_timeline, 9), "gaps labelled"))
        timeline.set_highlights([(k % 4, s, s + 5) for k, s in enumerate(
            np.linspace(t0, t1, 5000).tolist())])
        timeline.fit_all()
        rows.append(("timeline: render with 5k highlights", timed(render_timeline, 9), "tuple form"))
        marks = np.sort(np.concatenate([lane.starts for lane in lanes[:2]]))[:1_000_000]
        mark_lanes = np.arange(marks.size) % 4
        rows.append(("timeline: set_highlights, 1M ranges (arrays)", timed(
            lambda: timeline.set_highlights(tracks=mark_lanes, starts=marks, ends=marks + 5), 3),
            "group by lane + merge"))
        rows.append(("timeline: render with 1M highlights", timed(render_timeline, 9), ""))
        rows.append(("timeline: zoom(1.25) + render", timed(
            lambda: (timeline.zoom(1.25), render_timeline()), 9), ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=200_000)
    parser.add_argument("--per-lane", type=int, default=1_000_000)
    args = parser.parse_args()
    rows = asyncio.run(run(args.children, args.per_lane))
    name_width = max(len(name) for name, _, _ in rows)
    print(f"{'measurement':<{name_width}}  {'ms':>9}  note")
    for name, ms, note in rows:
        print(f"{name:<{name_width}}  {ms:9.2f}  {note}")


if __name__ == "__main__":
    main()
