"""The summaries screen (``s``): tables, sorting, Enter to a row's occurrences, n/N; SVG
snapshots at 80x24 and 120x40 (update with --snapshot-update and look at them)."""

from __future__ import annotations

import pytest
from pilot import BERT, open_app, open_summaries, press
from shared_traces import load_shared_kineto

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen

#: the top kernel of h100_bert_inference by total time (17 launches, 98.718 µs in all),
#: read from the file
TOP_KERNEL = ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
              "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)")


@pytest.mark.slow
async def test_enter_on_the_top_kernel_lands_on_it_and_n_cycles_its_launches():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    launches = sorted(i for i in range(kt.n_events) if kt.name(i) == TOP_KERNEL)
    assert len(launches) == 17
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        top = summ.tables[0]
        assert top.rows[0][0] == TOP_KERNEL and top.rows[0][2] == 17
        assert top.rows[0][3] == pytest.approx(0.098718)
        await press(pilot, "enter")
        main = app.screen
        assert isinstance(main, MainScreen)
        seen = [main.current]
        for _ in range(16):
            await press(pilot, "n")
            seen.append(main.current)
        # every launch of the kernel once, in tree order; n wraps to the first
        assert all(kt.name(n) == TOP_KERNEL for n in seen) and sorted(seen) == launches
        await press(pilot, "n")
        assert main.current == seen[0]
        assert "17 occurrences" in str(main.status_parts())


async def test_tabs_sorting_and_escape():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        assert [t.key for t in summ.tables] == ["kernels", "ops", "categories", "roofline", "gaps", "launches"]
        await press(pilot, "2")  # top ops: 29 distinct names in the file
        ops = summ.tables[1]
        assert len(ops.rows) == 29 and ops.rows[0][0] == "aten::addmm"
        table = summ.query_one("#t-ops")
        await press(pilot, "s")  # by name, a -> z
        first = table.get_row_at(0)[0].plain
        assert first == min((r[0] for r in ops.rows), key=str.lower)
        await press(pilot, "S")  # reversed
        assert table.get_row_at(0)[0].plain == max((r[0] for r in ops.rows), key=str.lower)
        await press(pilot, "4")  # roofline: 10 rows, the 17 addmm [141, 512] x [512, 512] first
        roof = summ.tables[3]
        assert roof.rows[0][:3] == ("aten::addmm", "512, 141×512, 512×512", 17)
        await press(pilot, "escape")
        assert isinstance(app.screen, MainScreen)


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


async def _summaries_shown(pilot) -> None:
    app = pilot.app
    await open_summaries(app, pilot)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_summaries_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=_summaries_shown)


@pytest.mark.slow
async def test_palette_lists_summaries_and_a_cpu_trace_gets_empty_tables():
    from shared_traces import SAMPLES

    app = TraceApp([str(SAMPLES / "cpu_transformer_kineto.json.gz")], use_cache=False)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        main = await open_app(app, pilot)
        titles = [c.title for c in app.get_system_commands(main)]
        assert "Summaries" in titles and "Every arg" in titles
        summ = await open_summaries(app, pilot)
        by_key = {t.key: t for t in summ.tables}
        assert not by_key["kernels"].rows and not by_key["roofline"].rows  # no GPU work in this trace
        assert by_key["ops"].rows  # the CPU ops are there, with 0 GPU time
        assert summ.query_one("TabbedContent").active == "p-ops"  # the first tab with rows
        await press(pilot, "enter")  # on an op row: its calls in the tree
        assert isinstance(app.screen, MainScreen)
        assert main.linked.kineto.name(main.current) == by_key["ops"].rows[0][0]
