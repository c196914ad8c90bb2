"""The findings screen's models without an app (ui/view is Textual-free): the row source's
node ids (findings, then each finding's evidence rows), its columns in a job, the detail
model's sections, the detail pane's "Evidence of" section and the status line's part."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console
from rich.text import Text

from tracetui.findings import Finding, FindingsReport, Severity
from tracetui.ui.view.detail_section import render_sections
from tracetui.ui.view.evidence_detail import EvidenceDetail, evidence_section
from tracetui.ui.view.findings_detail import FindingsDetail, value_text
from tracetui.ui.view.findings_row_source import FindingsRowSource
from tracetui.ui.view.row_source import RowSource
from tracetui.ui.view.status_parts import findings_part, fit_status


def finding(rule: str, sev: Severity, stake: float | None, evidence: list[int], rank: int | None = None,
            per: list[float] | None = None, verdict: str = "three things") -> Finding:
    return Finding(rule=rule, title=rule.title(), severity=sev, verdict=verdict, count=len(evidence) or 1,
                   value=stake, unit="µs host", time_at_stake_us=stake,
                   stake_label="estimate: test" if stake is not None else "not estimated",
                   evidence=np.array(evidence, dtype=np.int64), hint="Do less.", rank=rank,
                   evidence_us=None if per is None else np.array(per))


def report(findings: list[Finding], ranks: list[int] | None = None) -> FindingsReport:
    return FindingsReport("t.json", findings, [{"id": f.rule, "title": f.title, "enabled": True} for f in findings],
                          ranks=ranks)


def text(sections) -> str:
    console = Console(width=100, record=True, color_system=None, file=io.StringIO())
    console.print(render_sections(sections))
    return " ".join(console.export_text().split())


def test_node_ids_are_findings_then_their_evidence_rows():
    rep = report([finding("scalar_sync", Severity.WARNING, 300.0, [7, 9, 11], per=[100.0, 150.0, 50.0]),
                  finding("trace_health", Severity.INFO, None, []),
                  finding("blocking_sync", Severity.ERROR, 20.0, [4])])
    src = FindingsRowSource(rep)
    assert isinstance(src, RowSource)
    assert src.root_nodes().tolist() == [0, 1, 2]
    assert src.child_nodes(0).tolist() == [3, 4, 5] and src.child_nodes(1).tolist() == [] \
        and src.child_nodes(2).tolist() == [6]
    assert [src.parent_of(n) for n in range(7)] == [-1, -1, -1, 0, 0, 0, 2]
    assert [src.finding_of(n) for n in (0, 4, 6)] == [(0, -1), (0, 1), (2, 0)]
    assert src.evidence_node(0, 2) == 5
    assert src.column_headers() == ["~at stake", "count"]
    assert src.row_columns(0) == ["~300 µs", "3"] and src.row_columns(1) == ["-", "1"]
    assert src.row_columns(4) == ["~150 µs", ""]  # the evidence's own share
    assert src.row_label(0).plain.startswith("warning scalar_sync  three things")
    assert src.row_label(4).plain == "event 9"  # no trace on screen: named by id
    assert src.node_weight(0) == 300.0 and src.node_weight(1) == 0.0 and src.node_weight(5) == 50.0


def test_a_jobs_findings_show_their_rank_and_name_other_ranks_events_by_id():
    rep = report([finding("straggler", Severity.WARNING, 1300.0, [42], rank=7)], ranks=list(range(8)))
    src = FindingsRowSource(rep, kt=None, rank=0)
    assert src.column_headers() == ["~at stake", "count", "rank"] and src.row_columns(0)[-1] == "7"
    assert src.row_label(1).plain == "event 42 on rank 7"
    shown = text(FindingsDetail(src).sections(0, 100))
    assert "Enter: switch to rank 7 and go to the first" in shown and "Rank 7" in shown


def test_the_detail_of_a_finding_and_of_an_empty_report():
    rep = report([finding("scalar_sync", Severity.WARNING, 29_200.0, [1, 2])])
    shown = text(FindingsDetail(FindingsRowSource(rep)).sections(0, 100))
    assert "At stake ~29.2 ms (estimate: test)" in shown and "Value 29.2 ms host" in shown
    assert "Method" in shown and "Thresholds min_idle_us 50.0 µs" in shown and "Fix Do less." in shown
    nothing = text(FindingsDetail(FindingsRowSource(report([]))).sections(None, 100))
    assert nothing.startswith("No findings: the 0 rules that ran found nothing")
    assert value_text(64.0, "events") == "64 events" and value_text(12.5, "% of kernel time") == "12.5 % of kernel time"


def test_the_detail_pane_names_the_findings_an_event_is_evidence_of():
    rep = report([finding("blocking_sync", Severity.WARNING, 500.0, [3, 8, 12], per=[100.0, 300.0, 100.0]),
                  finding("trace_health", Severity.INFO, None, [8])])
    section = evidence_section(rep, 8)
    assert section.heading == "Evidence of 2 findings"
    shown = text([section])
    assert "warning blocking_sync ~500 µs evidence 2 of 3; this event ~300 µs" in shown
    assert "info trace_health - evidence 1 of 1" in shown
    assert evidence_section(rep, 5) is None

    class Base:
        def sections(self, node, width):
            return []

    model = EvidenceDetail(Base(), lambda node: node - 100)  # tree node -> Kineto event
    assert model.sections(108, 80) == []  # findings not known yet
    model.report = rep
    assert [s.heading for s in model.sections(108, 80)] == ["Evidence of 2 findings"]
    assert model.sections(99, 80) == []  # no Kineto event


def test_the_status_part_is_short_until_there_is_room():
    counts = {"error": 1, "warning": 7, "info": 0}
    part = findings_part(counts)
    assert [f.plain for f in part.forms] == ["findings: 1 error, 7 warnings (F)", "F: 1E 7W"]
    title = [findings_part(None)]
    assert fit_status([*title], 80).plain == "findings: checking…"
    wide = fit_status([findings_part(counts)], 80).plain
    narrow = fit_status([findings_part(counts)], 12).plain
    assert (wide, narrow) == ("findings: 1 error, 7 warnings (F)", "F: 1E 7W")
    assert findings_part({"error": 0, "warning": 0, "info": 0}, job=True).forms[0].plain == "job findings: none (F)"
    assert findings_part(None, failed=True).forms[-1].plain == "F: failed"
    assert isinstance(part.forms[0], Text)
