"""The browser's key bindings (the op tree and the timeline add their own): every binding has
an id and a description, from which help and the footer are generated."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from .. import units
from ..diff.numbers import REGRESSION_MIN_PCT, REGRESSION_MIN_US


def pane_bindings(screen: str, whole: str) -> list[BindingType]:
    """The keys of a screen with a detail pane and a timeline (ids ``<screen>.<action>``):
    hide the detail, maximize a pane, zoom and pan the timeline, fit ``whole`` in it."""
    return [
        Binding("d", "toggle_detail", "Detail pane", show=False, id=f"{screen}.detail", tooltip="hide/show"),
        Binding("m", "maximize", "Maximize pane", show=False, id=f"{screen}.maximize",
                tooltip="the focused pane fills the screen / back"),
        Binding("]", "zoom(2.0)", "Zoom in (timeline)", show=False, id=f"{screen}.zoom_in", key_display="]"),
        Binding("[", "zoom(0.5)", "Zoom out (timeline)", show=False, id=f"{screen}.zoom_out", key_display="["),
        Binding("{,shift+left", "pan(-0.25)", "Pan left (timeline)", show=False, id=f"{screen}.pan_left"),
        Binding("},shift+right", "pan(0.25)", "Pan right (timeline)", show=False, id=f"{screen}.pan_right"),
        Binding("z", "zoom_selection", "Zoom timeline to selection", show=False, id=f"{screen}.zoom_selection"),
        Binding("Z", "fit_all", f"{whole} in timeline", show=False, id=f"{screen}.fit_all"),
        Binding("w", "warnings", "Warnings", show=False, id=f"{screen}.warnings"),
    ]


_MAIN_PANES = pane_bindings("main", "Whole trace")

#: Keys of the browser screen (the op tree and the timeline add their own).
MAIN_BINDINGS: list[BindingType] = [
    Binding(">", "jump_gpu", "GPU event", id="main.jump_gpu", key_display=">",
            tooltip="jump to the selected op's first GPU event; again: its next one (time order); "
                    "from a runtime call linked to a driver call (--driver): that driver call first"),
    Binding("<", "jump_op", "Launching op", id="main.jump_op", key_display="<",
            tooltip="from a kernel/memcpy/memset to the cpu_op that launched it (and its ET op); "
                    "from a driver call (--driver) to its runtime call"),
    Binding("/", "search", "Search", id="main.search", key_display="/",
            tooltip="search names: text, or /regex/; Enter selects the first match at or after the cursor"),
    Binding("n", "next_match", "Next match", id="main.next_match",
            tooltip="the next search match (or occurrence from the summaries and memory screens, or evidence "
                    "event of a finding after F); after P: the next segment of the critical path, until the next "
                    "search"),
    Binding("N", "prev_match", "Previous match", show=False, id="main.prev_match",
            tooltip="the previous search match; after P: the previous segment of the critical path"),
    Binding("o", "match_order", "Longest / time order", id="main.match_order",
            tooltip="n/N step through the matches longest first, or in time order (a summaries row's occurrences "
                    "start longest first)"),
    Binding("f", "filter", "Filter", id="main.filter", tooltip="show only the subtrees holding search matches"),
    Binding("colon", "query", "Query (SQL)", show=False, id="main.query", key_display=":",
            tooltip="SQL over the trace (a job: every rank) with DuckDB (docs/query.md); Enter on a result row "
                    "goes to its event, f filters the tree to them"),
    Binding(".", "toggle_python", "Python rows", id="main.python", key_display=".",
            tooltip="hide/show python_function rows"),
    Binding("t", "focus_timeline", "Timeline", id="main.timeline",
            tooltip="focus the timeline (arrows walk GPU events) / back to the tree"),
    *_MAIN_PANES[:2],  # d, m; then c; then the timeline's keys and w (the order help lists them in)
    Binding("c", "toggle_cpu_lanes", "CPU threads in timeline", show=False, id="main.cpu_lanes"),
    *_MAIN_PANES[2:],
    Binding("s", "summaries", "Summaries", show=False, id="main.summaries",
            tooltip="top kernels, top ops, categories, roofline, idle gaps, launches; Enter goes to a row's "
                    "occurrences (n/N cycle them)"),
    Binding("F", "findings", "Findings", show=False, id="main.findings",
            tooltip="what is wrong with this run (tracetui check): findings by time at stake (an estimate), "
                    "Enter goes to a finding's evidence, then n/N cycle it; the status line counts them"),
    Binding("i", "icicle", "Icicle", show=False, id="main.icicle",
            tooltip="where the selected subtree's time goes, as a picture: callees as wide as their time, merged by "
                    "name path; v: CPU / GPU / Python time, Enter descends, Backspace climbs, g: a cell's events"),
    Binding("b", "bottom_up", "Bottom-up", show=False, id="main.bottom_up",
            tooltip="the selected subtree's time by name, most self time first; Enter: who called it"),
    Binding("a", "raw_args", "Every arg", show=False, id="main.raw_args",
            tooltip="every arg of the selected event, foldable; c copies a value, C its name (OSC 52)"),
    Binding("e", "export", "Export", show=False, id="main.export",
            tooltip="the selected subtree (or the whole trace) as md, html, csv, json or a Chrome trace"),
    Binding("escape", "clear", "Clear search / filter", show=False, id="main.clear"),
    Binding("r", "pick_rank", "Rank", show=False, id="main.pick_rank",
            tooltip="a whole job: choose the rank to show"),
    Binding("x", "collective_other_rank", "Collective on another rank", show=False, id="main.collective_rank",
            tooltip="from a NCCL kernel or a collective op: the same collective on another rank of the job"),
    Binding("P", "critical_path", "Critical path", show=False, id="main.critical_path",
            tooltip="why the step under the cursor took as long as it did: its critical path across threads, "
                    "streams (and ranks of a job); marks it in the tree and timeline, n/N walk it, Esc clears"),
    Binding("X", "job_summary", "Cross-rank summary", show=False, id="main.job_summary",
            tooltip="a whole job: GPU time per rank, collectives matched across ranks, stragglers"),
    Binding("M", "memory", "Memory", show=False, id="main.memory",
            tooltip="a trace recorded with profile_memory=True: per device the peak, the ops that own it, the "
                    "top allocating ops; Enter goes to the op"),
    Binding("circumflex_accent", "memory_peak", "Memory peak", show=False, id="main.memory_peak", key_display="^",
            tooltip="select the op open when a device's allocated bytes were highest; again: the next device"),
]

#: Keys of the diff browser (``tracetui diff A B``; its tree adds its own).
DIFF_BINDINGS: list[BindingType] = [
    Binding("o", "sort", "Sort by |ΔGPU|", id="diff.sort",
            tooltip="children by the absolute change of their GPU time, largest first / back to time order"),
    Binding("f", "regressions", "Regressions", id="diff.regressions",
            tooltip=f"only the rows whose GPU time grew (by more than {units.us_text(REGRESSION_MIN_US, 'g')} and "
                    f"{units.pct_text(REGRESSION_MIN_PCT, 'g')} of A's), with the path to them"),
    Binding("a", "detail_side('a')", "Detail of A", id="diff.detail_a",
            tooltip="A's event detail (the single-trace browser's) below the comparison; again: the comparison"),
    Binding("b", "detail_side('b')", "Detail of B", id="diff.detail_b",
            tooltip="B's event detail below the comparison; again: the comparison"),
    Binding("A", "open_side('a')", "In A's browser", id="diff.open_a",
            tooltip="the same op in the single-trace browser of A (D comes back)"),
    Binding("B", "open_side('b')", "In B's browser", id="diff.open_b",
            tooltip="the same op in the single-trace browser of B (D comes back)"),
    Binding("s", "summary_deltas", "Summary deltas", id="diff.summary",
            tooltip="GPU timeline, kernel categories, kernels, ops, launches, idle gaps: A, B, Δ"),
    Binding("/", "search", "Search", id="diff.search", key_display="/",
            tooltip="search the names of either side: text, or /regex/"),
    Binding("n", "next_match", "Next match", show=False, id="diff.next_match"),
    Binding("N", "prev_match", "Previous match", show=False, id="diff.prev_match"),
    Binding("escape", "clear", "Clear search", show=False, id="diff.clear"),
    *pane_bindings("diff", "Whole step"),
]

#: Keys of a side's single-trace browser opened from the diff (beside the main screen's).
DIFF_SIDE_BINDINGS: list[BindingType] = [
    Binding("D", "back_to_diff", "Back to the diff", id="diff_side.back",
            tooltip="back to the diff browser, on the row of the op selected here"),
    Binding("A", "other_side('a')", "Same op in A", show=False, id="diff_side.open_a",
            tooltip="the op selected here, in A's browser"),
    Binding("B", "other_side('b')", "Same op in B", show=False, id="diff_side.open_b",
            tooltip="the op selected here, in B's browser"),
]

#: Keys of the application (every screen).
APP_BINDINGS: list[BindingType] = [
    Binding("q", "quit", "Quit", id="app.quit"),
    Binding("?,f1", "help", "Help", id="app.help", key_display="?"),
]


def row_cursor_bindings(prefix: str) -> list[BindingType]:
    """The keys that move a row cursor (the op tree's, a query's result table's): down/up
    (j/k), pages, half pages (ctrl+d/ctrl+u), top/bottom (home/g, end/G); ids ``<prefix>.down``
    ...  Actions: ``cursor_down``, ``cursor_up``, ``page_down``, ``page_up``,
    ``half_page_down``, ``half_page_up``, ``cursor_top``, ``cursor_bottom``."""
    return [
        Binding("down,j", "cursor_down", "Down", show=False, id=f"{prefix}.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id=f"{prefix}.up"),
        Binding("pagedown", "page_down", "Page down", show=False, id=f"{prefix}.page_down"),
        Binding("pageup", "page_up", "Page up", show=False, id=f"{prefix}.page_up"),
        Binding("ctrl+d", "half_page_down", "Half page down", show=False, id=f"{prefix}.half_down"),
        Binding("ctrl+u", "half_page_up", "Half page up", show=False, id=f"{prefix}.half_up"),
        Binding("home,g", "cursor_top", "Top", show=False, id=f"{prefix}.top"),
        Binding("end,G", "cursor_bottom", "Bottom", show=False, id=f"{prefix}.bottom"),
    ]


class RowCursorKeys:
    """The actions of :func:`row_cursor_bindings`, for a scrolling widget with a row cursor
    (the op tree, a query's result table).  The widget gives ``row_cursor`` (the cursor's
    row), ``row_total`` (rows), ``move_row_cursor(row)`` (clamps, scrolls, says so) and
    ``_view_rows()`` (rows on screen)."""

    def _page(self, rows: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + rows, animate=False, force=True)
        self.move_row_cursor(self.row_cursor + rows)

    def action_cursor_down(self) -> None:
        self.move_row_cursor(self.row_cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_row_cursor(self.row_cursor - 1)

    def action_page_down(self) -> None:
        self._page(max(1, self._view_rows()))

    def action_page_up(self) -> None:
        self._page(-max(1, self._view_rows()))

    def action_half_page_down(self) -> None:
        self._page(max(1, self._view_rows() // 2))

    def action_half_page_up(self) -> None:
        self._page(-max(1, self._view_rows() // 2))

    def action_cursor_top(self) -> None:
        self.move_row_cursor(0)

    def action_cursor_bottom(self) -> None:
        self.move_row_cursor(self.row_total - 1)
