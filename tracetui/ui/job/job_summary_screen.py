"""The cross-rank screen of a job (``X``): the per-rank GPU time breakdown, the
collectives matched across ranks and the straggler ranking, as ``tracetui summary JOB``
prints them (:func:`tracetui.job.job_summary`).

Enter on a rank row shows that rank; Enter on a collective row selects that collective's
kernel on the rank shown; Tab moves between the tables; Esc closes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from ... import units
from ...errors import one_line
from ...job import job_summary
from ..shown import only_while_shown

_TL = (("total_ms", f"total {units.MS}"), ("computation_ms", f"compute {units.MS}"), ("exposed_comm_ms",
                                                                                      f"exposed comm {units.MS}"),
       ("exposed_memcpy_ms", f"exposed memcpy {units.MS}"), ("idle_ms", f"idle {units.MS}"))


def _n(v: Any, digits: int = 3) -> Text:
    return Text("") if v is None else Text(units.number(v, digits), justify="right")


def _size(v: Any) -> Text:
    return Text(units.bytes_short(v), justify="right") if v else Text("")


class JobSummaryScreen(Screen[tuple[str, int] | None]):
    """Per-rank breakdown, collectives, stragglers of a job; dismisses with ("rank", r),
    ("collective", index) or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="job_summary.close"),
    ]
    DEFAULT_CSS = """
    JobSummaryScreen DataTable { height: auto; max-height: 20; margin-bottom: 1; }
    JobSummaryScreen .title { text-style: bold; }
    """

    def __init__(self, job: Any, current_rank: int | None) -> None:
        super().__init__()
        self.job = job
        self.current_rank = current_rank
        self.doc = job_summary(job)

    def compose(self) -> ComposeResult:
        j = self.doc["job"]
        with VerticalScroll():
            title = (f"{self.job.title}: {j['ranks_loaded']} of {j['ranks_found']} ranks loaded, "
                     f"world size {j['world_size']}, backend {j['backend'] or 'unknown'}")
            yield Label(Text(one_line(title), style="bold"))
            yield Label("GPU time per rank (Enter: show the rank)", classes="title")
            yield DataTable(id="ranks", cursor_type="row", zebra_stripes=True)
            yield Label("Collectives matched across ranks (Enter: select it on the rank shown)", classes="title")
            yield DataTable(id="collectives", cursor_type="row", zebra_stripes=True)
            yield Label("Stragglers (last to arrive most often first)", classes="title")
            yield DataTable(id="stragglers", cursor_type="row", zebra_stripes=True)
            for w in self.doc["warnings"]:
                yield Label(Text(one_line(f"warning: {w}"), style="yellow"))
        yield Footer()

    @only_while_shown  # keys typed ahead may have closed it already
    def on_mount(self) -> None:
        ranks = self.query_one("#ranks", DataTable)
        ranks.add_columns("rank", *(h for _, h in _TL), "collectives", "status")
        for r in self.doc["ranks"]:
            tl = r.get("gpu_timeline") or {}
            label = Text(str(r["rank"]), style="bold" if r["rank"] == self.current_rank else "")
            if r["error"]:
                status = Text("failed", style="red")
            elif r.get("foreign"):
                status = Text("other run?", style="yellow")
            else:
                status = Text("shown" if r["rank"] == self.current_rank else "ok")
            ranks.add_row(label, *(_n(tl.get(k)) for k, _ in _TL), _n(r["collectives"]), status, key=str(r["rank"]))
        colls = self.query_one("#collectives", DataTable)
        colls.add_columns("collective", "group", "seq", "ranks", f"start skew {units.US}", f"end skew {units.US}",
                          f"min {units.US}", f"max {units.US}",
                          "last rank", "size", "algorithm", f"busbw {units.GBPS}")
        for i, c in enumerate(self.doc["collectives"]):
            ident = str(c["seq"]) if c["seq"] is not None else f"#{c['index']}"
            algo = "/".join(x for x in (c["algorithm"], c["protocol"]) if x)
            colls.add_row(Text(one_line(c["name"])), Text(one_line(c["group"] or "-")), ident, _n(c["ranks"]),
                          _n(c["start_skew_us"], 1),
                          _n(c["end_skew_us"], 1), _n(c["min_dur_us"], 1), _n(c["max_dur_us"], 1),
                          _n(c["last_rank"]), _size(c["bytes"]), Text(one_line(algo)), _n(c["busbw_gbps"],
                                                                                          2), key=str(i))
        strag = self.query_one("#stragglers", DataTable)
        strag.add_columns("rank", "last to arrive", "collectives", f"median late {units.US}", f"late {units.US} (sum)",
                          f"wait caused {units.US}")
        for s in self.doc["stragglers"]:
            strag.add_row(_n(s["rank"]), _n(s["times_last"]), _n(s["collectives"]), _n(s.get("median_late_us"), 1),
                          _n(s["late_us"], 1), _n(s["wait_caused_us"], 1), key=str(s["rank"]))
        ranks.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = int(event.row_key.value)
        if event.data_table.id == "collectives":
            self.dismiss(("collective", key))
        else:
            self.dismiss(("rank", key))

    def action_close(self) -> None:
        self.dismiss(None)
