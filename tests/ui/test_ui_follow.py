"""The follow screen (``tracetui follow DIR``; docs/follow.md) driven through the real app at 80x24:
rows appear as traces land, Enter opens a cycle in the browser and Esc comes back, ``d`` twice opens
two in the diff browser; a growing driver-call trace read again as it grows (``--follow``)."""

from __future__ import annotations

import asyncio
import gzip
import os

import pytest
from pilot import BERT, open_app, open_diff, press, screen_text, toasts
from trace_writer import gz, handler_name, slowed

from tracetui.driver.trace import event_counts
from tracetui.follow.follower import FollowRequest
from tracetui.ui.app import TraceApp
from tracetui.ui.follow.follow_cycle_screen import FollowCycleScreen
from tracetui.ui.follow.follow_diff_screen import FollowDiffScreen
from tracetui.ui.follow.follow_screen import FollowScreen

BERT_GZ = open(BERT, "rb").read()
SLOW_GZ = gz(slowed(gzip.decompress(BERT_GZ), 1.5))


def _drop(folder, k: int, data: bytes = BERT_GZ) -> None:
    """A trace lands: written under a temporary name, then renamed (as an atomic writer does)."""
    tmp = os.path.join(folder, f".{k}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(folder, handler_name(k)))


async def _until(pilot, done, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done() and loop.time() < deadline:
        await pilot.pause(0.05)
    assert done(), screen_text(pilot.app)


async def _cycles(pilot, n: int) -> FollowScreen:
    app = pilot.app
    await _until(pilot, lambda: isinstance(app.screen, FollowScreen) and len(app.screen.cycles) >= n)
    await pilot.pause()
    return app.screen


async def test_rows_appear_as_traces_land_and_enter_opens_one(tmp_path):
    app = TraceApp([str(tmp_path)], follow=FollowRequest(str(tmp_path), interval=0.1))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _cycles(pilot, 0)
        assert screen.table.row_count == 0 and "0 traces read" in screen_text(app)
        _drop(tmp_path, 0)
        screen = await _cycles(pilot, 1)
        _drop(tmp_path, 1, SLOW_GZ)
        screen = await _cycles(pilot, 2)
        assert screen.table.row_count == 2
        text = screen_text(app)
        assert "2 traces read" in text
        row = screen.table.row_text(1)
        assert row[:4] == ["2", "+0:01", "6.64 ms", "+50.0%"]
        # Enter on the cursor row (the first): cycle 1 in the browser, then Esc back to the cycles
        await press(pilot, "up", "enter")
        main = await open_app(app, pilot)
        assert isinstance(main, FollowCycleScreen)
        assert main.linked.kineto.path.endswith(handler_name(0))
        assert screen_text(app).startswith(" cycle 1 (Esc: back) · ")  # the long form does not fit at 80
        await press(pilot, "escape")
        assert app.screen is screen and len(app.screen_stack) == 2


@pytest.mark.slow
async def test_d_twice_diffs_two_cycles_and_a_cycle_read_meanwhile_is_toasted(tmp_path):
    _drop(tmp_path, 0)
    _drop(tmp_path, 1, SLOW_GZ)
    app = TraceApp([str(tmp_path)], follow=FollowRequest(str(tmp_path), interval=0.1))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await _cycles(pilot, 2)
        await press(pilot, "home", "d")
        assert screen.marked is screen.cycles[0]
        assert screen.detail_lines[-1].startswith("d: cycle 1 marked as A; d on another cycle opens the diff")
        await press(pilot, "down", "d")
        diff = await open_diff(app, pilot)
        assert isinstance(diff, FollowDiffScreen) and screen.marked is None
        assert diff.session.diff.tree.a.linked.kineto.path.endswith(handler_name(0))
        assert diff.session.diff.tree.b.linked.kineto.path.endswith(handler_name(1))
        assert "#1 ↔ #2" in screen_text(app)
        _drop(tmp_path, 2)  # read while the diff is shown: said in a toast
        await _until(pilot, lambda: len(screen.cycles) == 3)
        await _until(pilot, lambda: any("cycle 3 read" in t for t in toasts(app)))
        await press(pilot, "escape")
        assert app.screen is screen and screen.table.row_count == 3
        # Esc while a cycle loads: back to the cycles, and the load's end does not replace them
        await press(pilot, "enter", "escape")
        assert app.screen is screen
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert app.screen is screen and len(app.screen_stack) == 2


def _open_three(tmp_path) -> TraceApp:
    folder = tmp_path / "run"
    folder.mkdir()
    for k, data in enumerate((BERT_GZ, BERT_GZ, SLOW_GZ)):
        (folder / handler_name(k)).write_bytes(data)
        os.utime(folder / handler_name(k), (0, 0))  # written long ago: read at the first look
    return TraceApp(["run"], follow=FollowRequest("run", interval=0.1))


def test_follow_screen_snapshot(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the title names the folder as given: "run"
    app = _open_three(tmp_path)

    async def three_rows(pilot) -> None:
        await _cycles(pilot, 3)
        await press(pilot, "end")

    assert snap_compare(app, terminal_size=(80, 24), run_before=three_rows)


def _phases_end(kt) -> float:
    """Where the last pipeline phase span ends (µs)."""
    from tracetui.driver.schema import What

    return max(float(kt.ts[e] + kt.dur[e]) for e in range(kt.n_events) if kt.what_of(e) == What.PHASE)


@pytest.mark.slow
async def test_a_growing_driver_trace_is_read_again_as_it_grows(tmp_path):
    from tracetui.driver.synthetic import write_driver_trace
    from tracetui.kineto import load_kineto

    full = tmp_path / "full.jsonl"
    write_driver_trace(load_kineto(BERT), full)
    lines = full.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    grown = tmp_path / "calls.jsonl"
    grown.write_bytes(b"".join(lines[:half]))
    begins = [sum(b'"phase":"B"' in x for x in part) for part in (lines[:half], lines)]  # calls, counted raw
    app = TraceApp([str(grown)], use_cache=False, live=0.1)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        first = await open_app(app, pilot)
        assert event_counts(first.linked.kineto).calls == begins[0]
        with open(grown, "ab") as f:
            f.write(b"".join(lines[half:-3]))
            f.write(lines[-3][:10])  # a line cut: not read until it ends
        await pilot.pause(0.5)
        assert app.screen is first
        with open(grown, "ab") as f:
            f.write(lines[-3][10:] + b"".join(lines[-2:]))
        await _until(pilot, lambda: app.screen is not first and isinstance(app.screen, type(first))
                     and app.screen.linked.kineto is not first.linked.kineto)
        again = await open_app(app, pilot)
        counts = event_counts(again.linked.kineto)
        assert counts.calls == begins[1] > begins[0]
        assert _phases_end(again.linked.kineto) > _phases_end(first.linked.kineto)  # the phases read again
        await _until(pilot, lambda: any("read again" in t for t in toasts(app)))
        assert app.live.reloads == 1


def test_the_rows_fit_the_width_and_name_kernels_short():
    from tracetui.follow.cycle import Cycle, Numbers, kernel_short
    from tracetui.ui.view.follow_rows import cycle_detail, cycle_table
    from tracetui.ui.view.table_fit import fit_table

    name = "void at::native::elementwise_kernel<128, 2, at::native::(anonymous namespace)::f>(int, at::native::g)"
    assert kernel_short(name) == "at::native::elementwise_kernel<128, 2, at::native::(anonymous namespace)::f>"
    assert kernel_short("ncclDevKernel_Generic_1") == "ncclDevKernel_Generic_1"

    def cycle(series: str, number: int, rank: int | None, step_us: float, previous=None) -> Cycle:
        n = Numbers(2, "ProfilerStep", step_us, 50.0, name, 12.0, {"error": 1, "warning": 0, "info": 2}, rank, 0)
        return Cycle(f"/x/{series}.{number}.json", 10, series, number, number * 61_000_000_000, n,
                     first=previous, previous=previous)

    a1 = cycle("hostA_1", 1, 0, 1000.0)
    b1 = cycle("hostB_2", 1, 1, 1000.0)
    a2 = cycle("hostA_1", 2, 0, 1100.0, a1)
    columns, cells = cycle_table([a1, b1, a2])
    assert columns[0].title == "cycle" and columns[-1].title == "top kernel" and columns[2].numeric
    assert columns[-1].name and not columns[-1].numeric
    fit = fit_table(columns, cells, 80)
    assert 1 + sum(fit.widths) + 2 * (len(fit.widths) - 1) <= 80 and fit.shown[-1] == len(columns) - 1
    assert [r[0] for r in cells] == ["r0:1", "r1:1", "r0:2"]  # several series: the rank with the cycle
    assert cells[2][1:5] == ["+1:01", "1.1 ms", "+10.0%", "+10.0%"] and cells[2][6] == "1/0/2"
    narrow = fit_table(columns, cells, 50)  # the top kernel keeps its room: it is cut in the middle
    assert narrow.shown[-1] == 7 and "…" in narrow.cell(0, 7, cells[0][7])
    assert narrow.cell(0, 7, cells[0][7]) == "at::…wise_kernel<…>"  # the namespace, …, the kernel's own name
    lines = cycle_detail(a2, marked=a1)
    assert lines[0] == "hostA_1.2.json  (cycle 2 of hostA_1, rank 0)"
    assert lines[-1].startswith("d: cycle 1 marked as A")
    assert cycle_detail(None)[0].startswith("no trace read yet")
