"""Issue 45: every table at 80x24 gives the name the room it needs first, and no two different
names are cut to the same text.  For each screen that shows a table (the summaries' tabs, the
diff's summary deltas, the query result, the job summary, memory, follow, the findings'
evidence) the names are read off the painted screen, where the table draws its name column,
and checked against the names the table was given (read from the raw file where the screen
shows them whole).  The cutting rule itself: tests/ui/test_table_fit.py."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re

import pytest
from diff_files import write_modified_bert
from pilot import BERT, open_app, open_by_key, open_diff, press, screen_text
from shared_traces import SHARED, kineto_path

from tracetui.ui.app import TraceApp
from tracetui.ui.row_table import RowTable
from tracetui.ui.summaries.summaries_screen import SummariesScreen
from tracetui.ui.view.table_fit import ELLIPSIS, GAP, LEFT, collapse_brackets

SIZE = (80, 24)
JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


def raw_names(path: str) -> set[str]:
    """Every event name of a Kineto trace, read with gzip + json."""
    return {e.get("name", "") for e in json.load(gzip.open(path))["traceEvents"]}


def row_table_names(app, table: RowTable) -> list[tuple[str, str]]:
    """(the name cell as painted, the name given) for each row of ``table`` on screen."""
    lines = screen_text(app).splitlines()
    fit = table.fit()
    name = table.name_column
    assert name is not None and name in fit.shown, (table.id, fit.hidden)
    k = fit.shown.index(name)
    region = table.scrollable_content_region
    x = region.x + LEFT + sum(fit.widths[:k]) + GAP * k
    out = []
    for y in range(1, region.height):
        pos = table.scroll_offset.y + y - 1
        if pos >= len(table.order):
            break
        out.append((lines[region.y + y][x:x + fit.widths[k]].rstrip(), table.cells[table.order[pos]][name]))
    return out


def check_names(pairs: list[tuple[str, str]]) -> int:
    """No two visible name cells are equal unless the names are; each cell is its name or a cut
    of it (its head and tail are the name's).  Returns how many are cut."""
    by_cell: dict[str, str] = {}
    cut = 0
    for drawn, full in pairs:
        assert by_cell.setdefault(drawn, full) == full, f"{drawn!r}: {by_cell[drawn]!r} and {full!r}"
        if drawn != full:
            cut += 1
            assert ELLIPSIS in drawn, (drawn, full)
            # the pieces between the …s are the name's (or its C++ brackets collapsed), in order
            assert any(_in_order(drawn.split(ELLIPSIS), text) for text in (full, collapse_brackets(full))), \
                (drawn, full)
    return cut


def _in_order(pieces: list[str], text: str) -> bool:
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


#: BERT (the H100 inference of most UI tests) and a ResNet training step on an MI300 (convolution
#: kernels and ops, the names issue 45 saw cut to "aten::a…" three times)
SUMMARIZED = [BERT, str(kineto_path("mi300_resnet_train_checkpointing.json.gz"))]


@pytest.mark.slow
@pytest.mark.parametrize("path", SUMMARIZED, ids=["bert", "mi300_resnet"])
async def test_every_summaries_tab_at_80_columns(path):
    names = raw_names(path)
    app = TraceApp([path], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_app(app, pilot)
        summ = await open_by_key(app, pilot, "s", SummariesScreen)
        cut = 0
        for i, t in enumerate(summ.tables):
            summ.action_tab(i)
            await pilot.pause()
            pairs = row_table_names(app, summ.table_widget)
            assert len(pairs) == min(len(t.rows), summ.table_widget.scrollable_content_region.height - 1), t.key
            cut += check_names(pairs)
            if t.key in ("kernels", "ops"):
                assert {full for _, full in pairs} <= names  # the names are the trace's
        assert cut  # the kernel names do not fit 80 columns: cut, and still told apart
        if path != BERT:
            return
        # the Top-ops tab of issue 45: empty columns give their room to the name
        summ.action_tab(next(i for i, t in enumerate(summ.tables) if t.key == "ops"))
        await pilot.pause()
        fit = summ.table_widget.fit()
        ops = next(t for t in summ.tables if t.key == "ops")
        assert (ops.columns.index(("nested", True)), "empty") in fit.hidden
        assert "hidden: nested (empty)" in screen_text(app)


@pytest.mark.slow
async def test_the_diffs_summary_deltas_at_80_columns(tmp_path):
    from tracetui.diff.runs import DiffRequest

    b = str(write_modified_bert(tmp_path / "bert_modified.json.gz"))
    app = TraceApp([], use_cache=False, diff=DiffRequest((BERT,), (b,), use_cache=False))
    async with app.run_test(size=SIZE) as pilot:
        await open_diff(app, pilot)
        await press(pilot, "s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        summ = app.screen
        assert isinstance(summ, SummariesScreen)
        cut = 0
        for i, t in enumerate(summ.tables):
            summ.action_tab(i)
            await pilot.pause()
            if summ.table_widget.name_column is None or not t.rows:
                continue
            cut += check_names(row_table_names(app, summ.table_widget))
        assert cut


async def _query(app, pilot, sql: str):
    from tracetui.ui.query.query_bar import QueryBar
    from tracetui.ui.query.query_result_screen import QueryResultScreen

    await press(pilot, "colon")
    bar = app.screen.query_one(QueryBar)
    bar.input.value = sql
    await press(pilot, "enter")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while not isinstance(app.screen, QueryResultScreen):
        assert loop.time() < deadline, screen_text(app)
        await asyncio.sleep(0.05)
        await pilot.pause()
    await pilot.pause()
    return app.screen


@pytest.mark.slow
async def test_the_query_result_at_80_columns_and_its_keys():
    """The names of BERT's kernels, with a number column that leaves them 40 cells: cut in the
    middle, never two to the same.  Without an event column the key bar and help leave out
    Enter and f (they do nothing there); with one they offer them."""
    from tracetui.ui.browser.help_screen import HelpScreen
    from tracetui.ui.key_bar import KeyBar
    from tracetui.ui.query.result_table import ResultTable

    names = raw_names(BERT)
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_app(app, pilot)
        screen = await _query(app, pilot, "SELECT DISTINCT name, repeat('x', 36) AS pad FROM kernels ORDER BY name")
        table = screen.query_one(ResultTable)
        m = table.model
        assert m.event_index is None
        lines = screen_text(app).splitlines()
        region = table.scrollable_content_region
        (c, w), *_ = m.shown_columns(table.first_col, region.width)
        pairs = [(lines[region.y + y][region.x:region.x + w].rstrip(), m.cell(y - 1, c))
                 for y in range(1, min(region.height, len(m) + 1))]
        assert {full for _, full in pairs} <= names
        assert check_names(pairs)
        keys = {desc for _, desc, _ in screen.query_one(KeyBar).entries()}
        assert not keys & {"Go to event", "Filter tree"} and "Edit query" in keys, keys
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_keys = {desc.split(": ", 1)[0] for _, section in app.screen.sections for _, _, desc in section}
        assert not help_keys & {"Go to event", "Filter tree"} and "Edit query" in help_keys, help_keys
        await press(pilot, "escape", "escape")
        screen = await _query(app, pilot, "SELECT name, event FROM kernels")
        assert screen.rows.event_index is not None
        keys = {desc for _, desc, _ in screen.query_one(KeyBar).entries()}
        assert {"Go to event", "Filter tree"} <= keys, keys


@pytest.mark.slow
async def test_memory_tables_at_80_columns():
    from tracetui.ui.memory.memory_screen import MemoryScreen

    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_app(app, pilot)
        await press(pilot, "M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen)
        tables = [t for t in app.screen.query(RowTable) if t.region.height]
        assert len(tables) == 2
        for t in tables:
            pairs = row_table_names(app, t)
            assert pairs and all(full.startswith("aten::") for _, full in pairs)
            check_names(pairs)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_job_summary_tables_at_80_columns():
    from tracetui.ui.job.job_summary_screen import JobSummaryScreen

    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=SIZE) as pilot:
        await open_app(app, pilot)
        await press(pilot, "X")
        assert isinstance(app.screen, JobSummaryScreen)
        seen = 0
        for t in app.screen.query(RowTable):
            if t.region.height > 1 and t.name_column is not None:
                seen += 1
                check_names(row_table_names(app, t))
        assert seen >= 2  # the ranks and the collectives on screen


@pytest.mark.slow
async def test_follow_table_at_80_columns(tmp_path):
    """Three cycles of BERT: the top kernel column (the name) shows the same kernel the same
    way, and the other columns keep their numbers whole."""
    from trace_writer import handler_name

    from tracetui.follow.follower import FollowRequest
    from tracetui.ui.follow.follow_screen import FollowScreen

    data = open(BERT, "rb").read()
    for k in range(3):
        (tmp_path / handler_name(k)).write_bytes(data)
        os.utime(tmp_path / handler_name(k), (0, 0))
    app = TraceApp([str(tmp_path)], follow=FollowRequest(str(tmp_path), interval=0.1))
    async with app.run_test(size=SIZE) as pilot:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while not (isinstance(app.screen, FollowScreen) and len(app.screen.cycles) == 3):
            assert loop.time() < deadline, screen_text(app)
            await pilot.pause(0.05)
        await pilot.pause()
        pairs = row_table_names(app, app.screen.table)
        assert len(pairs) == 3 and len({d for d, _ in pairs}) == 1
        check_names(pairs)


@pytest.mark.slow
async def test_findings_evidence_names_at_80_columns():
    """b200x8_eager's first finding lists 5 evidence kernels; their names (long C++ templates)
    are cut in the middle to the pane's width, two different ones never to the same."""
    from tracetui.ui.findings.findings_screen import FindingsScreen

    path = str(kineto_path("b200x8_eager.json.gz"))
    names = raw_names(path)
    app = TraceApp([path], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_app(app, pilot)
        await press(pilot, "F")
        await app.workers.wait_for_complete()
        await pilot.pause()
        fs = app.screen
        assert isinstance(fs, FindingsScreen)
        f = fs.source.findings[0]
        full = [screen.linked.kineto.name(int(e)) for e in f.evidence[:5]]
        assert set(full) <= names
        drawn = {int(m[1]): m[2] for m in re.finditer(r"^ ([1-5]) (.+?)  ~", screen_text(app), re.M)}
        assert sorted(drawn) == [1, 2, 3, 4, 5]
        check_names([(drawn[k + 1], full[k]) for k in range(5)])


@pytest.mark.slow
async def test_memory_snapshot_tables_at_80_columns():
    """A CUDA memory snapshot alone: the live blocks by owner (frame names) and, Enter, the
    owner's blocks; both tables lay out by the same rule."""
    from shared_traces import SAMPLES

    from tracetui.ui.memory.block_stack_screen import BlockStackScreen
    from tracetui.ui.memory.memory_snapshot_screen import MemorySnapshotScreen

    app = TraceApp([str(SAMPLES / "h200" / "cuda_oom_snapshot.pickle")], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while not isinstance(app.screen, MemorySnapshotScreen):
            assert loop.time() < deadline, screen_text(app)
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        await pilot.pause()
        table = app.screen.query_one(RowTable)
        pairs = row_table_names(app, table)
        assert "make_layers (oom_snapshot.py:22)" in {full for _, full in pairs}
        check_names(pairs)
        await press(pilot, "enter")
        assert isinstance(app.screen, BlockStackScreen)
        check_names(row_table_names(app, app.screen.query_one(RowTable)))


@pytest.mark.slow
async def test_bottom_up_table_at_80_columns():
    """b on BERT's step: the bottom-up table's names (ops and kernels by self time) are the
    trace's, cut in the middle where they do not fit, two different ones never to the same."""
    from tracetui.ui.stacks.bottom_up_screen import BottomUpScreen

    names = raw_names(BERT)
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_app(app, pilot)
        kt = main.source.kt
        main.select(next(i for i in range(kt.n_events) if kt.name(i) == "ProfilerStep#6"))
        await pilot.pause()
        await press(pilot, "b")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, BottomUpScreen)
        pairs = row_table_names(app, app.screen.table)
        assert len(pairs) >= 10 and {full for _, full in pairs} <= names
        check_names(pairs)
