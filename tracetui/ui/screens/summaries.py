"""The summaries inside the browser (``s``, or "Summaries" in the palette): the tables of
``tracetui summary`` as sortable tables, one tab each: top kernels, top ops (GPU direct and
subtree time), kernel categories, the roofline of ops with known FLOPs, idle gaps by class and
launch statistics.

Enter on a row closes the screen and selects the row's first occurrence in the op tree (a
kernel's launches, an op's calls, a category's kernels, the GPU event that ends each idle gap
of a class, the launch calls of a class); ``n``/``N`` then cycle through its occurrences as
through search matches.  ``s`` sorts the table by its next column (numbers largest first),
``S`` reverses; clicking a header sorts by it.  ``1``-``9`` pick a tab.  A driver-call
trace adds its answers (``driver_tabs.py``).

Tables are computed in a worker thread before the screen opens (:func:`open_summaries`;
analysis/frames, tables, gaps, launches, roofline);
each keeps at most :data:`MAX_ROWS` rows (the largest by time).  Times are milliseconds
(``ms``) or microseconds (``µs``) as the header says.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, TabbedContent, TabPane
from textual.widgets.data_table import ColumnKey
from textual.worker import get_current_worker

from ...analysis.categories import KernelCategorizer
from ...analysis.frames import cpu_ops_frame, gpu_events_frame, resolve_categorizer
from ...analysis.gaps import idle_gaps, idle_summary
from ...analysis.launches import launch_class_stats, launch_frame
from ...analysis.roofline import roofline_table
from ...analysis.tables import NESTED_CALLS_RULE, category_table, kernel_table, op_table
from ...driver import DriverTrace
from ...errors import one_line
from ...kineto.trace import KinetoTrace
from ..notify import show_note
from ..shown import only_while_shown
from .driver_tabs import driver_tables
from .summary_table import MAX_ROWS, SummaryTable


def _groups(keys: list[Any], events: np.ndarray) -> dict[Any, np.ndarray]:
    out: dict[Any, list[int]] = {}
    for k, e in zip(keys, events.tolist()):
        out.setdefault(k, []).append(e)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _kernels(gpu: Any) -> SummaryTable:
    t = SummaryTable("kernels", "Top kernels", [("name", False), ("category", False), ("count", True),
                                                ("total ms", True), ("mean µs", True), ("max µs", True),
                                                ("%", True)])
    if gpu.empty:
        return t
    occ = _groups(list(zip(gpu["name"], gpu["kind"].astype(str))), gpu["event"].to_numpy())
    for r in kernel_table(gpu).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, r.kernel_category, int(r.count), r.total_us / 1e3, r.mean_us, r.max_us, r.percent),
              f"{r.kind} {r.name}", occ[(r.name, r.kind)])
    return t


def _ops(ops: Any) -> SummaryTable:
    t = SummaryTable("ops", "Top ops", [("name", False), ("count", True), ("nested", True), ("host ms", True),
                                        ("GPU direct ms", True), ("GPU subtree ms", True), ("%", True)],
                     note=f"GPU direct: its own launches; subtree: everything under it; {NESTED_CALLS_RULE}")
    if ops.empty:
        return t
    occ = _groups(list(ops["name"]), ops["event"].to_numpy())
    for r in op_table(ops).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, int(r.count), int(r.nested_calls), r.host_us / 1e3, r.direct_gpu_us / 1e3,
               r.subtree_gpu_us / 1e3, r.percent),
              f"op {r.name}", occ[r.name])
    return t


def _categories(gpu: Any) -> SummaryTable:
    t = SummaryTable("categories", "Categories", [("category", False), ("count", True), ("total ms", True),
                                                  ("%", True)])
    if gpu.empty:
        return t
    occ = _groups(list(gpu["kernel_category"]), gpu["event"].to_numpy())
    for r in category_table(gpu).itertuples(index=False):
        t.add((r.category, int(r.count), r.total_ms, r.percent), f"category {r.category}", occ[r.category])
    return t


def _roofline(kt: KinetoTrace) -> SummaryTable:
    t = SummaryTable("roofline", "Roofline", [("name", False), ("shapes", False), ("count", True),
                                              ("GPU ms", True), ("TFLOP/s", True), ("GB/s", True),
                                              ("FLOP/B", True), ("% roof", True), ("bound", False)],
                     note="ops with FLOPs from their shapes (docs/roofline.md); % of the roofline at their FLOP/byte")
    for r in roofline_table(kt, with_events=True).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, r.input_dims, int(r.count), r.gpu_ms, r.tflops_per_s, r.gbps, r.intensity, r.pct_of_peak,
               r.bound or ""), f"op {r.name} {r.input_dims}", r.events)
    return t


def _gaps(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    t = SummaryTable("gaps", "Idle gaps", [("class", False), ("gaps", True), ("total ms", True), ("mean µs", True),
                                           ("max µs", True), ("% of idle", True)],
                     note="gaps on each GPU stream; Enter goes to the GPU events that end them (tree order)")
    gaps = idle_gaps(kt, gpu)
    if gaps.empty:
        return t
    nxt = gaps["next_event"].to_numpy().astype(np.int64)
    occ = _groups(list(gaps["idle_class"]), nxt)
    for r in idle_summary(gaps).itertuples(index=False):
        if r.count:
            ends = occ[r.idle_class]
            t.add((r.idle_class, int(r.count), r.total_us / 1e3, r.mean_us, r.max_us, r.percent),
                  f"idle gaps ({r.idle_class})", ends[ends >= 0])
    return t


def _launches(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    t = SummaryTable("launches", "Launches", [("class", False), ("calls", True), ("call mean µs", True),
                                              ("delay median µs", True), ("delay p90 µs", True),
                                              ("delay max µs", True), ("GPU ms", True)],
                     note="launch calls by class; delay = first GPU start - call start")
    lf = launch_frame(kt, gpu)
    if lf.empty:
        return t
    occ = _groups(list(lf["launch_class"]), lf["launch"].to_numpy())
    for cls, st in launch_class_stats(lf).items():
        delay, call = st["delay"], st["call"]
        q = (lambda k: delay[k] if delay["count"] else None)
        t.add((str(cls), call["count"], call["mean_us"], q("median_us"), q("p90_us"), q("max_us"),
               st["gpu_us"] / 1e3), f"launches ({cls})", occ[cls])
    return t


def summary_tables(kt: KinetoTrace, categorizer: KernelCategorizer | None = None) -> list[SummaryTable]:
    """Every tab's table of a trace (no Textual involved: runs in a worker thread): the
    Kineto tables, and for a driver-call trace its answers (``driver_tabs.py``) -- alone, first
    and without the empty Kineto tables; linked, after the Kineto tables."""
    gpu = gpu_events_frame(kt, resolve_categorizer(categorizer))
    ops = cpu_ops_frame(kt)
    tables = [_kernels(gpu), _ops(ops), _categories(gpu), _roofline(kt), _gaps(kt, gpu), _launches(kt, gpu)]
    if isinstance(kt, DriverTrace):
        drv = driver_tables(kt)
        return drv if kt.first == 0 else tables + drv
    return tables


def _cell(v: Any, numeric: bool, column: str, width: int | None = None) -> Text:
    """A table cell: numbers right-aligned with separators; text (trace data, never markup)
    cut to ``width`` cells with an ellipsis."""
    if v is None or (isinstance(v, float) and v != v):
        return Text("")
    if not numeric:
        text = Text(one_line(str(v)), no_wrap=True, overflow="ellipsis")
        if width is not None and text.cell_len > width:
            text.truncate(width, overflow="ellipsis")
        return text
    if isinstance(v, (int, np.integer)):
        text = f"{int(v):,}"
    else:
        digits = 1 if column in ("%", "% roof", "% of idle") else 3
        text = f"{float(v):,.{digits}f}"
    return Text(text.rjust(width or 0))


def _num_width(t: SummaryTable, c: int) -> int:
    """Cells of numeric column ``c``: its widest value or its name."""
    name = t.columns[c][0]
    return max([len(name), *(_cell(r[c], True, name).cell_len for r in t.rows)])


def _sort_key(v: Any, numeric: bool) -> Any:
    if numeric:
        return -float(v) if isinstance(v, (int, float, np.integer, np.floating)) and v == v else float("inf")
    return str(v).lower()


class SummariesScreen(Screen[tuple[np.ndarray, str] | None]):
    """The summary tables; dismisses with (occurrence nodes, label) or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="summaries.close"),
        Binding("s", "sort(1)", "Sort by next column", id="summaries.sort"),
        Binding("S", "sort(0)", "Reverse sort", id="summaries.reverse"),
        *(Binding(str(i + 1), f"tab({i})", f"Tab {i + 1}", show=False, id=f"summaries.tab{i + 1}") for i in range(9)),
    ]
    DEFAULT_CSS = """
    SummariesScreen #summaries-title { height: 1; }
    SummariesScreen TabbedContent { height: 1fr; }
    SummariesScreen TabPane { padding: 0; }
    SummariesScreen .note { color: $text-muted; height: 1; }
    SummariesScreen DataTable { height: 1fr; }
    """

    def __init__(self, kt: KinetoTrace, tables: list[SummaryTable]) -> None:
        super().__init__()
        self.kt = kt
        self.tables = tables
        self.sort_state: dict[str, tuple[int, bool]] = {}  # table key -> (column, reversed)

    def compose(self) -> ComposeResult:
        yield Label(Text.assemble((one_line(self.kt.name_of_file), "bold"),
                                  " · Enter: its occurrences in the tree, n/N cycle them"), id="summaries-title")
        # No ``initial=``: Textual's tabs validate it on mount and raise when the screen was
        # closed meanwhile (s then Esc at once on a busy machine); on_mount picks the tab.
        with TabbedContent(id="summaries-tabs"):
            for t in self.tables:
                with TabPane(f"{t.title} ({len(t.rows):,})", id=f"p-{t.key}"):
                    if t.note:
                        yield Label(Text(one_line(t.note)), classes="note")
                    yield DataTable(id=f"t-{t.key}", cursor_type="row", zebra_stripes=True)
        yield Footer()

    @only_while_shown  # closed before it was mounted: its widgets are going away
    def on_mount(self) -> None:
        for t in self.tables:
            table = self.query_one(f"#t-{t.key}", DataTable)
            for c in range(len(t.columns)):
                table.add_column(self._header(t, c), key=str(c))
            self._fill(t)
        self.call_after_refresh(self._open_first_table_with_rows)

    @only_while_shown
    def _open_first_table_with_rows(self) -> None:
        """The first tab whose table has rows is the one shown (an empty first table, e.g.
        kernels of a CPU-only trace, would greet the user with nothing)."""
        first = next((t for t in self.tables if t.rows), None)
        if first is not None and first is not self.tables[0]:
            self.query_one(TabbedContent).active = f"p-{first.key}"
        self._focus_table()

    def _table(self, key: str) -> SummaryTable:
        return next(t for t in self.tables if t.key == key)

    def _fill(self, t: SummaryTable) -> None:
        table = self.query_one(f"#t-{t.key}", DataTable)
        col, rev = self.sort_state.get(t.key, (-1, False))
        order = list(range(len(t.rows)))
        if col >= 0:
            numeric = t.columns[col][1]
            order.sort(key=lambda i: _sort_key(t.rows[i][col], numeric), reverse=rev)
        widths = self._text_widths(t)
        for c, (name, num) in enumerate(t.columns):
            column = table.columns[ColumnKey(str(c))]  # the header shows the sort: ▼ as sorted, ▲ reversed
            header = self._header(t, c)
            column.content_width = max(column.content_width, header.cell_len, _num_width(t, c) if num else 0)
            if num:  # numbers and their header right-aligned to the column's width
                widths[c] = column.content_width
                header = Text(header.plain.rjust(widths[c]))
            column.label = header
        table.clear()
        for i in order:
            table.add_row(*(_cell(v, num, name, widths.get(c)) for c, (v, (name, num)) in
                            enumerate(zip(t.rows[i], t.columns))), key=str(i))

    def _header(self, t: SummaryTable, c: int) -> Text:
        """Column ``c``'s header: its name, with ▼ (sorted) or ▲ (reversed) when sorted by it."""
        col, rev = self.sort_state.get(t.key, (-1, False))
        name, num = t.columns[c]
        if c != col:
            return Text(name.rjust(_num_width(t, c)) if num else name)
        mark = "▲" if rev else "▼"
        return Text(f"{mark} {name}".rjust(_num_width(t, c)) if num else f"{name} {mark}")

    def _text_widths(self, t: SummaryTable) -> dict[int, int]:
        """Cells left to each text column (names, shapes) once the numbers have theirs, so the
        numbers stay on screen: text columns share what the screen width leaves, at least 16."""
        text_cols = [c for c, (_, num) in enumerate(t.columns) if not num]
        num_w = 0
        for c, (name, num) in enumerate(t.columns):
            if num:
                cells = [_cell(r[c], True, name).cell_len for r in t.rows]
                num_w += max([len(name), *cells]) + 2
        free = max(self.size.width - 4 - num_w - 2 * len(text_cols), 16 * len(text_cols))
        longest = {c: max([len(t.columns[c][0]), *(len(str(r[c])) for r in t.rows)]) for c in text_cols}
        # short columns (category, bound) keep their width; the long ones share the rest
        out: dict[int, int] = {}
        short = [c for c in text_cols if longest[c] <= 16]
        for c in short:
            out[c] = longest[c]
            free -= longest[c]
        long_cols = [c for c in text_cols if c not in short]
        for c in long_cols:
            out[c] = max(16, free // len(long_cols))
        return out

    def _active(self) -> SummaryTable | None:
        active = self.query_one(TabbedContent).active
        return self._table(active[2:]) if active and active.startswith("p-") and self.tables else None

    @only_while_shown
    def _focus_table(self) -> None:
        """Focus the active tab's table (runs after a refresh: the screen may be closed by then)."""
        t = self._active()
        if t is not None:
            for table in self.query(f"#t-{t.key}").results(DataTable):
                table.focus()

    @on(TabbedContent.TabActivated)
    def _on_tab(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_table)

    def action_tab(self, index: int) -> None:
        if index < len(self.tables):
            self.query_one(TabbedContent).active = f"p-{self.tables[index].key}"

    def action_sort(self, step: int) -> None:
        """``s``: sort by the next column (step 1); ``S``: reverse the current order (step 0)."""
        t = self._active()
        if t is None:
            return
        col, rev = self.sort_state.get(t.key, (-1, False))
        col, rev = ((col + 1) % len(t.columns), False) if step else (max(col, 0), not rev)
        self._sort(t, col, rev)

    def _sort(self, t: SummaryTable, col: int, rev: bool) -> None:
        self.sort_state[t.key] = (col, rev)
        self._fill(t)
        name = t.columns[col][0]
        show_note(self, f"{t.title}: sorted by {name}" + (" (reversed)" if rev else ""))

    @on(DataTable.HeaderSelected)
    def _on_header(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        t = self._active()
        if t is None:
            return
        col, rev = self.sort_state.get(t.key, (-1, False))
        self._sort(t, event.column_index, not rev if col == event.column_index else False)

    @on(DataTable.RowSelected)
    def _on_row(self, event: DataTable.RowSelected) -> None:
        event.stop()
        t = self._table(str(event.data_table.id)[2:])
        i = int(event.row_key.value)
        nodes = t.occurrences[i]
        if not nodes.size:
            show_note(self, f"{t.labels[i]}: no occurrence in the tree", severity="warning")
            return
        self.dismiss((nodes, t.labels[i]))

    def action_close(self) -> None:
        self.dismiss(None)


def show_occurrences(screen: Any, result: tuple[np.ndarray, str] | None) -> None:
    """On the browser screen: make ``nodes`` the match list (as a search would; the status line
    and ``n``/``N`` use it) and select the first one in tree order."""
    if result is None or not screen.is_attached:
        return
    nodes, label = result
    src = screen.source
    ranks = np.array([src.rank(int(n)) for n in nodes.tolist()], dtype=np.float64)
    keep = ranks >= 0
    nodes, ranks = nodes[keep], ranks[keep]
    if not nodes.size:
        show_note(screen, f"{label}: no occurrence in the tree", severity="warning")
        return
    o = np.argsort(ranks, kind="stable")
    screen.query_text = label
    screen.matches, screen.match_ranks = nodes[o], ranks[o]
    screen.matches_fixed = True
    if src.filtered:
        screen._set_filter(True)
    screen.update_status()
    screen.op_tree.focus()
    note = Text(f"{label}: occurrence 1 of {nodes.size:,}   (n next, N previous)", style="bold")
    # after the browser screen is back on and laid out, so the tree can scroll to the row
    screen.call_after_refresh(screen.select, int(screen.matches[0]), note)


def open_summaries(screen: Any) -> None:
    """From the browser screen: compute the tables in a worker thread, then show them (not
    when the user has left the browser screen meanwhile)."""
    kt, categorizer = screen.linked.kineto, screen.builder.categorizer
    app = screen.app

    def push(tables: list[SummaryTable]) -> None:
        if app.screen is screen:
            app.push_screen(SummariesScreen(kt, tables), partial(show_occurrences, screen))

    def compute() -> None:
        tables = summary_tables(kt, categorizer)
        if get_current_worker().is_cancelled:  # the app is closing, or s was pressed again
            return
        try:
            app.call_from_thread(push, tables)
        except RuntimeError:  # the app stopped meanwhile
            pass

    screen.run_worker(compute, thread=True, exclusive=True, group="summaries", name="summaries")
