"""The H200 CUDA pair in the browser (sample_traces/h200/, issue 36): ``/aten::mm``, Enter, ``>``
lands on the GEMM kernel that op launched, and the detail pane (80x24) shows its grid, block,
registers, shared memory and theoretical occupancy; the occupancy is worked out here by hand
from the kernel's raw args and the H200's ``deviceProperties`` in the file (gzip + json, not
tracetui)."""

from __future__ import annotations

import gzip
import json

import pytest
from pilot import open_app, pane_lines, press, screen_text, search
from shared_traces import SAMPLES

from tracetui.ui.app import TraceApp
from tracetui.ui.detail.detail_pane import DetailPane

ET = str(SAMPLES / "h200" / "cuda_transformer_et.json.gz")
KINETO = str(SAMPLES / "h200" / "cuda_transformer_kineto.json.gz")


def _raw() -> dict:
    return json.load(gzip.open(KINETO))


def occupancy_by_hand(props: dict, threads: int, registers: int, shared: int) -> tuple[int, int, float]:
    """The CUDA occupancy calculator's steps for one launch on a compute capability 9.0 device:
    (active blocks per SM, active warps per SM, occupancy %)."""
    assert (props["computeMajor"], props["computeMinor"]) == (9, 0)
    warp = props["warpSize"]  # 32
    warps_per_block = -(-threads // warp)  # ceil
    max_warps = props["maxThreadsPerMultiprocessor"] // warp  # 2048 / 32 = 64 warp slots per SM
    # 1. warps: as many blocks as their warps fit in the SM's warp slots
    by_warps = max_warps // warps_per_block
    # 2. registers: allocated per warp in units of 256, from 4 sub-partitions of the register file
    regs_per_warp = -(-registers * warp // 256) * 256
    warps_by_regs = (props["regsPerMultiprocessor"] // 4) // regs_per_warp * 4
    by_regs = warps_by_regs // warps_per_block
    # 3. shared memory: per block, the kernel's bytes + 1 KiB reserved (cc >= 8.0), in 128 B units
    per_block = -(-(shared + 1024) // 128) * 128
    by_smem = props["sharedMemPerMultiprocessor"] // per_block
    # 4. blocks: at most 32 resident blocks per SM on cc 9.0
    blocks = min(by_warps, by_regs, by_smem, 32)
    return blocks, blocks * warps_per_block, 100.0 * blocks * warps_per_block / max_warps


def test_hand_calculation_of_the_gemm_occupancy():
    """The worked example the UI test relies on: cutlass sgemm 64x64, 128 threads, 76 registers,
    20,480 B of shared memory on an H200."""
    props = _raw()["deviceProperties"][0]
    # 4 warps per block; warps: 64 // 4 = 16 blocks; registers: 76 x 32 = 2,432 -> 2,560 per warp,
    # 16,384 // 2,560 = 6 warps per sub-partition -> 24 warps -> 6 blocks; shared memory:
    # 20,480 + 1,024 = 21,504 B per block, 233,472 // 21,504 = 10 blocks; the minimum is 6 blocks
    # (registers): 24 of 64 warps, 37.5 %
    assert occupancy_by_hand(props, 128, 76, 20480) == (6, 24, 37.5)


@pytest.mark.slow  # opens the pair: ~2 s
async def test_gt_from_an_mm_shows_its_gemm_with_launch_facts_and_occupancy():
    raw = _raw()
    ev = raw["traceEvents"]
    props = raw["deviceProperties"][0]
    assert props["name"] == "NVIDIA H200" and props["numSms"] == 132
    # the first aten::mm (backward, autograd thread): External id 534; the kernel it launched
    mm = next(e for e in ev if e.get("cat") == "cpu_op" and e["name"] == "aten::mm")
    ext = mm["args"]["External id"]
    gemm = next(e for e in ev if e.get("cat") == "kernel" and e["args"].get("External id") == ext)
    a = gemm["args"]
    assert gemm["name"].startswith("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>")
    assert (ext, a["grid"], a["block"], a["registers per thread"], a["shared memory"]) == (534, [1, 1, 2], [128, 1, 1],
                                                                                          76, 20480)
    threads = a["block"][0] * a["block"][1] * a["block"][2]
    blocks, warps, occ = occupancy_by_hand(props, threads, a["registers per thread"], a["shared memory"])
    assert a["est. achieved occupancy %"] == 0  # Kineto's estimate: 2 blocks on 132 SMs

    app = TraceApp([ET, KINETO], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt
        await search(pilot, "aten::mm")
        assert kt.name(screen.current) == "aten::mm" and int(kt.external_id[screen.current]) == ext
        await press(pilot, ">")
        assert kt.name(screen.current) == gemm["name"]
        assert kt.abs_ts_us(screen.current) == gemm["ts"] and float(kt.dur[screen.current]) == gemm["dur"]
        assert "> GPU event 1 of 2 under aten::mm" in screen_text(app)
        pane = screen.query_one(DetailPane)
        shown = []
        for first in ("Grid ", "Occupancy "):  # the pane shows 7 rows at 80x24: scroll to each part
            row = next(i for i, s in enumerate(pane._lines) if s.text.startswith(first))
            pane.scroll_to(y=row, animate=False)
            await pilot.pause()
            shown += [ln.strip() for ln in pane_lines(app, pane)]
        grid, block = (" × ".join(map(str, a[k])) for k in ("grid", "block"))
        for expected in (f"Grid             {grid}", f"Block            {block}", f"Threads/block    {threads}",
                         f"Registers/thread {a['registers per thread']}",
                         f"Shared memory    {a['shared memory']:,} B (20.5 kB)",
                         f"Theoretical occ. {occ:g} % ({blocks} blocks, {warps}/64 warps per SM; limited by",
                         "Device           0 · NVIDIA H200"):
            assert any(line.startswith(expected) for line in shown), (expected, shown)
        await press(pilot, "<")
        assert kt.name(screen.current) == "aten::mm" and int(kt.external_id[screen.current]) == ext
