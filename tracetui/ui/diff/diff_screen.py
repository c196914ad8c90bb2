"""The diff browser (``tracetui diff A B``, docs/diff.md): the merged tree of two runs left, the
detail of a row right (below it when narrow), both runs' streams over the aligned step at the
bottom, and a status line saying what is compared, which steps and how the ops matched.

Keys (:data:`~tracetui.ui.bindings.DIFF_BINDINGS`): ``o`` children by |Δ GPU time|, ``f`` only
the regressions, ``a`` / ``b`` each side's event detail in the pane, ``A`` / ``B`` the same op
in the single-trace browser of A or B (``D`` there comes back), ``s`` the summary deltas, ``/``
search the names of both sides (``n`` / ``N``), the timeline's zoom keys of the main screen.
The panes are the single-trace browser's, fed by the diff's models
(:mod:`tracetui.ui.view.diff_row_source`, :mod:`~tracetui.ui.view.diff_detail`,
:mod:`~tracetui.ui.view.diff_tracks`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container

from ...errors import one_line
from ...names import shown
from ..bindings import DIFF_BINDINGS
from ..browser.panes_screen import PanesScreen
from ..browser.search_bar import SearchBar
from ..browser.status_line import StatusLine
from ..browser.warnings_screen import WarningsScreen
from ..detail.detail_pane import DetailPane
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import show_when_computed
from ..summaries.summaries_screen import SummariesScreen
from ..timeline.timeline_strip import TimelineStrip
from ..tree.virtual_tree import VirtualTree
from ..view.diff_session import DiffSession
from ..view.diff_status import diff_status_parts
from ..view.diff_tables import diff_tables
from .diff_side_screen import DiffSideScreen


class DiffScreen(PanesScreen):
    """The merged tree, the detail of a row and both runs' streams (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = DIFF_BINDINGS

    def __init__(self, session: DiffSession) -> None:
        super().__init__()
        self.session = session
        self.source = session.source
        self.tree_model = session.diff.tree
        self.detail_model = session.detail
        #: each side's critical path found with P in its browser ("a"/"b" -> PathState)
        self.side_paths: dict[str, object] = {}
        #: the search the matches are of (None: no search, or a summary row's rows): counted again
        #: when the regressions filter changes which rows are shown
        self.searched: str | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="body"):
            yield VirtualTree(self.source, label_header="Op (A ↔ B)", id="tree")
            yield DetailPane(self.detail_model, id="detail")
        yield SearchBar(placeholder="search the names of A and B: text, or /regex/   Enter: go   Esc: cancel",
                        id="search")
        yield TimelineStrip(label_width=12, id="timeline")
        yield KeyBar()

    @property
    def timeline(self) -> TimelineStrip:
        return self.query_one("#timeline", TimelineStrip)

    def on_mount(self) -> None:
        tree = self.op_tree
        tree.focus()
        if self.tree_model.n_rows:
            tree.expand(0)
        tracks = self.session.tracks
        timeline = self.timeline
        timeline.set_tracks(tracks.tracks, origin_us=0.0)
        timeline.display = bool(tracks.tracks)
        self.update_status()

    # ------------------------------------------------------------------ status
    def status_parts(self) -> list:
        src = self.source
        return diff_status_parts(self.tree_model, sorted_by_delta=src.sorted,
                                 regressions=src.n_regressions if src.regressions_only else None,
                                 query=self.query_text, n_matches=int(self.matches.size),
                                 n_warnings=len(self.session.warnings()))

    # ------------------------------------------------------------------ selection
    def sync_panes(self, row: int | None, note: Text | None) -> None:
        self.detail.show(row, note)
        if row is None or not self.timeline.display:
            return
        tracks, starts, ends = self.session.tracks.highlights(self.tree_model, row)
        self.timeline.set_highlights(tracks=tracks, starts=starts, ends=ends)
        if starts.size:
            self.timeline.follow(float(starts.min()), float(ends.max()))

    def select(self, row: int, note: Text | None = None) -> bool:
        """Move the cursor to ``row`` (expanding its ancestors; turning the regressions filter
        off when it hides the row)."""
        if not self.source.is_shown(row):
            self._set_regressions(False)
        tree = self.op_tree
        if note is not None:
            self._notes[row] = note
        if tree.cursor_node == row:
            self.current = row
            self._sync_panes()
            return True
        ok = tree.select_node(row)
        if not ok:
            self._notes.pop(row, None)
        return ok

    # ------------------------------------------------------------------ views
    def action_sort(self) -> None:
        """``o``: siblings by |Δ GPU time| (largest first) / back to time order."""
        self.source.set_sorted(not self.source.sorted)  # the status line says "sorted by |ΔGPU|"
        self._refresh_tree()

    def action_regressions(self) -> None:
        """``f``: only the rows whose GPU time grew, with the path to them / every row."""
        self._set_regressions(not self.source.regressions_only)
        if self.source.regressions_only:
            n = self.source.n_regressions
            show_note(self, f"{n:,} ops whose GPU time grew (and the path to them)" if n else
                      "no op's GPU time grew", severity="information" if n else "warning")

    def _set_regressions(self, on_: bool) -> None:
        self.source.set_regressions_only(on_)
        if self.current is not None and not self.source.is_shown(self.current):
            self.current = self.source.visible_ancestor(self.current)
        if self.searched is not None:  # the search's count follows the rows shown
            self._set_matches(self.searched, self.source.find(self.searched)[0])
        self._refresh_tree()

    def key_applies(self, action: str) -> bool:
        """The panes' keys (``n``/``N`` with matches, the timeline's while it shows) and ``w``
        with warnings: the key bar and help leave out the others."""
        if action == "warnings":
            return bool(self.session.warnings())
        return super().key_applies(action)

    def _refresh_tree(self) -> None:
        current = self.current
        tree = self.op_tree
        tree.refresh_rows()
        if current is not None and tree.cursor_node != current:
            tree.select_node(current)
        self.update_status()

    def action_detail_side(self, which: str) -> None:
        """``a`` / ``b``: that side's event detail under the comparison; again: the comparison alone."""
        model = self.detail_model
        model.side = None if model.side == which else which
        self.detail.show(self.current)

    def action_warnings(self) -> None:
        self.app.push_screen(WarningsScreen(self.session.warnings()))

    # ------------------------------------------------------------------ timeline
    def action_zoom(self, factor: float) -> None:
        self.timeline.zoom(float(factor))

    def action_zoom_selection(self) -> None:
        if self.current is None:
            return
        _, starts, ends = self.session.tracks.highlights(self.tree_model, self.current)
        if not starts.size:
            show_note(self, "the selected row has no GPU event in the timeline", severity="warning")
            return
        self.timeline.zoom_to(float(starts.min()), float(ends.max()))

    # ------------------------------------------------------------------ the sides' browsers
    def side_event(self, which: str, row: int) -> tuple[int, int]:
        """(row, event): ``row`` or its nearest ancestor that side ``which`` has, and its event
        there (-1 when even the step row has none: a side without steps)."""
        t = self.tree_model
        has = t.in_a if which == "a" else t.in_b
        while row > 0 and not has[row]:
            row = int(t.parent[row])
        return row, t.event(row, which)

    def action_open_side(self, which: str, row: int | None = None, replace: bool = False) -> None:
        """``A`` / ``B``: the selected op in the single-trace browser of A or B."""
        row = self.current if row is None else row
        if row is None:
            return
        at, ev = self.side_event(which, row)
        linked, source, detail = self.session.sides[which]
        t = self.tree_model
        if ev < 0:
            note = None
        else:
            label = t.side(which).label
            note = Text(f"{which.upper()}{f' ({label})' if label != which.upper() else ''}: ", style="bold")
            note.append(one_line(shown(t.name(at))), style="cyan")
            if at != row:
                note.append(f"  (the row is only in {'B' if which == 'a' else 'A'}: its parent here)", style="yellow")
            note.append("   (D: back to the diff)", style="dim")
        screen = DiffSideScreen(self, which, linked, source, detail,
                                initial_select=(source.visible_ancestor(ev), note) if ev >= 0 else None)
        if replace:
            self.app.switch_screen(screen)
        else:
            self.app.push_screen(screen)

    # ------------------------------------------------------------------ summary deltas
    def action_summary_deltas(self) -> None:
        """``s``: the summary deltas (computed in a worker), Enter there goes to the tree's rows."""
        t, diff = self.tree_model, self.session.diff
        title = Text.assemble(("Summary deltas", "bold"), f" · {one_line(t.a.label)} ↔ {one_line(t.b.label)} · "
                              "Enter: the ops in the merged tree, n/N cycle them")
        show_when_computed(self, lambda: diff_tables(diff),
                           lambda tables: self.app.push_screen(SummariesScreen(title, tables), self.show_rows),
                           "summaries")

    def show_rows(self, result: tuple | None) -> None:
        """Make ``rows`` of ``result`` = (rows, label, span) the match list (``n`` / ``N`` cycle
        them) and select the first."""
        if result is None or not self.is_attached:
            return
        rows, label, *_ = result
        self.op_tree.focus()
        self.searched = None
        self._set_matches(label, rows)
        if self.matches.size:
            note = Text(f"{label}: row 1 of {self.matches.size:,}   (n next, N previous)", style="bold")
            self.call_after_refresh(self.select, int(self.matches[0]), note)

    # ------------------------------------------------------------------ search
    def _set_matches(self, label: str, rows: np.ndarray) -> None:
        src = self.source
        positions = np.array([src.tree_position(int(r)) for r in rows.tolist()], dtype=np.float64)
        order = np.argsort(positions, kind="stable")
        self.query_text = label
        self.matches, self.match_positions = rows[order], positions[order]
        self.update_status()

    def run_search(self, query: str, *, select: bool = True) -> None:
        try:
            rows, _ = self.source.find(query)
        except ValueError as exc:
            show_note(self, str(exc), severity="error")
            return
        self.searched = query
        self._set_matches(query, rows)
        if not rows.size:
            hidden = self.source.hidden_matches(query)
            show_note(self, f"no match for {query!r} among the regressions; {hidden:,} in every row (f shows them)"
                      if hidden else f"no match for {query!r}", severity="warning")
        elif select:
            self._goto_match(0, inclusive=True)

    def action_clear(self) -> None:
        self.searched = None
        if self.query_text is not None:
            self.query_text = None
            self.matches = np.empty(0, dtype=np.int64)
            self.match_positions = np.empty(0)
            self.update_status()
        self.detail.clear_note()
