"""VirtualTree over synthetic flat-array trees, driven through Textual's Pilot at 80x24,
and its row model (VisibleRows) directly, without an app."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult

from tracetui.ui.tree.virtual_tree import MIN_LABEL_CELLS, VirtualTree, VisibleRows
from tracetui.ui.view.visible_rows import (
    ASCII_GLYPHS,
    RowStyles,
    clean_label,
    fit_right,
    scan_down,
    scan_up,
)


class ArraySource:
    """A RowSource over a parent array (children in id order), like the trace model's."""

    def __init__(self, parent, names=None, weights=None, widths=(9, 9, 6)):
        self.parent = np.asarray(parent, dtype=np.int64)
        n = len(self.parent)
        self.order = np.argsort(self.parent, kind="stable")
        counts = np.bincount(self.parent + 1, minlength=n + 1)
        self.offsets = np.concatenate(([0], np.cumsum(counts)))
        self.names = names
        self.weights = np.asarray(weights, dtype=float) if weights is not None else np.ones(n)
        self.widths = list(widths)
        self.label_calls = 0

    def root_nodes(self):
        return self.order[self.offsets[0] : self.offsets[1]]

    def child_nodes(self, node):
        return self.order[self.offsets[node + 1] : self.offsets[node + 2]]

    def parent_of(self, node):
        return int(self.parent[node])

    def row_label(self, node):
        self.label_calls += 1
        return Text(self.names[node] if self.names is not None else f"node{node}", style="green")

    def row_columns(self, node):
        return [f"{self.weights[node]:.1f}", f"#{node}", "c"][: len(self.widths)]

    def column_headers(self):
        return ["Total", "Id", "Calls"][: len(self.widths)]

    def column_widths(self):
        return self.widths

    def node_weight(self, node):
        return float(self.weights[node])


class TreeApp(App):
    def __init__(self, source):
        super().__init__()
        self.source = source
        self.highlighted: list[int] = []

    def compose(self) -> ComposeResult:
        yield VirtualTree(self.source, id="tree")

    def on_virtual_tree_node_highlighted(self, message: VirtualTree.NodeHighlighted) -> None:
        self.highlighted.append(message.node)


