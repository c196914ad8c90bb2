"""The findings screen (``F``, or "Findings" in the palette): what is wrong with this run,
the findings of ``tracetui check`` (docs/findings.md) sorted by time at stake.

Top: the list (:class:`~.findings_tree.FindingsTree`): per finding its severity, rule and
verdict, the time at stake (``~``: an estimate of what fixing it would save; ``-`` not
estimated), the count and, in a job, the rank; its evidence events fold out below it
(space).  Bottom: the selected finding's verdict, time at stake and how it was estimated,
evidence, details, the rule's method and thresholds, and the fix
(:class:`~tracetui.ui.view.findings_detail.FindingsDetail`); on an evidence row, the event.

Enter on a finding closes the screen and selects its first evidence event in the tree (on
an evidence row: that event); in a job, an evidence of another rank switches to it.  Then
``n``/``N`` cycle through the evidence in the tree, as through search matches.  ``n``/``N``
here walk the selected finding's evidence rows.  Esc or ``q`` closes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label

from ...errors import one_line
from ..detail.detail_pane import DetailPane
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import only_while_shown
from ..tree.virtual_tree import VirtualTree
from ..view.findings_detail import FindingsDetail
from ..view.findings_row_source import FindingsRowSource
from .findings_tree import FindingsTree

if TYPE_CHECKING:
    from ...findings import FindingsReport, RuleConfig


def title_text(report: FindingsReport) -> Text:
    """``9 findings (1 error, 7 warning, 1 info) in <source> · ~at stake: an estimate ...``."""
    counts = report.by_severity()
    n = len(report.findings)
    text = Text(f"{n:,} finding{'s' if n != 1 else ''}", style="bold")
    text.append(" (" + ", ".join(f"{v:,} {k}" for k, v in counts.items()) + ")")
    text.append(" in ")
    text.append(one_line(report.source), style="bold")
    if report.errors:
        text.append(f" · ⚠ {len(report.errors):,} not checked (w)", style="yellow")
    text.append(" · ~at stake: an estimate of what fixing each would save", style="dim")
    return text


class FindingsScreen(Screen[tuple[int, int] | None]):
    """The findings list and the selected one's detail; dismisses with (finding index,
    evidence index; -1 for the finding's row: its first evidence in the tree) for Enter, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="findings.close"),
        Binding("n", "evidence(1)", "Next evidence", id="findings.next_evidence",
                tooltip="the selected finding's next evidence event (its rows fold out)"),
        Binding("N", "evidence(-1)", "Previous evidence", show=False, id="findings.prev_evidence"),
    ]
    DEFAULT_CSS = """
    FindingsScreen #findings-title { height: 1; width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    FindingsScreen FindingsTree { max-height: 50%; min-height: 2; }
    FindingsScreen #findings-detail { height: 1fr; border-top: solid $panel-lighten-2; }
    """

    def __init__(self, report: FindingsReport, configs: dict[str, RuleConfig] | None = None, *, kt: Any = None,
                 rank: int | None = None, event_detail: Any = None) -> None:
        super().__init__()
        self.report = report
        self.source = FindingsRowSource(report, kt, rank)
        self.model = FindingsDetail(self.source, configs, event_detail)

    def compose(self) -> ComposeResult:
        yield Label(title_text(self.report), id="findings-title")
        yield FindingsTree(self.source, label_header="Finding (Enter: evidence, n/N cycle)", id="findings-tree")
        yield DetailPane(self.model, id="findings-detail")
        yield KeyBar()

    @property
    def tree(self) -> FindingsTree:
        return self.query_one(FindingsTree)

    @property
    def detail(self) -> DetailPane:
        return self.query_one("#findings-detail", DetailPane)

    @only_while_shown
    def on_mount(self) -> None:
        tree = self.tree
        tree.focus()
        self._show(tree.cursor_node)

    def _show(self, node: int | None) -> None:
        """The detail of ``node``; before the first layout, once the pane has its width (a
        render at a guessed width would show for a frame)."""
        if self.detail.content_region.width:
            self.detail.show(node)
        else:
            self.call_after_refresh(self._show_laid_out, node)

    @only_while_shown
    def _show_laid_out(self, node: int | None) -> None:
        self.detail.show(node)

    @on(VirtualTree.NodeHighlighted)
    def _on_highlight(self, event: VirtualTree.NodeHighlighted) -> None:
        event.stop()
        self._show(event.node)

    @on(FindingsTree.Go)
    def _on_go(self, event: FindingsTree.Go) -> None:
        event.stop()
        i, k = self.source.finding_of(event.node)
        f = self.source.findings[i]
        if not f.evidence.size:
            show_note(self, f"{f.rule}: no evidence events to go to (a whole-trace measure)", severity="warning")
            return
        self.dismiss((i, k))

    def action_evidence(self, step: int) -> None:
        """``n``/``N``: the selected finding's next / previous evidence row (wrapping)."""
        tree = self.tree
        node = tree.cursor_node
        if node is None:
            return
        i, k = self.source.finding_of(node)
        n = self.source.findings[i].evidence.size
        if not n:
            show_note(self, f"{self.source.findings[i].rule}: no evidence events", severity="warning")
            return
        k = (0 if step > 0 else n - 1) if k < 0 else (k + step) % n
        tree.select_node(self.source.evidence_node(i, k))

    def action_close(self) -> None:
        self.dismiss(None)
