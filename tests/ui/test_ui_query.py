"""SQL in the browser (issue 30): ``:`` opens the query bar (table names offered as you type,
this session's queries on up/down), the query runs in a worker, its rows open as a table
screen (sortable; Enter goes to a row's event, ``f`` filters the tree to the result's
events), a bad query leaves DuckDB's message in the bar, Esc stops a running query; in a
job a row's rank switches rank.  Figures are read from the raw file, not from tracetui.
SVG snapshots of the result screen at 80x24 and 120x40."""

from __future__ import annotations

import asyncio
import gzip
import os

import orjson
import pytest
from pilot import BERT, RESNET_ET, SIZES, open_app, press, screen_text, toasts
from shared_traces import SHARED, kineto_path

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen
from tracetui.ui.query.query_bar import QueryBar
from tracetui.ui.query.query_result_screen import QueryResultScreen
from tracetui.ui.query.result_table import ResultTable

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


def raw_kernels(path) -> list[dict]:
    with gzip.open(path) as fh:
        events = orjson.loads(fh.read())["traceEvents"]
    return [e for e in events if isinstance(e, dict) and e.get("cat") == "kernel"]


async def answered(app, pilot, timeout: float = 120.0) -> None:
    """Wait until the running query has answered (a result screen, or a message in the bar)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await pilot.pause()
        screen = app.screen
        if isinstance(screen, QueryResultScreen):
            await pilot.pause()
            return
        bars = list(screen.query(QueryBar))
        if bars and not bars[0].running:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no answer; screen: {screen_text(app)}")


async def until(pilot, condition, what: str, timeout: float = 60.0) -> None:
    """Wait until ``condition()`` holds (a deadline, not a number of rounds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"no {what} after {timeout:.0f} s"
        await asyncio.sleep(0.05)
        await pilot.pause()


async def until_duckdb_runs(app, pilot, timeout: float = 120.0) -> None:
    """Wait until the bar says the query runs and DuckDB has started it (the first query
    imports DuckDB, which takes seconds on a busy machine)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ("running" in screen_text(app) and app.query_state is not None and app.query_state.started):
        assert loop.time() < deadline, f"the query never ran; screen: {screen_text(app)}"
        await asyncio.sleep(0.05)
        await pilot.pause()


async def run_query(app, pilot, sql: str) -> None:
    """``:``, the query in the bar, Enter; wait for the answer."""
    await press(pilot, "colon")
    bar = app.screen.query_one(QueryBar)
    assert bar.display and bar.input.has_focus
    bar.input.value = sql
    await press(pilot, "enter")
    await answered(app, pilot)


async def test_typed_query_with_completion_opens_the_table_and_enter_goes_to_the_longest_kernel():
    kernels = raw_kernels(kineto_path("h100_bert_inference.json.gz"))
    longest = max(kernels, key=lambda e: e["dur"])
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await press(pilot, "colon")
        bar = main.query_one(QueryBar)
        assert bar.input.has_focus
        assert "tables: events kernels gpu_events ops links gaps steps counters args" in screen_text(app)
        await press(pilot, *"FROM ker")  # DuckDB's FROM-first SELECT
        await press(pilot, "tab")  # the greyed completion: kernels
        assert bar.input.value == "FROM kernels"
        bar.input.value += " SELECT event, name, dur_us WHERE kind = 'kernel'"
        await press(pilot, "enter")
        await answered(app, pilot)
        res = app.screen
        assert isinstance(res, QueryResultScreen)
        assert len(res.rows) == len(kernels) == 60  # every kernel of the raw file
        assert "60 rows in" in screen_text(app)
        # s on the first column sorts by event id; three columns right: dur_us, largest first
        table = res.query_one(ResultTable)
        await press(pilot, "right", "right", "s")
        assert res.rows.sort_column == 2 and res.rows.sort_descending
        assert res.rows.value(0, 2) == pytest.approx(longest["dur"])
        assert res.rows.value(1, 2) < res.rows.value(0, 2)
        await press(pilot, "s")  # again: smallest first
        assert res.rows.value(0, 2) == pytest.approx(min(e["dur"] for e in kernels))
        await press(pilot, "s", "end", "home")
        assert table.cursor_row == 0
        await press(pilot, "enter")
        assert isinstance(app.screen, MainScreen)
        await pilot.pause()
        kt = main.source.kt
        assert kt.name(main.current) == longest["name"] and kt.dur[main.current] == pytest.approx(longest["dur"])
        # the query is in this session's history: : then up brings it back
        await press(pilot, "colon", "up")
        assert bar.input.value == "FROM kernels SELECT event, name, dur_us WHERE kind = 'kernel'"
        await press(pilot, "escape")
        assert not bar.display and main.op_tree.has_focus


async def test_a_bad_query_leaves_duckdbs_message_in_the_bar():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await run_query(app, pilot, "SELEC 1")
        assert app.screen is main
        bar = main.query_one(QueryBar)
        assert bar.display and bar.input.value == "SELEC 1"
        assert 'query: Parser Error: syntax error at or near "SELEC"' in screen_text(app)
        await run_query(app, pilot, "SELECT no_such_column FROM kernels")
        assert 'Binder Error: Referenced column "no_such_column" not found' in screen_text(app).replace("\n", " ")
        # a statement without rows (a view for later queries) keeps the bar open; the view answers next
        await run_query(app, pilot, "CREATE VIEW flash AS SELECT * FROM kernels WHERE name LIKE '%flash%'")
        assert "the statement returns no rows" in screen_text(app)
        await run_query(app, pilot, "SELECT count(*) AS n FROM flash")
        assert isinstance(app.screen, QueryResultScreen) and app.screen.rows.value(0, 0) == 4
        # NULL draws as an empty cell; the line under the table says it is NULL (not an empty text)
        await run_query(app, pilot, "SELECT CAST(NULL AS VARCHAR) AS nothing, '' AS empty")
        assert "row 1 · nothing = NULL" in screen_text(app)
        await press(pilot, "right")
        assert "row 1 · empty = " in screen_text(app) and "empty = NULL" not in screen_text(app)
        # no rows: nothing to go to, so no Enter hint
        await run_query(app, pilot, "SELECT event FROM kernels WHERE false")
        assert "0 rows in" in screen_text(app) and "Enter: go to" not in screen_text(app)


@pytest.mark.slow
async def test_f_filters_the_tree_to_the_results_events_and_n_walks_them():
    flash = [e for e in raw_kernels(kineto_path("h100_bert_inference.json.gz")) if "flash" in e["name"]]
    assert len(flash) == 4
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await run_query(app, pilot, "SELECT name, ts_us, event FROM kernels WHERE name LIKE '%flash%'")
        res = app.screen
        assert isinstance(res, QueryResultScreen) and len(res.rows) == 4
        await press(pilot, "f")
        assert app.screen is main and main.source.filtered
        await pilot.pause()
        kt = main.source.kt
        seen = {main.current}
        for _ in range(3):
            await press(pilot, "n")
            seen.add(main.current)
        assert sorted(kt.ts[n] + kt.origin_us for n in seen) == pytest.approx(sorted(e["ts"] for e in flash))
        assert all("flash" in kt.name(n) for n in seen)
        assert "SQL: 4 result events" in str(main.status_parts())
        # without an event column there is nothing to go to or filter by: a toast, no change
        await run_query(app, pilot, "SELECT category, count(*) FROM kernels GROUP BY category")
        await press(pilot, "f")
        assert isinstance(app.screen, QueryResultScreen)
        assert any("no event column" in t for t in toasts(app))
        await press(pilot, "colon")  # : edits the query
        assert app.screen is main and main.query_one(QueryBar).input.value.startswith("SELECT category")


@pytest.mark.slow
async def test_escape_stops_a_running_query_and_the_ui_answers_meanwhile():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "colon")
        bar = app.screen.query_one(QueryBar)
        bar.input.value = "SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3"
        await press(pilot, "enter")
        await until_duckdb_runs(app, pilot)
        assert bar.running
        await asyncio.sleep(0.3)
        await press(pilot, "escape")
        assert not bar.running and "query cancelled: stopped after" in screen_text(app)
        await app.workers.wait_for_complete()
        await press(pilot, "escape")  # closes the bar
        assert not bar.display
        await run_query(app, pilot, "SELECT 42 AS answer")  # the session still answers
        assert app.screen.rows.value(0, 0) == 42


@pytest.mark.slow
async def test_the_bar_says_what_the_sandbox_refuses_and_caps_the_rows_at_80x24(tmp_path):
    """A COPY to a file is refused in the bar (one line, naming the option of `tracetui query`
    that allows it; nothing written); a result of more rows than the browser fetches says so."""
    from tracetui.ui.view.query_state import BROWSER_ROWS

    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        out = tmp_path / "k.csv"
        await run_query(app, pilot, f"COPY kernels TO '{out}'")
        assert app.screen is main and main.query_one(QueryBar).display
        shown = " ".join(screen_text(app).split())
        assert "queries may not read or write files (tracetui query --allow-files allows it)" in shown
        assert not out.exists()
        await run_query(app, pilot, f"SELECT range AS n FROM range({BROWSER_ROWS + 5})")
        assert isinstance(app.screen, QueryResultScreen)
        assert app.screen.result.truncated and len(app.screen.result.rows) == BROWSER_ROWS
        assert f"(the first {BROWSER_ROWS:,}: add LIMIT or ORDER BY)" in " ".join(screen_text(app).split())


@pytest.mark.slow
async def test_the_palette_opens_the_query_bar_and_an_et_alone_says_why_not():
    from textual.command import CommandList, CommandPalette

    def offered(app) -> bool:  # the palette lists its search's answer, Query (SQL) first
        lists = list(app.screen.query(CommandList)) if isinstance(app.screen, CommandPalette) else []
        return bool(lists) and lists[0].option_count > 0 and "Query (SQL)" in str(
            lists[0].get_option_at_index(0).prompt)

    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "ctrl+p", *"Query (SQL)")
        await until(pilot, lambda: offered(app), "the palette offering Query (SQL)")
        await press(pilot, "enter")  # the palette highlights its first offer
        await until(pilot, lambda: app.screen.query_one(QueryBar).display, "the query bar")
    app = TraceApp([RESNET_ET], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await press(pilot, "colon")
        assert not main.query_one(QueryBar).display
        assert any("SQL needs a Kineto or driver-call trace" in t for t in toasts(app))


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_in_a_job_enter_on_a_row_of_another_rank_switches_to_it():
    raw = raw_kernels(os.path.join(JOB, "rank5_kineto.json.gz"))
    longest = max(raw, key=lambda e: e["dur"])
    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        assert app.rank == 0
        await run_query(app, pilot, "SELECT rank, event, name, dur_us FROM kernels WHERE kind = 'kernel' "
                                    "ORDER BY rank = 5 DESC, dur_us DESC")
        res = app.screen
        assert isinstance(res, QueryResultScreen)
        ranks = [res.rows.value(i, 0) for i in range(len(res.rows))]
        assert ranks.count(5) == len(raw) and ranks[0] == 5  # rank 5's kernels, counted in its raw file
        assert sorted(set(ranks)) == list(range(8))
        await press(pilot, "enter")
        await until(pilot, lambda: app.rank == 5 and isinstance(app.screen, MainScreen)
                    and app.screen.current is not None, "rank 5 shown", timeout=120.0)
        main = app.screen
        await pilot.pause(0.2)
        kt = main.source.kt
        assert app.rank == 5 and kt.name(main.current) == longest["name"]
        assert kt.dur[main.current] == pytest.approx(longest["dur"])
        # the session outlives the rank switch: the history is still there
        await press(pilot, "colon", "up")
        assert main.query_one(QueryBar).input.value.startswith("SELECT rank, event")
        # f filters the shown rank's tree to rank 5's rows, and says how many rows are elsewhere
        await press(pilot, "enter")
        await answered(app, pilot)
        await press(pilot, "f")
        assert app.screen is main and main.source.filtered
        assert f"SQL: {len(raw)} result events" in str(main.status_parts())
        others = len(res.rows) - len(raw)
        assert any(f"{others:,} of {len(res.rows):,} rows are on other ranks" in t for t in toasts(app)), toasts(app)


async def _result_shown(pilot) -> None:
    app = pilot.app
    await open_app(app, pilot)
    await run_query(app, pilot, "SELECT event, name, category, dur_us FROM kernels ORDER BY ts_us LIMIT 40")
    res = app.screen
    res.seconds = 0.25  # the wall time differs run to run; the snapshot shows this one
    res.query_one("#result-title").update(res.title_text())
    await press(pilot, "down", "down", "right")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_result_screen_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=_result_shown)


async def test_the_result_screen_closed_at_once_leaves_the_app_running():
    """Esc typed ahead of the result screen (popped 0, 1, 2 and 5 loop turns after the push),
    then Enter, f and : typed ahead of its close: the app goes on."""
    from tracetui.ui.view.query_state import QueryState

    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        state = QueryState.for_trace(main.linked)
        result, secs = state.run("SELECT event, name FROM kernels LIMIT 5")
        for turns in (0, 1, 2, 5):
            screen = QueryResultScreen("SELECT ...", result, secs)
            app.push_screen(screen)
            for _ in range(turns):
                await asyncio.sleep(0)
            app.pop_screen()
            await pilot.pause()
            assert app._exception is None and app.screen is main, turns
        for keys in (["enter", "enter"], ["f", "f"], ["colon", "colon"], ["escape", "escape"]):
            app.push_screen(QueryResultScreen("SELECT ...", result, secs), main._query_choice)
            await press(pilot, *keys, "escape", "escape")
            assert app._exception is None and app.screen is main, keys
        state.close()