def screen_lines(app: App) -> list[str]:
    """The whole screen as plain text lines (what the terminal would show)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


# 0 root; 1,2,3 children of 0; 4,5,6 children of 1; 7 child of 4; 8 second root.
SMALL_PARENT = [-1, 0, 0, 0, 1, 1, 1, 4, -1]
SMALL_NAMES = [
    "root",
    "aten::index_put_[bool mask]",
    "[/tmp]",
    "[bold]not bold[/bold]",
    "a",
    "b",
    "c" * 100,
    "deep",
    "root2",
]
SMALL_WEIGHTS = [100, 10, 50, 5, 1, 7, 3, 1, 2]


def small_source() -> ArraySource:
    return ArraySource(SMALL_PARENT, SMALL_NAMES, SMALL_WEIGHTS)


def wide_source(children: int) -> ArraySource:
    """Node 0 is a root with ``children`` leaf children (a thread root)."""
    return ArraySource(np.concatenate(([-1], np.zeros(children, dtype=np.int64))))


async def test_renders_header_rows_and_markup_looking_labels_verbatim():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("l", "j", "l")
        await pilot.pause()
        lines = screen_lines(app)
        assert lines[0].startswith("Name")
        assert lines[0].rstrip().endswith("Total        Id  Calls")
        assert lines[1].startswith("▾ root")
        assert lines[2].startswith("├─▾ aten::index_put_[bool mask]")
        assert lines[3].startswith("│ ├─▸ a")
        assert lines[4].startswith("│ ├── b")
        assert lines[5].startswith("│ └── ccc") and "…" in lines[5]
        assert lines[6].startswith("├── [/tmp]")
        assert lines[7].startswith("└── [bold]not bold[/bold]")
        assert lines[8].startswith("  root2")
        assert lines[2].rstrip().endswith("10.0        #1      c")
        assert all(len(line) == 80 for line in lines)


async def test_control_characters_in_labels_do_not_break_rows():
    names = ["line\nbreak\ttab\x1b[31mred", "x"]
    app = TreeApp(ArraySource([-1, -1], names))
    async with app.run_test(size=(80, 24)):
        lines = screen_lines(app)
        assert lines[1].startswith("  line\\nbreak\\ttab\\x1b[31mred")  # shown escaped, on one row
        assert lines[2].startswith("  x")


async def test_cursor_movement_keys_and_highlight_messages():
    parent = np.full(100, -1)
    app = TreeApp(ArraySource(parent))
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        assert tree.cursor_node == 0
        await pilot.press("j", "j", "down")
        assert tree.cursor_node == 3
        await pilot.press("k", "up")
        assert tree.cursor_node == 1
        await pilot.press("G")
        assert tree.cursor_node == 99
        assert tree.scroll_offset.y == 100 - 23  # header + 23 rows at 80x24
        await pilot.press("g")
        assert tree.cursor_node == 0 and tree.scroll_offset.y == 0
        await pilot.press("pagedown")
        assert tree.cursor_node == 23
        await pilot.press("ctrl+u")
        assert tree.cursor_node == 12
        await pilot.press("end", "home")
        assert tree.cursor_node == 0
        await pilot.press("k")  # stays at the top
        assert tree.cursor_node == 0
        await pilot.pause()
        assert app.highlighted[:3] == [0, 1, 2]
        assert app.highlighted[-1] == 0


async def test_expand_collapse_and_navigation_keys():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        await pilot.press("enter")
        assert list(tree.visible_nodes) == [0, 1, 2, 3, 8]
        await pilot.press("l")  # already expanded: go to first child
        assert tree.cursor_node == 1
        await pilot.press("space")
        assert list(tree.visible_nodes) == [0, 1, 4, 5, 6, 2, 3, 8]
        assert list(tree.visible_depths) == [0, 1, 2, 2, 2, 1, 1, 0]
        await pilot.press("J")  # next sibling skips 1's subtree
        assert tree.cursor_node == 2
        await pilot.press("K", "K")  # previous sibling; none before 1
        assert tree.cursor_node == 1
        await pilot.press("l", "J", "J")
        assert tree.cursor_node == 6
        await pilot.press("J")  # no next sibling
        assert tree.cursor_node == 6
        await pilot.press("p")
        assert tree.cursor_node == 1
        await pilot.press("j", "h")  # leaf: h goes to parent
        assert tree.cursor_node == 1
        await pilot.press("h")  # expanded: h collapses
        assert list(tree.visible_nodes) == [0, 1, 2, 3, 8]
        await pilot.press("left")  # collapsed: to parent
        assert tree.cursor_node == 0
        await pilot.press("left")  # collapses root
        assert list(tree.visible_nodes) == [0, 8]
        await pilot.press("left")  # collapsed root: nothing above
        assert tree.cursor_node == 0


async def test_collapsing_an_ancestor_moves_cursor_to_it_and_keeps_inner_expansion():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        assert tree.select_node(7)
        assert tree.cursor_node == 7
        assert list(tree.visible_nodes) == [0, 1, 4, 7, 5, 6, 2, 3, 8]
        tree.collapse(1)
        assert tree.cursor_node == 1
        assert list(tree.visible_nodes) == [0, 1, 2, 3, 8]
        tree.expand(1)  # 4 is still expanded inside
        assert list(tree.visible_nodes) == [0, 1, 4, 7, 5, 6, 2, 3, 8]
        await pilot.pause()
        assert app.highlighted[-2:] == [7, 1]


async def test_longest_child_key_expands_and_follows_the_heaviest_child():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        await pilot.press("L")
        assert tree.cursor_node == 2  # weights of 1, 2, 3 are 10, 50, 5
        await pilot.press("p", "j", "L")
        assert tree.cursor_node == 5  # children of 1 weigh 1, 7, 3
        await pilot.press("L")  # leaf: nothing happens
        assert tree.cursor_node == 5


async def test_expand_subtree_and_collapse_all_keys():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        await pilot.press("asterisk")
        assert list(tree.visible_nodes) == [0, 1, 4, 7, 5, 6, 2, 3, 8]
        await pilot.press("j", "j", "j")
        assert tree.cursor_node == 7
        await pilot.press("minus")
        assert list(tree.visible_nodes) == [0, 8]
        assert tree.cursor_node == 0
        # A budget too small for the grandchildren expands only the first level.
        assert tree.expand_subtree(0, max_nodes=4) == 1
        assert list(tree.visible_nodes) == [0, 1, 2, 3, 8]


@pytest.mark.slow
async def test_select_node_expands_ancestors_and_centres_far_rows():
    # Roots 0..99 with 10 children each (ids 100 + 10 * r + k).
    parent = np.concatenate((np.full(100, -1), np.repeat(np.arange(100), 10)))
    app = TreeApp(ArraySource(parent))
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        target = 100 + 10 * 80 + 3  # fourth child of root 80
        assert tree.select_node(target)
        assert tree.is_expanded(80) and tree.cursor_node == target
        row = tree.row_of(target)
        assert row == 80 + 1 + 3
        await pilot.pause()
        top = tree.scroll_offset.y
        assert row - top == 23 // 2  # far away: centred in the 23 tree rows
        lines = screen_lines(app)
        assert lines[1 + row - top].startswith(f"├── node{target}")
        # Less than a page below the view: minimal scroll, row lands on the last line.
        near = 86  # a root: row 96, one below the last visible row (95)
        assert tree.select_node(near, expand_ancestors=False)
        assert tree.row_of(near) - tree.scroll_offset.y == 22
        assert tree.select_node(100 + 10 * 81, expand_ancestors=False) is False  # hidden
        assert tree.cursor_node == near
        tree.action_cursor_top()
        await pilot.press(*["j"] * 25)
        assert tree.scroll_offset.y == 25 - 22


async def test_hundred_thousand_children_toggle_without_widgets():
    app = TreeApp(wide_source(100_000))
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        widgets_before = len(list(app.screen.walk_children()))
        started = time.process_time()
        await pilot.press("enter")
        expand_s = time.process_time() - started
        assert tree.row_count == 100_001
        assert tree.virtual_size.height == 100_002
        await pilot.press("G")
        assert tree.cursor_node == 100_000
        lines = screen_lines(app)
        assert lines[-1].startswith("└── node100000")
        started = time.process_time()
        tree.collapse(0)
        collapse_s = time.process_time() - started
        assert tree.row_count == 1 and tree.cursor_node == 0
        assert len(list(app.screen.walk_children())) == widgets_before
        assert app.source.label_calls < 200  # only on-screen rows were ever rendered
        assert expand_s < 1.0 and collapse_s < 0.1


async def test_narrow_terminal_drops_columns_but_keeps_the_label():
    app = TreeApp(small_source())
    async with app.run_test(size=(40, 10)) as pilot:
        tree = app.query_one(VirtualTree)
        await pilot.press("enter")
        lines = screen_lines(app)
        assert lines[0].rstrip() == "Name" + " " * (40 - 4 - 10) + "     Total"
        assert lines[2] == "├─▸ aten::index_put_[bool mas…      10.0"
        await pilot.resize_terminal(30, 10)
        await pilot.pause()
        lines = screen_lines(app)
        assert lines[0].rstrip() == "Name"
        assert lines[2] == "├─▸ aten::index_put_[bool mas…"
        assert tree.scrollable_content_region.width < MIN_LABEL_CELLS + 10


async def test_deep_trees_compress_guides_so_the_label_stays_readable():
    depth = 60
    parent = np.arange(-1, depth, dtype=np.int64)  # a chain: node k's parent is k - 1
    names = [f"level{k}" for k in range(depth + 1)]
    app = TreeApp(ArraySource(parent, names))
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        assert tree.select_node(depth)
        await pilot.pause()
        line = next(line for line in screen_lines(app) if f"level{depth}" in line)
        assert line.startswith(f"{depth}›")
        assert line.index(f"level{depth}") < 80 - 27 - 10


def test_bindings_have_ids_and_descriptions_and_avoid_app_keys():
    reserved = {"slash", "n", "N", "greater_than_sign", "less_than_sign", "question_mark", "q",
                "e", "t", "z", "Z", "left_square_bracket", "right_square_bracket", "f", "ctrl+p"}
    ids = set()
    for binding in VirtualTree.BINDINGS:
        assert binding.id and binding.id.startswith("vtree.") and binding.description
        ids.add(binding.id)
        assert not set(binding.key.split(",")) & reserved
    assert len(ids) == len(VirtualTree.BINDINGS)


@pytest.mark.parametrize("ascii_guides", [False, True])
async def test_ascii_guides_option(ascii_guides):
    class AsciiApp(TreeApp):
        def compose(self) -> ComposeResult:
            yield VirtualTree(self.source, ascii_guides=ascii_guides)

    app = AsciiApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        lines = screen_lines(app)
        expected = "|-+ aten::index_put_" if ascii_guides else "├─▸ aten::index_put_"
        assert lines[2].startswith(expected)


async def test_refresh_rows_rereads_source_keeping_expansion_and_cursor():
    source = small_source()
    app = TreeApp(source)
    async with app.run_test(size=(80, 24)):
        tree = app.query_one(VirtualTree)
        tree.select_node(5)
        source.names = [name.upper() for name in SMALL_NAMES]
        tree.refresh_rows()
        assert tree.cursor_node == 5
        assert list(tree.visible_nodes) == [0, 1, 4, 5, 6, 2, 3, 8]
        lines = screen_lines(app)
        assert lines[4].startswith("│ ├── B")


async def test_empty_source():
    app = TreeApp(ArraySource(np.empty(0, dtype=np.int64)))
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        await pilot.press("j", "enter", "L", "J", "p", "asterisk", "minus", "G")
        assert tree.cursor_node is None and tree.row_count == 0
        assert screen_lines(app)[0].startswith("Name")


async def test_cursor_row_is_styled_and_mouse_clicks_move_and_toggle():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)) as pilot:
        tree = app.query_one(VirtualTree)
        cursor_bg = tree.get_component_rich_style("vtree--cursor").bgcolor
        assert cursor_bg is not None
        assert {seg.style.bgcolor for seg in tree.render_line(1) if seg.text.strip()} == {cursor_bg}
        assert cursor_bg not in {seg.style.bgcolor for seg in tree.render_line(2)}
        await pilot.click(VirtualTree, offset=(10, 2))  # screen line 2 = row 1 (root2)
        assert tree.cursor_node == 8
        await pilot.click(VirtualTree, offset=(10, 1), times=2)  # double click toggles root
        assert tree.cursor_node == 0 and tree.is_expanded(0)
        await pilot.click(VirtualTree, offset=(10, 0))  # header: nothing
        assert tree.cursor_node == 0
        await pilot.press("ctrl+d")
        assert tree.cursor_node == 8  # half of 23 rows, clamped to the last row (root2)


async def test_expand_subtree_keeps_the_cursor_on_its_node():
    app = TreeApp(small_source())
    async with app.run_test(size=(80, 24)):
        tree = app.query_one(VirtualTree)
        tree.select_node(2)
        assert list(tree.visible_nodes) == [0, 1, 2, 3, 8]
        assert tree.expand_subtree(0) == 2  # 1 and 4 (0 was already expanded)
        assert list(tree.visible_nodes) == [0, 1, 4, 7, 5, 6, 2, 3, 8]
        assert tree.cursor_node == 2
        assert tree.expand_subtree(0) == 0


async def test_expand_subtree_always_expands_the_node_itself():
    app = TreeApp(wide_source(1000))
    async with app.run_test(size=(80, 24)):
        tree = app.query_one(VirtualTree)
        assert tree.expand_subtree(0, max_nodes=10) == 1
        assert tree.row_count == 1001
        assert tree.expand_subtree(5) == 0  # a leaf


# ------------------------------------------------------------- VisibleRows, no app


def visible_by_recursion(source, expanded) -> tuple[list[int], list[int]]:
    """Reference: depth-first walk of the roots, descending into expanded nodes."""
    nodes, depths = [], []

    def walk(kids, depth):
        for kid in kids.tolist():
            nodes.append(kid)
            depths.append(depth)
            if kid in expanded:
                walk(source.child_nodes(kid), depth + 1)

    walk(source.root_nodes(), 0)
    return nodes, depths


def test_rows_expand_collapse_keep_the_cursor_and_remember_expansion():
    rows = VisibleRows(small_source())
    assert rows.nodes.tolist() == [0, 8] and rows.depths.tolist() == [0, 0]
    assert rows.cursor_node == 0
    rows.cursor = 1  # on root2 (node 8), below the rows about to be inserted
    assert rows.expand_at(0)
    assert rows.nodes.tolist() == [0, 1, 2, 3, 8] and rows.depths.tolist() == [0, 1, 1, 1, 0]
    assert rows.cursor_node == 8 and rows.cursor == 4
    assert rows.expand_at(1)
    assert rows.nodes.tolist() == [0, 1, 4, 5, 6, 2, 3, 8]
    rows.mark_expanded(4)  # 4 is visible but its rows are only built on the next rebuild
    rows.cursor = rows.find_row(5)
    assert rows.subtree_end(1) == 5 and rows.parent_row(rows.cursor) == 1
    assert rows.sibling_row(rows.cursor, 1) == 4 and rows.sibling_row(rows.cursor, -1) == 2
    assert rows.sibling_row(4, 1) == -1 and rows.parent_row(0) == -1
    # Collapsing the root removes the run holding the cursor: the cursor goes to the root.
    assert rows.collapse_at(0)
    assert rows.nodes.tolist() == [0, 8] and rows.cursor_node == 0
    assert rows.expanded == {1, 4}
    # Re-expanding rebuilds the remembered nesting (1 and 4 expanded) in one block.
    rows.expand_at(0)
    assert rows.nodes.tolist() == [0, 1, 4, 7, 5, 6, 2, 3, 8]
    assert rows.depths.tolist() == [0, 1, 2, 3, 2, 2, 1, 1, 0]
    assert (rows.nodes.tolist(), rows.depths.tolist()) == visible_by_recursion(rows.source, rows.expanded)
    # A no-op splice changes nothing; collapse_all lands on the root of the cursor node.
    assert not rows.splice(3, 3, np.empty(0, np.int64), np.empty(0, np.int32))
    rows.cursor = rows.find_row(7)
    rows.collapse_all()
    assert rows.nodes.tolist() == [0, 8] and rows.cursor_node == 0 and not rows.expanded


def test_rows_rebuild_matches_a_recursive_walk_on_random_trees():
    rng = np.random.default_rng(3)
    widest = 0
    for trial in range(24):
        n = int(rng.integers(2, 3000))
        k = np.arange(1, n)
        span = np.minimum(k, [3, 10, 200, 4000][trial % 4])
        if trial % 2:  # wide: parents among the first few nodes (hundreds of children)
            parent = rng.integers(0, span)
        else:  # deep: parents among the last few nodes (long chains)
            parent = k - 1 - rng.integers(0, span)
        parent = np.concatenate(([-1], np.where(rng.random(n - 1) < 0.01, -1, parent)))
        source = ArraySource(parent)
        rows = VisibleRows(source)
        counts = np.bincount(parent[parent >= 0], minlength=n)
        widest = max(widest, int(counts.max()))
        has_kids = np.flatnonzero(counts)
        expanded = set(has_kids[rng.random(has_kids.size) < 0.7].tolist())
        rows.mark_expanded(*expanded)
        rows.rebuild()
        assert (rows.nodes.tolist(), rows.depths.tolist()) == visible_by_recursion(source, expanded)
        # Collapsing then expanding any visible expanded node gives the same rows back.
        before = rows.nodes.copy()
        for node in list(expanded)[:5]:
            row = rows.find_row(node)
            if row >= 0:
                rows.collapse_at(row)
                rows.expand_at(row)
        assert rows.nodes.tolist() == before.tolist()
    assert widest > 64


def test_scans_cross_chunk_boundaries():
    rng = np.random.default_rng(5)
    depths = rng.integers(2, 6, 5000).astype(np.int32)
    depths[[0, 700, 4321]] = 0
    for start in (0, 1, 255, 256, 701, 4000, 4999):
        expect = next((i for i in range(start, depths.size) if depths[i] <= 1), depths.size)
        assert scan_down(depths, start, 1) == expect
        expect = next((i for i in range(start, -1, -1) if depths[i] <= 1), -1)
        assert scan_up(depths, start, 1) == expect


def test_rows_longest_child_plan_and_text():
    source = small_source()
    rows = VisibleRows(source, glyphs=ASCII_GLYPHS)
    assert rows.longest_child(0) == 2 and rows.longest_child(1) == 5 and rows.longest_child(8) is None
    source.child_weights = lambda node: -source.weights[source.child_nodes(node)]
    assert rows.longest_child(0) == 3  # the vectorised shortcut wins when offered
    assert rows.subtree_plan(0, 100) == [0, 1, 4] and rows.subtree_plan(0, 4) == [0]
    assert rows.subtree_plan(7, 100) == [] and rows.ancestors(7) == [4, 1, 0]
    rows.mark_expanded(0, 1, 4)
    rows.rebuild()
    plain = RowStyles(*[Style()] * 5)
    assert rows.header_text("Name", 60, plain.header).plain == f"{'Name':<33} {'Total':>9} {'Id':>9} {'Calls':>6}"
    assert rows.row_text(rows.find_row(7), 60, plain).plain == (
        f"{'| | `-  deep':<33} {'1.0':>9} {'#7':>9} {'c':>6}")
    assert rows.row_text(rows.find_row(3), 60, plain).plain.startswith("`-  [bold]not bold[/bold]")
    assert rows.row_text(0, 40, plain).plain == f"{'- root':<30} {'100.0':>9}"  # columns dropped
    label = Text("a\tb\nc\x1b[6n", style="red", spans=[])
    label.stylize("bold", 2, 3)  # the "b"
    clean = clean_label(label)
    assert clean.plain == "a\\tb\\nc\\x1b[6n" and clean is not label and label.plain == "a\tb\nc\x1b[6n"
    assert [clean.plain[s.start:s.end] for s in clean.spans] == ["b"]  # styles stay on their characters
    assert clean_label("[x]\x7f").plain == "[x]\\x7f"
    assert fit_right("12", 4) == "  12" and fit_right("123456", 4) == "123…"
