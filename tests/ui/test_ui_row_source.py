"""The three panes draw any model, not only a trace: a second, tiny model (a findings list, the
shape the findings and diff screens will have) feeds the tree through the row-source
protocol, the detail pane through sections and the timeline through tracks.

The model is a few lines of plain Python: none of tracetui's trace classes is involved."""

from __future__ import annotations

import numpy as np
from pilot import press
from rich.text import Text
from textual.app import App, ComposeResult

from tracetui.ui.detail.detail_pane import DetailPane
from tracetui.ui.timeline.timeline_strip import TimelineStrip
from tracetui.ui.tree.virtual_tree import VirtualTree
from tracetui.ui.view.detail_section import DetailSection
from tracetui.ui.view.row_source import RowSource
from tracetui.ui.view.track import Track
from tracetui.ui.view.visible_rows import UNICODE_GLYPHS, RowStyles, VisibleRows

#: (finding, severity, evidence); node ids: findings 0..2, evidence 10 * (finding + 1) + k
FINDINGS = [("GPU idle between steps", 42.0, ["step 3: 1.2 ms", "step 4: 0.9 ms"]),
            ("Small kernels", 7.5, ["elementwise ×3,000"]),
            ("No ET link", 1.0, [])]


class Findings:
    """A findings list as a row source: a finding is a root, its evidence its children."""

    def root_nodes(self):
        return np.arange(len(FINDINGS))

    def child_nodes(self, node):
        return np.arange(len(FINDINGS[node][2])) + 10 * (node + 1) if node < 10 else np.empty(0, np.int64)

    def parent_of(self, node):
        return node // 10 - 1 if node >= 10 else -1

    def row_label(self, node):
        return Text(FINDINGS[node][0] if node < 10 else FINDINGS[node // 10 - 1][2][node % 10])

    def row_columns(self, node):
        return [f"{FINDINGS[node][1]:g}" if node < 10 else ""]

    def column_headers(self):
        return ["Score"]

    def column_widths(self):
        return [6]

    def node_weight(self, node):
        return FINDINGS[node][1] if node < 10 else 0.0

    # the detail pane's model (DetailModel)
    def sections(self, node, width):
        if node is None:
            return [DetailSection(None, [Text("Nothing selected.")])]
        name, score, evidence = FINDINGS[node]
        return [DetailSection(None, [Text(name, style="bold")]),
                DetailSection.of_rows("Why", [("Score", f"{score:g}"), ("Evidence", f"{len(evidence)} rows")])]


def test_the_findings_model_is_a_row_source_for_the_headless_row_model():
    source = Findings()
    assert isinstance(source, RowSource)  # the protocol is structural: nothing to inherit
    rows = VisibleRows(glyphs=UNICODE_GLYPHS)
    rows.reset(source)
    assert rows.nodes.tolist() == [0, 1, 2]
    rows.expand_at(0)
    assert rows.nodes.tolist() == [0, 10, 11, 1, 2] and rows.depths.tolist() == [0, 1, 1, 0, 0]
    assert rows.longest_child(0) == 10 and rows.ancestors(11) == [0]
    style = RowStyles(*([Text().style] * 5))
    assert rows.header_text("Finding", 40, style).plain.rstrip().endswith("Score")
    assert rows.row_text(0, 40, style).plain.rstrip().endswith("42")
    assert "step 4: 0.9 ms" in rows.row_text(2, 40, style).plain


class FindingsApp(App):
    def compose(self) -> ComposeResult:
        self.model = Findings()
        yield VirtualTree(self.model, label_header="Finding", id="tree")
        yield DetailPane(self.model, id="detail")
        yield TimelineStrip([Track("step 3", np.array([0.0, 2_000.0]), np.array([800.0, 2_500.0])),
                             Track("step 4", np.array([3_000.0]), np.array([3_100.0]))], id="timeline")

    def on_virtual_tree_node_highlighted(self, event: VirtualTree.NodeHighlighted) -> None:
        if event.node < 10:
            self.query_one(DetailPane).show(event.node)


async def test_the_panes_draw_the_findings_model_in_an_app():
    app = FindingsApp()
    async with app.run_test(size=(80, 30)) as pilot:
        tree = app.query_one(VirtualTree)
        tree.focus()
        await press(pilot, "enter", "down", "down", "down")
        assert tree.cursor_node == 1 and tree.visible_nodes.tolist() == [0, 10, 11, 1, 2]
        detail = app.query_one(DetailPane).text()
        assert "Small kernels" in detail and "Score 7.5" in " ".join(detail.split())
        await press(pilot, "L")  # the longest child of "Small kernels": its one evidence row
        assert tree.cursor_node == 20
        timeline = app.query_one(TimelineStrip)
        assert [t.label for t in timeline.tracks] == ["step 3", "step 4"]
        glyphs, _ = timeline.track_cells(0, 80)
        assert glyphs.count("█") > 0 and "·" in glyphs  # busy cells and the 1.2 ms idle gap between
