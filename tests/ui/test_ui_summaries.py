"""The summaries screen (``s``): tables that sort by any column (the header marks which), Enter
to a row's longest occurrence with n/N going down by duration and ``o`` for time order, the
idle gaps themselves with Enter on a gap showing it in the timeline; SVG snapshots at 80x24 and
120x40 (update with --snapshot-update and look at them).

Facts are read from the raw file with gzip + json (:func:`_raw`), not from tracetui."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

import pytest
from pilot import BERT, open_app, open_summaries, press, screen_text

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen
from tracetui.ui.row_table import RowTable
from tracetui.ui.view.summary_table import sort_key

#: the top kernel of h100_bert_inference by total time (17 launches, 98.718 µs in all),
#: read from the file
TOP_KERNEL = ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
              "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@lru_cache(maxsize=None)
def _raw() -> list[dict]:
    return json.load(gzip.open(BERT))["traceEvents"]


def _raw_gaps() -> list[tuple[float, float, dict]]:
    """(length µs, start µs (absolute), the GPU event before) of every idle gap on the file's one
    GPU stream: a GPU event starting after everything before it ended; longest first."""
    gpu = sorted((e for e in _raw() if e.get("ph") == "X" and e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    assert {(e["pid"], e["tid"]) for e in gpu} == {(0, 7)}  # one stream: device 0, stream 7
    out, end, before = [], None, None
    for e in gpu:
        if end is not None and e["ts"] > end:
            out.append((e["ts"] - end, end, before))
        if end is None or e["ts"] + e["dur"] > end:
            end, before = e["ts"] + e["dur"], e
    return sorted(out, key=lambda g: -g[0])


def _abs_ts(kt, node: int) -> float:
    return kt.abs_ts_us(node)


@pytest.mark.slow
async def test_enter_on_the_top_kernel_lands_on_its_longest_launch_and_n_goes_down_by_duration():
    raw = sorted((e for e in _raw() if e.get("cat") == "kernel" and e["name"] == TOP_KERNEL), key=lambda e: -e["dur"])
    assert len(raw) == 17 and raw[0]["dur"] == 6.08
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        top = summ.tables[0]
        assert top.rows[0][0] == TOP_KERNEL and top.rows[0][2] == 17
        assert top.rows[0][3] == pytest.approx(0.098718)
        await press(pilot, "enter")
        main = app.screen
        assert isinstance(main, MainScreen)
        kt = main.source.kt
        # the longest launch first: the raw file's longest (6.080 µs), by its start time
        assert kt.name(main.current) == TOP_KERNEL and float(kt.dur[main.current]) == pytest.approx(6.08)
        assert _abs_ts(kt, main.current) == pytest.approx(raw[0]["ts"])
        assert "longest first" in main.detail.note.plain
        seen = [main.current]
        for _ in range(16):
            await press(pilot, "n")
            seen.append(main.current)
        durs = [float(kt.dur[n]) for n in seen]
        assert durs == sorted(durs, reverse=True) and len(set(seen)) == 17  # each launch once, longest first
        assert durs == pytest.approx([e["dur"] for e in raw])
        await press(pilot, "n")
        assert main.current == seen[0]  # wraps to the longest
        assert "17 occurrences, longest first" in str(main.status_parts())
        await press(pilot, "o")  # time order: n goes to the next launch in time
        assert "17 occurrences, time order" in str(main.status_parts())
        starts = []
        for _ in range(17):
            await press(pilot, "n")
            starts.append(float(kt.ts[main.current]))
        assert sorted(starts) == sorted(float(kt.ts[n]) for n in seen)
        assert starts[:-1] == sorted(starts[:-1])  # ascending until it wraps round


async def test_tabs_sorting_and_escape():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        assert [t.key for t in summ.tables] == ["kernels", "ops", "categories", "roofline", "gaps", "launches"]
        await press(pilot, "2")  # top ops: 29 distinct names in the file
        ops = summ.tables[1]
        assert len(ops.rows) == 29 and ops.rows[0][0] == "aten::addmm"
        table = summ.query_one(RowTable)
        # sorted by GPU direct time to start with, and the header says so; s cycles the columns
        assert table.headers[4] == "▼ GPU direct ms"
        await press(pilot, "s", "s", "s")  # GPU subtree, %, then the name: a -> z
        assert table.headers[0] == "name ▼" and "▼" not in "".join(table.headers[1:])
        assert table.row_text(0)[0] == min((r[0] for r in ops.rows), key=str.lower)
        await press(pilot, "S")  # reversed
        assert table.headers[0] == "name ▲"
        assert table.row_text(0)[0] == max((r[0] for r in ops.rows), key=str.lower)
        await press(pilot, "4")  # roofline: 10 rows, the 17 addmm [141, 512] x [512, 512] first
        roof = summ.tables[3]
        assert roof.rows[0][:3] == ("aten::addmm", "512, 141×512, 512×512", 17)
        assert table.row_text(0)[:3] == ["aten::addmm", "512, 141×512, 512×512", "17"]
        await press(pilot, "escape")
        assert isinstance(app.screen, MainScreen)


async def test_every_table_sorts_by_each_of_its_columns():
    """s steps through every column of every tab: the header marks the column (and only it),
    and the rows are in that column's order (numbers largest first, text A-Z)."""
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        table = summ.query_one(RowTable)
        for i, t in enumerate(summ.tables):
            await press(pilot, str(i + 1))
            assert table.cells is not None and table.row_count == len(t.rows)
            for _ in range(len(t.columns)):
                await press(pilot, "s")
                col, rev = summ.sort_state[t.key]
                assert not rev
                marked = [c for c, h in enumerate(table.headers) if "▼" in h or "▲" in h]
                assert marked == [col], (t.key, table.headers)
                numeric = t.columns[col][1]
                keys = [sort_key(t.rows[r][col], numeric) for r in table.order]
                assert keys == sorted(keys), (t.key, col)


