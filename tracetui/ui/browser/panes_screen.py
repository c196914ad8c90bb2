"""What the browser screens share: a status line, a tree (``#tree``), a detail pane
(``#detail``), a timeline (``#timeline``) and the ``/`` search bar (``#search``).

:class:`PanesScreen` keeps the selection (``current``), lets the detail and the timeline follow
the tree once the queued keys are handled (holding a key down renders the panes for the row the
cursor stops on, not for every row), and runs the search: ``/`` opens the bar, Enter runs
:meth:`PanesScreen.run_search`, ``n`` / ``N`` visit the matches in tree order from the cursor
(or longest first, or in time order: :class:`~tracetui.ui.view.match_list.MatchList`).
The single-trace browser (:class:`~.main_screen.MainScreen`) and the diff browser
(:class:`~tracetui.ui.diff.diff_screen.DiffScreen`) fill in what their rows are:
:meth:`~PanesScreen.status_parts`, :meth:`~PanesScreen.sync_panes`, ``select`` and the source's
``tree_position``.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual import on
from textual.screen import Screen
from textual.widgets import Input

from ..detail.detail_pane import DetailPane
from ..notify import show_note
from ..tree.virtual_tree import VirtualTree
from ..view.match_list import MatchList
from .search_bar import SearchBar
from .status_line import StatusLine


class PanesScreen(Screen):
    """A browser screen's selection, status line and search (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.current: int | None = None
        self.query_text: str | None = None
        self.matches = np.empty(0, dtype=np.int64)
        self.match_positions = np.empty(0)
        #: the order n/N follow over ``matches`` (built by :meth:`set_matches`, else from the fields)
        self.match_list: MatchList | None = None
        self._notes: dict[int, Text] = {}  #: node -> the note the detail pane shows with it once
        self._sync_pending = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No action runs on a browser whose widgets are not there: before its first mount (a key
        routed while the screen is being pushed) or while it is removed (keys typed ahead of a
        quit); Textual would raise NoMatches looking them up."""
        if not self.is_mounted or not self.is_attached or getattr(self.app, "exiting", False):
            return False
        return super().check_action(action, parameters)

    @property
    def op_tree(self) -> VirtualTree:
        return self.query_one("#tree", VirtualTree)

    @property
    def detail(self) -> DetailPane:
        return self.query_one("#detail", DetailPane)

    # ------------------------------------------------------------------ status
    def status_parts(self) -> list:
        """The status line's parts (:mod:`~tracetui.ui.view.status_parts`)."""
        raise NotImplementedError

    def status_text(self) -> Text:
        """The status line as drawn: fitted to one line of the status widget's width."""
        return self.query_one("#status", StatusLine).fitted()

    def update_status(self) -> None:
        """Give the status line the current parts; it fits them (again on every resize).

        A no-op while the screen has no status line: a worker (search, query, findings) can end
        while the screen is being composed or torn down (the app quitting, a rank switch); the
        screen's own mount draws the status.  Found by the monkey walk on Textual 8.0:
        NoMatches('#status') from a worker's callback."""
        status = next(iter(self.query("#status").results(StatusLine)), None)
        if status is not None:
            status.set_parts(self.status_parts())
            self.refresh_bindings()  # the key bar and help follow the state (key_applies)

    #: the timeline's keys (pane_bindings): they do something only while the timeline shows
    TIMELINE_ACTIONS = frozenset({"zoom", "pan", "zoom_selection", "fit_all"})

    def key_applies(self, action: str) -> bool:
        """Does the key of ``action`` do something now?  The key bar and help leave out those
        that do not (:func:`~tracetui.ui.key_bar.applies`): ``n``/``N`` without matches, the
        timeline's keys while it is hidden."""
        if action in ("next_match", "prev_match"):
            return bool(self.matches.size)
        if action.split("(", 1)[0] in self.TIMELINE_ACTIONS:  # zoom(2.0), pan(-0.25)
            return bool(self.query_one("#timeline").display)
        return True

    # ------------------------------------------------------------------ selection
    def moved_to(self, node: int) -> None:
        """The tree's cursor moved to ``node`` (before the panes follow)."""

    @on(VirtualTree.NodeHighlighted)
    def _on_highlight(self, event: VirtualTree.NodeHighlighted) -> None:
        event.stop()
        self.current = event.node
        self.moved_to(event.node)
        if not self._sync_pending:  # the panes follow once the queued input is handled
            self._sync_pending = True
            self.call_later(self._sync_panes)

    def _sync_panes(self) -> None:
        self._sync_pending = False
        node = self.current
        note = self._notes.pop(node, None) if node is not None else None
        self._notes.clear()
        self.sync_panes(node, note)

    def sync_panes(self, node: int | None, note: Text | None) -> None:
        """Show ``node`` (and the ``note`` saying how it was reached) in the detail pane and
        the timeline."""
        raise NotImplementedError

    def select(self, node: int, note: Text | None = None) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------------ search
    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.value = ""
        bar.display = True
        bar.focus()

    @on(Input.Submitted, "#search")
    def _on_search(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_search()
        query = event.value
        if query.strip():
            self.run_search(query)

    @on(SearchBar.Cancelled)
    def _on_search_cancel(self, event: SearchBar.Cancelled) -> None:
        event.stop()
        self._close_search()

    def _close_search(self) -> None:
        self.query_one(SearchBar).display = False
        self.op_tree.focus()

    def run_search(self, query: str, *, select: bool = True) -> None:
        raise NotImplementedError

    def set_matches(self, nodes: np.ndarray, positions: np.ndarray, label: str, *, order: str = "tree",
                    fixed: bool = False, span: tuple[float, float] | None = None, noun: str | None = None) -> None:
        """Make ``nodes`` (tree order, with their tree ``positions``) what n/N step through, in
        ``order`` (tree, longest, time); ``span`` (µs): what the timeline shows with each;
        ``noun``: what each is ("occurrence", "evidence event"; None: a search's match)."""
        self.query_text = label
        self.matches, self.match_positions = nodes, positions
        self.match_list = MatchList(self.source, nodes, positions, label, order=order, fixed=fixed,  # type: ignore
                                    span=span, noun=noun)
        self.refresh_bindings()  # o (the order) applies while there are matches

    def clear_matches(self) -> None:
        self.query_text = None
        self.matches = np.empty(0, dtype=np.int64)
        self.match_positions = np.empty(0)
        self.match_list = None

    def current_matches(self) -> MatchList:
        """The match list of the current matches (a screen that set the fields directly gets
        a tree-order list of them)."""
        ml = self.match_list
        if ml is None or ml.nodes is not self.matches or ml.label != self.query_text:
            ml = self.match_list = MatchList(self.source, self.matches, self.match_positions,  # type: ignore
                                             self.query_text or "")
        return ml

    @property
    def match_noun(self) -> str | None:
        """What fixed matches are ("occurrence", "evidence event"); None: a search's matches."""
        return self.match_list.noun if self.match_list is not None else None

    @property
    def match_order(self) -> str:
        """The order n/N follow: ``tree``, ``longest`` or ``time``."""
        return self.match_list.order if self.match_list is not None else "tree"

    def match_note(self, i: int, n: int) -> Text:
        """The detail pane's note for the ``i``-th of ``n`` matches: ``/ match 2 of 26 for
        'linear'``, or for fixed matches ``scalar_sync: evidence event 1 of 3``."""
        if self.match_noun is not None:
            return Text(f"{self.query_text}: {self.match_noun} {i + 1} of {n:,}   (n next, N previous)", style="bold")
        return Text(f"/ match {i + 1} of {n:,} for {self.query_text!r}   (n next, N previous)", style="bold")

    def _goto_match(self, direction: int, *, inclusive: bool = False) -> None:
        if self.query_text is None:
            show_note(self, "no search yet: press / to search", severity="warning")
            return
        n = self.matches.size
        if not n:
            show_note(self, f"no match for {self.query_text!r}", severity="warning")
            return
        ml = self.current_matches()
        i = ml.step(self.current, direction, inclusive=inclusive)
        nodes, _ = ml.sequence()
        if ml.span is not None:
            self.select(int(nodes[i]), self.match_note(i, n), ml.span)  # type: ignore[call-arg]
        else:
            self.select(int(nodes[i]), self.match_note(i, n))

    def goto_first_match(self) -> None:
        """Select the first match in the list's order (a summaries row: the longest occurrence)."""
        if self.is_attached:
            self._goto_match(1, inclusive=True)

    def action_next_match(self) -> None:
        self._goto_match(1)

    def action_prev_match(self) -> None:
        self._goto_match(-1)

    # ------------------------------------------------------------------ layout
    def action_toggle_detail(self) -> None:
        detail = self.detail
        detail.display = not detail.display

    def action_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            self.maximize(self.focused, container=False)

    def action_pan(self, fraction: float) -> None:
        self.timeline.pan(float(fraction))  # type: ignore[attr-defined]

    def action_fit_all(self) -> None:
        self.timeline.fit_all()  # type: ignore[attr-defined]
