"""The findings in the browser (issue 29): ``F`` (and the palette) opens the findings screen,
sorted by time at stake; Enter goes to a finding's evidence in the tree and ``n``/``N`` cycle
it there; the status line counts the findings by severity, computed after the first paint;
the detail pane of an event names the findings it is evidence of; a whole job's findings
switch rank.  SVG snapshots at 80x24 and 120x40 (update with --snapshot-update and look at
them).

Facts read from ``h100_bert_inference.json.gz`` with gzip + json: one ``aten::is_nonzero``
op (29.55 µs), the one ``.item()``-style sync of the step.  ``tracetui check`` on it gives
4 findings: launch_bound (2 evidence kernels), scalar_sync (that op), trace_health and
low_occupancy (13 kernels); the rules' numbers are checked against the raw file in
tests/core/test_findings_shared.py."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import threading

import pytest
from pilot import BERT, SIZES, loaded, open_app, press, screen_text, toasts
from shared_traces import SHARED

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen
from tracetui.ui.findings.findings_run import FindingsRun
from tracetui.ui.findings.findings_screen import FindingsScreen

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


def raw_ops(path: str, name: str) -> list[dict]:
    doc = json.loads(gzip.open(path).read())
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("name") == name]


async def open_findings(app, pilot) -> FindingsScreen:
    await press(pilot, "F")
    await pilot.pause()
    assert isinstance(app.screen, FindingsScreen), screen_text(app)
    return app.screen


async def test_f_lists_the_findings_and_enter_goes_to_the_evidence():
    (item,) = raw_ops(BERT, "aten::is_nonzero")
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        report = app.findings_run.report
        assert [f.rule for f in report.findings] == ["launch_bound", "scalar_sync", "trace_health", "low_occupancy"]
        assert report.by_severity() == {"error": 0, "warning": 3, "info": 1}
        assert "F: 3W 1I" in main.status_text().plain  # counted by severity, after the first paint
        assert "Findings" in [c.title for c in app.get_system_commands(main)]  # in the palette too
        fs = await open_findings(app, pilot)
        text = screen_text(app)
        assert "4 findings (0 error, 3 warning, 1 info)" in text and "~at stake" in text
        rows = [line for line in text.splitlines() if line.startswith("▸ ")]
        assert [r.split()[2] for r in rows] == ["launch_bound", "scalar_sync", "trace_health", "low_occupancy"]
        assert "~2.46 ms" in rows[0] and "~154 µs" in rows[1] and rows[2].rstrip().endswith("-       1")
        # the selected finding's method, thresholds and fix below the list
        await press(pilot, "down")
        detail = " ".join(fs.detail.text().split())
        assert "scalar_sync" in detail and "aten::is_nonzero" in detail
        assert "Method" in detail and "Thresholds min_idle_us 50.0 µs" in detail and "Fix Keep the value" in detail
        # Enter: the op in the tree; the detail pane names the finding it is evidence of
        await press(pilot, "enter")
        await pilot.pause()
        assert app.screen is main
        kt = main.linked.kineto
        assert main.current == int(report.findings[1].evidence[0])
        assert kt.name(main.current) == "aten::is_nonzero" and kt.dur[main.current] == pytest.approx(item["dur"])
        pane = " ".join(main.detail.text().split())
        assert "Evidence of 1 finding" in pane and "warning scalar_sync ~154 µs evidence 1 of 1" in pane
        assert "scalar_sync: 1 evidence event" in main.status_text().plain
        # launch_bound: Enter on the finding, then n and N walk its two evidence kernels in the tree
        await open_findings(app, pilot)
        await press(pilot, "enter")
        await pilot.pause()
        evidence = sorted(int(e) for e in report.findings[0].evidence)
        first = main.current
        assert first == min(evidence, key=main.source.tree_position)  # the first in the tree
        await press(pilot, "n")
        second = main.current
        assert sorted([first, second]) == evidence
        assert "launch_bound: evidence" in main.detail.text()
        await press(pilot, "n")
        assert main.current == first  # wraps
        await press(pilot, "N")
        assert main.current == second


@pytest.mark.slow
async def test_n_on_the_findings_screen_walks_the_evidence_rows():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        fs = await open_findings(app, pilot)
        await press(pilot, "end")  # low_occupancy: 13 kernels, not estimated
        f = fs.source.findings[3]
        assert f.rule == "low_occupancy" and f.evidence.size == 13 and f.time_at_stake_us is None
        await press(pilot, "n")
        tree = fs.tree
        assert tree.cursor_node == fs.source.evidence_node(3, 0)
        assert "Evidence 1 of 13 of" in fs.detail.text()
        await press(pilot, "N")  # wraps to the last
        assert tree.cursor_node == fs.source.evidence_node(3, 12)
        kt = app.screen_stack[-2].linked.kineto
        assert fs.source.row_label(tree.cursor_node).plain == kt.name(int(f.evidence[12]))
        # Enter on an evidence row: that very event
        await press(pilot, "enter")
        await pilot.pause()
        main = app.screen
        assert isinstance(main, MainScreen) and main.current == int(f.evidence[12])
        # Esc on the findings screen goes back without moving
        await open_findings(app, pilot)
        await press(pilot, "escape")
        assert app.screen is main and main.current == int(f.evidence[12])


@pytest.mark.slow
async def test_the_count_comes_after_the_first_paint(monkeypatch):
    """The findings worker never delays the browser: while it runs the status line says so,
    the tree moves, and ``F`` opens the list once the findings are known."""
    release = threading.Event()
    compute = FindingsRun.compute

    def slow(self, work, paths):
        release.wait(30)
        compute(self, work, paths)

    monkeypatch.setattr(FindingsRun, "compute", slow)
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        try:
            for _ in range(400):
                await pilot.pause()
                if isinstance(app.screen, MainScreen) and app.findings_run is not None:
                    break
                await asyncio.sleep(0.02)
            main = app.screen
            assert main.status_text().plain.endswith(" · F: …") and not app.findings_run.done  # checking
            before = main.current
            await press(pilot, "down")
            assert main.current != before  # browsing while the findings are computed
            await press(pilot, "F")
            assert app.screen is main and any("checking for findings" in t for t in toasts(app))
        finally:
            release.set()
        for _ in range(400):
            await pilot.pause()
            if isinstance(app.screen, FindingsScreen):
                break
            await asyncio.sleep(0.02)
        assert isinstance(app.screen, FindingsScreen)  # opened once known
        await press(pilot, "escape")
        assert "F: 3W 1I" in main.status_text().plain


async def test_a_bad_rules_file_is_said_and_browsing_goes_on(tmp_path, monkeypatch):
    rules = tmp_path / "findings.toml"
    rules.write_text("[no_such_rule]\nenabled = false\n")
    monkeypatch.setenv("TRACETUI_FINDINGS", str(rules))
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        assert main.status_text().plain.endswith(" · F: failed")
        await press(pilot, "F")
        assert app.screen is main
        said = " ".join(toasts(app))
        assert "findings failed" in said and "findings.toml" in said and "unknown rule 'no_such_rule'" in said


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_a_jobs_findings_switch_to_the_evidence_rank():
    """The 8-rank DLRM job: rank 7 arrives last at most all-to-alls (the straggler finding,
    checked against the raw kernel starts in tests/core/test_findings_straggler.py); Enter on
    it from rank 0 shows rank 7 at its late collective kernels, and n cycles them there."""
    from test_ui_job import shown_rank

    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        assert app.rank == 0
        report = app.findings_run.report
        assert report.ranks == list(range(8))
        assert "job findings" in main.status_text().plain or "F: " in main.status_text().plain
        fs = await open_findings(app, pilot)
        assert fs.source.column_headers() == ["~at stake", "count", "rank"]
        i = next(i for i, f in enumerate(report.findings) if f.rule == "straggler")
        f = report.findings[i]
        assert f.rank == 7
        fs.tree.select_node(i)
        await pilot.pause()
        assert "Enter: switch to rank 7" in fs.detail.text()
        await press(pilot, "enter")
        main = await shown_rank(app, pilot, 7)
        for _ in range(100):
            await pilot.pause()
            if main.current is not None and main.current in set(f.evidence.tolist()):
                break
            await asyncio.sleep(0.05)
        kt = main.linked.kineto
        assert main.current in set(f.evidence.tolist()) and "nccl" in kt.name(main.current).lower()
        await press(pilot, "n")
        assert main.current in set(f.evidence.tolist())
        assert "straggler" in main.status_text().plain


@pytest.mark.parametrize("size", SIZES)
def test_findings_screen_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), press=["F", "down"], terminal_size=size,
                        run_before=loaded)
