"""The cross-rank screen of a job (``X``): the per-rank GPU time breakdown, the
collectives matched across ranks and the straggler ranking, as ``tracetui summary JOB``
prints them (:func:`tracetui.job.job_summary`).

Enter on a rank row shows that rank; Enter on a collective row selects that collective's
kernel on the rank shown; Tab moves between the tables; ``p`` plots each rank's arrival at each
collective (:class:`~tracetui.ui.plot.plots_screen.PlotsScreen`: the straggler first, Enter
shows that rank's kernel of the collective); Esc closes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label

from ... import units
from ...errors import one_line
from ...job import job_summary
from ..key_bar import KeyBar
from ..plot.plots_screen import PlotsScreen
from ..row_table import RowTable
from ..shown import only_while_shown
from ..view.plot_views import job_plots
from ..view.table_fit import Column

_TL = (("total_ms", f"total {units.MS}"), ("computation_ms", f"compute {units.MS}"), ("exposed_comm_ms",
                                                                                      f"exposed comm {units.MS}"),
       ("exposed_memcpy_ms", f"exposed memcpy {units.MS}"), ("idle_ms", f"idle {units.MS}"))


#: each table's title (its id: the key)
_TITLES = {"ranks": "GPU time per rank (Enter: show the rank)",
           "collectives": "Collectives matched across ranks (Enter: select it on the rank shown)",
           "stragglers": "Stragglers (last to arrive most often first)"}

#: shorter titles of the per-rank columns (a narrow screen)
_TL_SHORT = {"exposed_comm_ms": f"exp. comm {units.MS}", "exposed_memcpy_ms": f"exp. memcpy {units.MS}",
             "computation_ms": f"comp. {units.MS}"}

def _n(v: Any, digits: int = 3) -> str:
    return "" if v is None else units.number(v, digits)


def _size(v: Any) -> str:
    return units.bytes_short(v) if v else ""


def _fill(table: RowTable, columns: list[Column], rows: list[list[str]]) -> None:
    """A table of the screen, rows as given, laid out by the table (the name first: :mod:`.table_fit`)."""
    table.set_rows(columns, rows, list(range(len(rows))))


class JobSummaryScreen(Screen[tuple[str, Any] | None]):
    """Per-rank breakdown, collectives, stragglers of a job; dismisses with ("rank", r),
    ("collective", index), ("arrival", (index, rank)) or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="job_summary.close"),
        Binding("p", "plots", "Arrivals plot", id="job_summary.plots",
                tooltip="each rank's lateness at each collective, the start skew as a line, ^ where it was last; "
                        "up/down: the rank (the straggler first)"),
    ]
    DEFAULT_CSS = """
    JobSummaryScreen RowTable { height: auto; max-height: 20; margin-bottom: 1; }
    JobSummaryScreen .title { text-style: bold; width: 1fr; height: auto; }
    """

    def __init__(self, job: Any, current_rank: int | None, doc: dict | None = None) -> None:
        super().__init__()
        self.job = job
        self.current_rank = current_rank
        #: :func:`tracetui.job.job_summary` of the job (computed once per job by the caller)
        self.doc = doc if doc is not None else job_summary(job)

    def compose(self) -> ComposeResult:
        j = self.doc["job"]
        with VerticalScroll():
            title = (f"{self.job.title}: {j['ranks_loaded']} of {j['ranks_found']} ranks loaded, "
                     f"world size {j['world_size']}, backend {j['backend'] or 'unknown'}")
            yield Label(Text(one_line(title), style="bold"))
            for key, title in _TITLES.items():
                yield Label(title, classes="title", id=f"{key}-title")
                yield RowTable(id=key)
            for w in self.doc["warnings"]:
                yield Label(Text(one_line(f"warning: {w}"), style="yellow"))
        yield KeyBar()

    @only_while_shown  # keys typed ahead may have closed it already
    def on_mount(self) -> None:
        rows = []
        for r in self.doc["ranks"]:
            tl = r.get("gpu_timeline") or {}
            if r["error"]:
                status = "failed"
            elif r.get("foreign"):
                status = "other run?"
            else:
                status = "shown" if r["rank"] == self.current_rank else "ok"
            rows.append([str(r["rank"]), *(_n(tl.get(k)) for k, _ in _TL), _n(r["collectives"]), status])
        _fill(self.query_one("#ranks", RowTable),
              [Column("rank"),
               *(Column(h, True, _TL_SHORT.get(k, ""), drop=2 if k == "exposed_memcpy_ms" else 0) for k, h in _TL),
               Column("collectives", True, "colls", drop=1), Column("status")], rows)
        rows = []
        for c in self.doc["collectives"]:
            ident = str(c["seq"]) if c["seq"] is not None else f"#{c['index']}"
            algo = "/".join(x for x in (c["algorithm"], c["protocol"]) if x)
            rows.append([one_line(c["name"]), one_line(c["group"] or "-"), ident, _n(c["ranks"]),
                         _n(c["start_skew_us"], 1), _n(c["end_skew_us"], 1), _n(c["min_dur_us"], 1),
                         _n(c["max_dur_us"], 1), _n(c["last_rank"]), _size(c["bytes"]), one_line(algo),
                         _n(c["busbw_gbps"], 2)])
        _fill(self.query_one("#collectives", RowTable),
              [Column("collective"), Column("group", drop=5), Column("seq"), Column("ranks", True, drop=4),
               Column(f"start skew {units.US}", True, f"start {units.US}"),
               Column(f"end skew {units.US}", True, f"end {units.US}", drop=6), Column(f"min {units.US}", True, drop=2),
               Column(f"max {units.US}", True, drop=3), Column("last rank", True, "last"), Column("size", True),
               Column("algorithm", drop=1), Column(f"busbw {units.GBPS}", True, drop=7)], rows)
        rows = [[_n(s["rank"]), _n(s["times_last"]), _n(s["collectives"]), _n(s.get("median_late_us"), 1),
                 _n(s["late_us"], 1), _n(s["wait_caused_us"], 1)] for s in self.doc["stragglers"]]
        _fill(self.query_one("#stragglers", RowTable),
              [Column("rank", True), Column("last to arrive", True), Column("collectives", True),
               Column(f"median late {units.US}", True), Column(f"late {units.US} (sum)", True),
               Column(f"wait caused {units.US}", True)], rows)
        self.query_one("#ranks", RowTable).focus()

    @on(RowTable.Fitted)
    def _on_fitted(self, event: RowTable.Fitted) -> None:
        """A table's title says which of its columns it left out."""
        event.stop()
        key = str(event.table.id)
        title = Text(_TITLES[key])
        if event.note:
            title.append(f" · {event.note}", style="not bold dim")
        self.query_one(f"#{key}-title", Label).update(title)

    @on(RowTable.Picked)
    def _on_row(self, event: RowTable.Picked) -> None:
        event.stop()
        if event.row is None:  # a header click: these tables keep their order
            return
        if event.table.id == "collectives":
            self.dismiss(("collective", event.row))
        elif event.table.id == "ranks":
            self.dismiss(("rank", int(self.doc["ranks"][event.row]["rank"])))
        else:
            self.dismiss(("rank", int(self.doc["stragglers"][event.row]["rank"])))

    def action_plots(self) -> None:
        title = Text.assemble((one_line(self.job.title), "bold"), " · arrivals at the collectives matched "
                              "across the ranks (↑↓ rank, ←→ collective, Enter: its kernel)")
        self.app.push_screen(PlotsScreen(title, job_plots(self.job)), self._plot_picked)

    def _plot_picked(self, value: Any) -> None:
        if value is not None and value[0] == "arrival":
            self.dismiss(value)

    def action_close(self) -> None:
        self.dismiss(None)
