"""Browsing a whole job: open the shared 8-rank job's folder, the status line says
``rank R/N``, ``r`` switches rank, ``x`` on a NCCL kernel goes to the same collective on
another rank (the picker starts on the rank that arrived last), ``X`` shows the
cross-rank screen, and the palette lists the ranks."""

from __future__ import annotations

import asyncio
import os

import pytest
from pilot import open_app, press, screen_text
from shared_traces import SHARED

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen
from tracetui.ui.job.job_summary_screen import JobSummaryScreen
from tracetui.ui.job.rank_picker import RankPicker

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
pytestmark = pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")


async def shown_rank(app, pilot, rank: int, timeout: float = 60.0) -> MainScreen:
    """Wait until the browser shows ``rank``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await app.workers.wait_for_complete()
        await pilot.pause()
        s = app.screen
        if isinstance(s, MainScreen) and s.job_rank is not None and s.job_rank[0] == rank:
            await pilot.pause()
            return s
        await asyncio.sleep(0.05)
    raise AssertionError(f"rank {rank} not shown; screen {app.screen!r}")


async def test_open_job_switch_rank_and_jump_to_the_same_collective():
    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        assert app.rank == 0 and len(app.job.ranks) == 8
        assert screen.status_text().plain.startswith("rank 0/8 · rank0_kineto.json.gz + rank0_et.json.gz")
        # in a job, help offers the rank keys (on a single trace it leaves them out: test_ui_help_bindings)
        await press(pilot, "question_mark")
        offered = {desc.split(": ", 1)[0] for _, section in app.screen.sections for _, _, desc in section}
        assert {"Rank", "Collective on another rank", "Cross-rank summary"} <= offered
        await press(pilot, "escape")
        # r: the rank picker; rank 3 is three rows down
        await press(pilot, "r")
        assert isinstance(app.screen, RankPicker)
        await press(pilot, "down", "down", "down", "enter")
        screen = await shown_rank(app, pilot, 3)
        assert os.path.basename(screen.linked.kineto.path) == "rank3_kineto.json.gz"
        assert "rank 3/8" in screen_text(app)
        # x on rank 3's first all_to_all kernel: the picker offers the 7 other ranks, starting on rank 7 (last)
        first = app.job.collectives[0]
        screen.select(first["members"][3]["kernel"])
        await pilot.pause()
        await press(pilot, "x")
        picker = app.screen
        assert isinstance(picker, RankPicker)
        assert [r for r, _, ok in picker.rows if ok] == [0, 1, 2, 4, 5, 6, 7]
        await press(pilot, "enter")
        screen = await shown_rank(app, pilot, 7)
        await pilot.pause()
        kernel7 = first["members"][7]["kernel"]
        assert screen.current == kernel7
        assert screen.linked.kineto.name(kernel7).startswith("ncclKernel_SendRecv")
        # x on something that is not a collective: a warning, no picker
        screen.select(int(screen.source.root_nodes()[0]))
        await pilot.pause()
        await press(pilot, "x")
        assert isinstance(app.screen, MainScreen)
        # the palette lists the other ranks
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Rank 0" in titles and "Rank 7" not in titles


async def test_cross_rank_screen():
    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "X")
        js = app.screen
        assert isinstance(js, JobSummaryScreen)
        assert js.query_one("#ranks").row_count == 8 and js.query_one("#collectives").row_count == 8
        text = screen_text(app)
        assert "Collectives matched across ranks" in text and "all_reduce" in text and "RING/LL" in text
        # Enter on the collectives table's second row selects that all_to_all's kernel on rank 0
        await press(pilot, "tab", "down", "enter")
        screen = app.screen
        assert isinstance(screen, MainScreen) and app.rank == 0
        await pilot.pause()
        assert screen.current == app.job.collectives[1]["members"][0]["kernel"]
        # Enter on the rank table's third row shows rank 2
        await press(pilot, "X")
        await press(pilot, "down", "down", "enter")
        await shown_rank(app, pilot, 2)
