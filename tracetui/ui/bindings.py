"""The browser's key bindings (the op tree and the timeline add their own): every binding has
an id and a description, from which help and the footer are generated."""

from __future__ import annotations

from textual.binding import Binding, BindingType

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
            tooltip="the next search match (or occurrence from the summaries); after P: the next segment of "
                    "the critical path, until the next search"),
    Binding("N", "prev_match", "Previous match", show=False, id="main.prev_match",
            tooltip="the previous search match; after P: the previous segment of the critical path"),
    Binding("f", "filter", "Filter", id="main.filter", tooltip="show only the subtrees holding search matches"),
    Binding("colon", "query", "Query (SQL)", show=False, id="main.query", key_display=":",
            tooltip="SQL over the trace (a job: every rank) with DuckDB (docs/query.md); Enter on a result row "
                    "goes to its event, f filters the tree to them"),
    Binding(".", "toggle_python", "Python rows", id="main.python", key_display=".",
            tooltip="hide/show python_function rows"),
    Binding("t", "focus_timeline", "Timeline", id="main.timeline",
            tooltip="focus the timeline (arrows walk GPU events) / back to the tree"),
    Binding("d", "toggle_detail", "Detail pane", show=False, id="main.detail", tooltip="hide/show"),
    Binding("m", "maximize", "Maximize pane", show=False, id="main.maximize",
            tooltip="the focused pane fills the screen / back"),
    Binding("c", "toggle_cpu_lanes", "CPU threads in timeline", show=False, id="main.cpu_lanes"),
    Binding("]", "zoom(2.0)", "Zoom in (timeline)", show=False, id="main.zoom_in", key_display="]"),
    Binding("[", "zoom(0.5)", "Zoom out (timeline)", show=False, id="main.zoom_out", key_display="["),
    Binding("{,shift+left", "pan(-0.25)", "Pan left (timeline)", show=False, id="main.pan_left"),
    Binding("},shift+right", "pan(0.25)", "Pan right (timeline)", show=False, id="main.pan_right"),
    Binding("z", "zoom_selection", "Zoom timeline to selection", show=False, id="main.zoom_selection"),
    Binding("Z", "fit_all", "Whole trace in timeline", show=False, id="main.fit_all"),
    Binding("w", "warnings", "Warnings", show=False, id="main.warnings"),
    Binding("s", "summaries", "Summaries", show=False, id="main.summaries",
            tooltip="top kernels, top ops, categories, roofline, idle gaps, launches; Enter goes to a row's "
                    "occurrences (n/N cycle them)"),
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
