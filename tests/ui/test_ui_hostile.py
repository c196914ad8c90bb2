"""The browser never writes trace text to the terminal raw (issues 24 and 40).

The app runs under Pilot on hostile copies of shared traces (:mod:`hostile`: OSC 52, OSC 2,
terminal queries, C1 controls, BEL, CR, BS, DEL, NUL, bidi controls and marks and invisible
characters in every string the trace shows and in the file name) and is walked through
every screen a user reaches with keys: the tree with every row expanded, the detail pane of
each row, ``>``/``<`` with their notes and toasts,
the timeline's lanes, the raw args panel (and a copy), every summaries tab, warnings, help,
search, the export dialog, the load-error dialog, the findings screen (its rows, evidence
rows and detail, Enter to the evidence), and a job's rank picker, cross-rank screen and
findings.  After each step two things are checked:

* the segments of every strip on screen (what the widgets drew) hold no control, bidi or
  invisible character (:func:`hostile.unsafe_characters`): trace text was escaped where it
  became text (``\\x1b``, ``\\u200b`` shown instead);
* the full-screen update Textual would write to the terminal holds none either, once its own
  colour and cursor sequences are removed (what the terminal would act on).
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from hostile import (
    EVIL_NAME,
    terminal_residue,
    unsafe_characters,
    write_hostile_driver,
    write_hostile_kineto,
    write_hostile_pair,
    write_lookalike_kineto,
)
from pilot import error_dialog_shown, open_app, open_diff, press, screen_text
from shared_traces import SHARED
from textual.widgets import Input

from tracetui.diff.runs import DiffRequest
from tracetui.ui.app import TraceApp
from tracetui.ui.browser.export_dialog import ExportDialog


def check(app, where: str) -> None:
    comp = app.screen._compositor
    drawn = [seg.text for strip in comp.render_strips() for seg in strip if unsafe_characters(seg.text, allow="")]
    assert not drawn, (where, type(app.screen).__name__, [repr(t[:80]) for t in drawn[:3]])
    written = comp.render_full_update().render_segments(app.console)
    assert terminal_residue(written) == [], (where, type(app.screen).__name__)


async def walk(app, pilot, label: str) -> set[str]:
    """Every screen a user reaches with keys; returns the names of the screens checked."""
    seen = set()

    async def step(*keys: str, where: str) -> None:
        await press(pilot, *keys)
        check(app, f"{label}: {where}")
        seen.add(type(app.screen).__name__)

    await open_app(app, pilot)
    check(app, f"{label}: opened")
    await step("asterisk", where="expand all")
    for i in range(15):
        await step("down", where=f"row {i}")
    await step(">", where="> jump")
    await step("<", where="< jump")
    await step("a", where="raw args")
    await step("down", "down", "down", "C", where="copy a name")
    await step("escape", where="raw args closed")
    await step("s", where="summaries")
    await pilot.pause(0.2)
    for i in range(7):
        await step("right", where=f"summaries tab {i}")
    await step("escape", "w", where="warnings")
    await step("escape", "t", where="timeline")
    for i in range(6):
        await step("down", where=f"lane {i}")
    await step("t", "e", where="export dialog")
    await step("escape", "question_mark", where="help")
    await step("escape", "slash", "o", "d", "d", "enter", where="search")
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("which", ["kineto", "pair", "driver"])
async def test_every_screen_of_a_hostile_trace_writes_no_control_character(which, tmp_path):
    if which == "kineto":
        paths = [write_hostile_kineto(tmp_path)]
    elif which == "pair":
        paths = list(write_hostile_pair(tmp_path))
    else:
        paths = [write_hostile_driver(tmp_path)]
    app = TraceApp([str(p) for p in paths], use_cache=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        seen = await walk(app, pilot, which)
        assert {"MainScreen", "RawArgsScreen", "SummariesScreen", "WarningsScreen", "ExportDialog",
                "HelpScreen"} <= seen
        text = screen_text(app)
    assert "\\x1b" in text  # shown, escaped: not dropped


@pytest.mark.slow
async def test_the_findings_of_a_hostile_trace_are_shown_safely(tmp_path):
    """BERT made hostile: every finding's verdict names ops and Python frames of the trace, its
    details and evidence rows name kernels."""
    trace = write_hostile_kineto(tmp_path, "h100_bert_inference.json.gz")
    app = TraceApp([str(trace)], use_cache=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await open_app(app, pilot)
        assert app.findings_run.report.findings, "the hostile BERT has findings"
        check(app, "status line with the findings count")
        await press(pilot, "F")
        check(app, "findings screen")
        for i in range(4):
            await press(pilot, "space", "down", "down")
            check(app, f"findings row {i} and its evidence")
        await press(pilot, "home", "down", "enter")
        check(app, "the evidence in the tree, its findings in the detail pane")
        assert "Evidence of" in app.screen.detail.text()
        assert "\\x1b" in screen_text(app)


@pytest.mark.slow
async def test_the_memory_screen_of_a_hostile_trace_writes_no_control_character(tmp_path):
    """A hostile copy of h100_bert_inference (its ``[memory]`` events kept, the ops that own
    them hostile): the memory tracks, the memory screen's tabs and tables, Enter to an owner,
    the peak keys and the detail pane's memory section."""
    from tracetui.ui.memory.memory_screen import MemoryScreen

    app = TraceApp([str(write_hostile_kineto(tmp_path, "h100_bert_inference.json.gz"))], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        check(app, "memory tracks")
        await press(pilot, "M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen)
        check(app, "memory screen")
        assert "\\x1b]52" in screen_text(app)  # the owners' names, escaped
        for keys, where in ((("tab",), "top allocating ops"), (("2",), "cpu tab"), (("1", "enter"), "an owner"),
                            (("circumflex_accent",), "^ peak"), (("M",), "memory again"), (("p",), "p peak")):
            await press(pilot, *keys)
            await app.workers.wait_for_complete()
            await pilot.pause()
            check(app, where)


@pytest.mark.slow
async def test_the_critical_path_of_a_hostile_trace(tmp_path):
    """P on a hostile trace: the path screen's head, rows, detail and timeline in every view,
    then the main screen with its Path column and the walk along the path."""
    from tracetui.ui.critical.critical_path_screen import CriticalPathScreen

    app = TraceApp([str(write_hostile_kineto(tmp_path))], use_cache=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "P")
        for _ in range(400):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, CriticalPathScreen):
                break
            await asyncio.sleep(0.02)
        assert isinstance(app.screen, CriticalPathScreen)
        check(app, "path screen")
        assert "\\x1b" in screen_text(app)  # the window (the file's name) and segment names, escaped
        for view in ("by kind", "least slack"):
            await press(pilot, "v", "down", "right", "down", "down")
            check(app, f"path screen: {view}")
        await press(pilot, "v", "n", "n", "n", "enter")
        check(app, "main screen with the path")
        await press(pilot, "n", "n", "N")
        check(app, "walking the path")
        await press(pilot, "t", "c")
        check(app, "the path on the CPU threads")


async def test_the_load_error_dialog_names_a_hostile_file_safely(tmp_path):
    bad = tmp_path / f"{EVIL_NAME}\x9b.json"
    bad.write_text("not a trace")
    app = TraceApp([str(bad)], use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await error_dialog_shown(app, pilot)
        check(app, "error dialog")
        # the path wraps inside the dialog where the temp folder's length puts the break: read the
        # dialog's text with its frame and line breaks taken out
        inner = "".join(line.strip(" █") for line in screen_text(app).splitlines())
        assert "\\x1b]2;title" in inner


async def test_a_hostile_job_rank_picker_and_cross_rank_screen(tmp_path):
    """Two ranks of the shared job, hostile (names, thread names, distributedInfo backend)."""
    job = SHARED / "multirank" / "param_dlrm_8ranks"
    for r in (0, 1):
        write_hostile_kineto(tmp_path, job / f"rank{r}_kineto.json.gz", file_name=f"rank{r}_{EVIL_NAME}.json")
    app = TraceApp([], job_inputs=[str(tmp_path)], workers=1, use_cache=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await open_app(app, pilot)
        check(app, "job: rank 0")
        await press(pilot, "r")
        check(app, "job: rank picker")
        await press(pilot, "escape", "X")
        await pilot.pause(0.2)
        check(app, "job: cross-rank screen")
        await press(pilot, "tab")
        check(app, "job: collectives")
        await press(pilot, "escape", "F")
        assert type(app.screen).__name__ == "FindingsScreen"
        check(app, "job: findings")
        await press(pilot, "down", "space", "down")
        check(app, "job: findings and evidence rows")


@pytest.mark.slow
async def test_every_screen_of_a_hostile_diff_writes_no_control_character(tmp_path):
    """Two ranks of the shared job, hostile, in the diff browser: the merged tree with every
    row, each side's event detail, the sides' browsers, the summary deltas, warnings, help
    and search."""
    job = SHARED / "multirank" / "param_dlrm_8ranks"
    a, b = (write_hostile_kineto(tmp_path, job / f"rank{r}_kineto.json.gz", file_name=f"rank{r}_{EVIL_NAME}.json")
            for r in (0, 1))
    app = TraceApp([], use_cache=False, diff=DiffRequest((str(a),), (str(b),), use_cache=False))
    seen = set()
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        async def step(*keys: str, where: str) -> None:
            await press(pilot, *keys)
            check(app, f"diff: {where}")
            seen.add(type(app.screen).__name__)

        await open_diff(app, pilot)
        check(app, "diff: opened")
        await step("asterisk", where="expand all")
        for i in range(12):
            await step("down", where=f"row {i}")
        await step("a", where="A's event detail")
        await step("b", where="B's event detail")
        await step("o", "f", where="sorted, regressions")
        await step("f", "A", where="A's browser")
        await step("B", where="B's browser")
        await step("D", where="back to the diff")
        await step("s", where="summary deltas")
        await pilot.pause(0.2)
        for i in range(6):
            await step("right", where=f"summary deltas tab {i}")
        await step("escape", "w", where="warnings")
        await step("escape", "question_mark", where="help")
        await step("escape", "slash", "e", "m", "b", "enter", where="search")
        text = screen_text(app)
    assert {"DiffScreen", "DiffSideScreen", "SummariesScreen", "WarningsScreen", "HelpScreen"} <= seen
    assert "\\x1b" in text


async def test_the_export_dialog_asks_before_overwriting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace = write_hostile_kineto(tmp_path)
    app = TraceApp([str(trace)], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "e")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-path", Input).value = "report.md"
        target = tmp_path / "report.md"
        target.write_text("yesterday's report")
        await pilot.pause()
        await press(pilot, "enter")
        assert app.screen is dialog  # asked, not written
        assert "report.md exists: Enter again to replace it, or change the name" in screen_text(app)
        check(app, "overwrite question")
        assert target.read_text() == "yesterday's report"
        await press(pilot, "enter")  # confirmed
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if target.read_text() != "yesterday's report":
                break
            await asyncio.sleep(0.05)
        assert target.read_text().startswith("#")  # the Markdown report replaced it
        # a changed name asks again; a folder is refused
        await press(pilot, "e")
        dialog = app.screen
        field = dialog.query_one("#export-path", Input)
        os.mkdir(tmp_path / "folder.md")
        field.value = "folder.md"
        await pilot.pause()
        await press(pilot, "enter")
        assert app.screen is dialog and "folder.md is a folder: give a file name" in screen_text(app)
        field.value = target.name
        await pilot.pause()
        await press(pilot, "enter")
        assert app.screen is dialog and "exists: Enter again" in screen_text(app)
        await press(pilot, "escape")
    assert json.dumps(target.read_text())  # still the report written above


def test_the_last_guard_drops_what_a_widget_forgot():
    """A strip still holding control characters (a widget that skipped the sanitiser) is
    written without them, and its cells stay where they were (control characters take none)."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style
    from textual.strip import Strip

    from tracetui.ui.textual_guards import install_guards

    install_guards()
    strip = Strip([Segment("name\x1b]52;c;eA==\x07", Style(bold=True)), Segment(" \x9b6n|")])
    written = strip.render(Console(color_system="truecolor"))
    assert terminal_residue(written) == [] and "name]52;c;eA==" in written and " 6n|" in written
    assert strip.cell_length == Strip([Segment("name]52;c;eA==")]).cell_length + 4
    # bidi and invisible characters (issue 40): blanked, each by the cells it takes (U+115F: two)
    strip = Strip([Segment("\u202eaten::mm\u200b\ufeff|"), Segment("\u115f|")])
    written = strip.render(Console(color_system="truecolor"))
    assert terminal_residue(written) == [] and "aten::mm|  |" in written
    assert strip.cell_length == len("aten::mm|") + 3


@pytest.mark.slow
async def test_the_query_bar_and_result_screen_of_a_hostile_trace(tmp_path):
    """``:``: result rows of hostile names, a column named by one (PIVOT), the cell line, the
    status after f, and DuckDB's message quoting a hostile name in the bar."""
    from tracetui.ui.query.query_bar import QueryBar
    from tracetui.ui.query.query_result_screen import QueryResultScreen

    app = TraceApp([str(write_hostile_kineto(tmp_path))], use_cache=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        main = await open_app(app, pilot)

        async def query(sql: str) -> None:
            await press(pilot, "colon")
            main.query_one(QueryBar).input.value = sql
            await press(pilot, "enter")
            deadline = asyncio.get_running_loop().time() + 120.0  # the first query starts DuckDB
            while not (isinstance(app.screen, QueryResultScreen) or not main.query_one(QueryBar).running):
                assert asyncio.get_running_loop().time() < deadline, "the query did not answer in 120 s"
                await asyncio.sleep(0.05)
                await pilot.pause()
            await pilot.pause()

        await query("SELECT event, name, lane, category FROM events WHERE name LIKE '%pwned%' LIMIT 40")
        assert isinstance(app.screen, QueryResultScreen) and len(app.screen.rows) == 40
        check(app, "query: result rows")
        await press(pilot, "right", "down")
        check(app, "query: cell line")
        assert "\\x1b]52;c;" in screen_text(app)
        await press(pilot, "f")
        check(app, "query: tree filtered to the result")
        await query("PIVOT (SELECT name FROM kernels LIMIT 3) ON name USING count(*)")
        check(app, "query: columns named by the trace")
        await press(pilot, "escape")
        await query("SELECT CAST(name AS INTEGER) FROM kernels")
        assert app.screen is main and "Conversion Error" in screen_text(app)
        check(app, "query: DuckDB's message quoting a name")


@pytest.mark.slow
async def test_the_summaries_screen_shows_lookalike_names_apart(tmp_path):
    """Issue 40's masquerade pair (:func:`hostile.write_lookalike_kineto`) at 80x24: the kernels
    tab and the ops tab each show the pair as two different names (cut to the name column:
    ``mm_kernel\\u2…`` beside ``mm_kernel``, ``aten::m…`` beside ``aten::mm``; without the
    escape both read ``aten::mm``), and Enter on the first takes the tree to an op whose row
    reads ``aten::mm\\u200b``."""
    from pilot import open_summaries

    def names(count_column: int, counts: set[str]) -> list[str]:
        """The name cells of the rows whose count is one of ``counts``."""
        rows = [line.split() for line in screen_text(app).splitlines()]
        return [r[0] for r in rows if len(r) > count_column and r[count_column] in counts]

    app = TraceApp([str(write_lookalike_kineto(tmp_path))], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_app(app, pilot)
        await open_summaries(app, pilot)
        check(app, "kernels tab")
        kernels = names(2, {"9", "8"})  # name, category, count
        assert len(kernels) == len(set(kernels)) == 2 and "mm_kernel" in kernels
        assert any(k.startswith("mm_kernel\\u2") for k in kernels)
        await press(pilot, "2")
        check(app, "ops tab")
        ops = names(1, {"13"})  # name, count
        assert len(ops) == len(set(ops)) == 2 and "aten::mm" in ops
        await press(pilot, "enter")  # the first row (most GPU time): the op with U+200B
        check(app, "the tree at its longest occurrence")
        assert "aten::mm\\u200b" in screen_text(app)