async def test_idle_gaps_tab_lists_the_gaps_longest_first_and_enter_shows_one():
    gaps = _raw_gaps()
    assert len(gaps) == 60 and gaps[0][0] == pytest.approx(247.551, abs=1e-3)
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        await press(pilot, "5")
        t = summ.tables[4]
        assert t.key == "gaps" and [c for c, _ in t.columns] == [
            "stream", "start ms", "length µs", "class", "host op", "host was in", "next GPU event"]
        assert len(t.rows) == 60 and "60 gaps" in t.note
        lengths = [r[2] for r in t.rows]
        assert lengths == pytest.approx([g[0] for g in gaps], abs=1e-3)  # every gap, longest first
        assert {r[0] for r in t.rows} == {"GPU0 s7"} and {r[3] for r in t.rows} <= {"host_wait", "kernel_to_kernel",
                                                                                      "other"}
        # a gap while the launching thread ran an op names it: aten::transpose (1.586 ms, 86.9 µs)
        row = next(r for r in t.rows if r[4])
        assert row[4] == "aten::transpose" and row[2] == pytest.approx(86.912, abs=1e-3)
        assert summ.query_one(RowTable).headers[2] == "▼ length µs"
        await press(pilot, "enter")  # the longest gap
        main = app.screen
        assert isinstance(main, MainScreen)
        kt = main.source.kt
        before = gaps[0][2]  # the GPU event before the gap, from the raw file
        assert kt.name(main.current) == before["name"]
        assert _abs_ts(kt, main.current) == pytest.approx(before["ts"])
        await pilot.pause()
        w0, w1 = main.timeline.window
        g0, g1 = t.spans[0]
        assert g1 - g0 == pytest.approx(gaps[0][0], abs=1e-3)
        assert w0 < g0 and g1 < w1 and (w1 - w0) < 3 * (g1 - g0)  # the gap fills the window, with its edges
        assert main.timeline._cursor_range == pytest.approx((g0, g1))  # tinted
        assert "after this GPU event" in main.detail.note.plain
        stream = next(line for line in screen_text(app).splitlines() if line.startswith("GPU0 s7"))
        assert "248µs" in stream  # the timeline labels the gap


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


async def _summaries_shown(pilot) -> None:
    app = pilot.app
    await open_summaries(app, pilot)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_summaries_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=_summaries_shown)


async def _gaps_shown(pilot) -> None:
    await open_summaries(pilot.app, pilot)
    await press(pilot, "5")


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_idle_gaps_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=_gaps_shown)


@pytest.mark.slow
async def test_palette_lists_summaries_and_a_cpu_trace_gets_empty_tables():
    from shared_traces import SAMPLES
    from textual.widgets import Tabs

    app = TraceApp([str(SAMPLES / "cpu_transformer_kineto.json.gz")], use_cache=False)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        main = await open_app(app, pilot)
        titles = [c.title for c in app.get_system_commands(main)]
        assert "Summaries" in titles and "Every arg" in titles
        summ = await open_summaries(app, pilot)
        by_key = {t.key: t for t in summ.tables}
        assert not by_key["kernels"].rows and not by_key["roofline"].rows  # no GPU work in this trace
        assert by_key["ops"].rows  # the CPU ops are there, with 0 GPU time
        assert summ.query_one(Tabs).active == "p-ops"  # the first tab with rows
        await press(pilot, "enter")  # on an op row: its longest call in the tree
        assert isinstance(app.screen, MainScreen)
        kt = main.linked.kineto
        assert kt.name(main.current) == by_key["ops"].rows[0][0]
        calls = [i for i in range(kt.n_events) if kt.name(i) == by_key["ops"].rows[0][0]]
        assert float(kt.dur[main.current]) == max(float(kt.dur[i]) for i in calls)
