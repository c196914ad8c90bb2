"""The answers of a driver-call trace inside the browser (``s``): the driver tabs of the
summaries screen (``ui/view/driver_tables.py``) on a file written by the test, and after
the Kineto tabs in a linked trace; Enter goes to the events a row counts."""

from __future__ import annotations

import pytest
from driver_files import bpftrace_file
from driver_ui_files import write_linked
from pilot import open_summaries, press, screen_text

from tracetui.driver import What
from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen


@pytest.mark.slow
async def test_driver_answers_calls_and_phases_tabs(tmp_path):
    f = bpftrace_file()
    path = tmp_path / "trace_cuda.jsonl"
    f.write(path)
    app = TraceApp([str(path)], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        # a driver-call trace alone: only its own tabs (no empty Kineto tables)
        assert [t.key for t in summ.tables] == ["d-answers", "d-calls", "d-phases", "d-ioctls", "d-transfers"]
        text = screen_text(app)
        assert "Answers" in text and "Kernel launches" in text and "Kernels per inference iteration" in text
        answers = {r[0]: r[1] for r in summ.tables[0].rows}
        assert answers["Kernel launches"].startswith("9 ")
        assert answers["Kernels per inference iteration"].startswith("3 (median of 3 iterations")
        calls = summ.tables[1]
        row = next(i for i, r in enumerate(calls.rows) if r[0] == "cuLaunchKernel")
        assert calls.rows[row][2] == 9 and calls.rows[row][5] == 1  # 9 calls, one returned an error
        await press(pilot, "2")
        for _ in range(row):
            await press(pilot, "down")
        await press(pilot, "enter")
        main = app.screen
        assert isinstance(main, MainScreen)
        kt = main.linked.kineto
        seen = {main.current}
        for _ in range(8):
            await press(pilot, "n")
            seen.add(main.current)
        assert len(seen) == 9 and all(kt.name(n) == "cuLaunchKernel" for n in seen)
        # phases: Enter lands on a phase span
        await press(pilot, "s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await press(pilot, "3")
        await press(pilot, "enter")
        assert kt.what_of(app.screen.current) == What.PHASE


@pytest.mark.slow
async def test_linked_trace_has_kineto_tabs_then_driver_tabs(tmp_path):
    kineto, driver = write_linked(tmp_path)
    app = TraceApp([str(kineto), str(driver)], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        keys = [t.key for t in summ.tables]
        assert keys[:6] == ["kernels", "ops", "categories", "roofline", "gaps", "launches"]
        assert keys[6:] == ["d-answers", "d-calls", "d-phases", "d-ioctls", "d-transfers"]
        await press(pilot, "7")
        assert "Answers" in screen_text(app)
