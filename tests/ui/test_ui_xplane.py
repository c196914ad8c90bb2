"""JAX/XLA XPlane profiles in the browser (issue 38), at 80x24: ``/`` to an XLA op, ``>`` to
the first kernel it produced (through the launch call with the kernel's correlation id), the
detail pane's launch facts, ``<`` back to the op.  What the keys must land on is counted from the
raw file by ``tests/xplane_walk.py``: the first op event of that name, the kernels whose
correlation id is that of a call inside it, the first of them by start."""

from __future__ import annotations

import pytest
from pilot import open_app, pane_lines, press, screen_text, search
from shared_traces import SAMPLES, SHARED
from xplane_walk import read_xspace

from tracetui.ui.app import TraceApp
from tracetui.ui.detail.detail_pane import DetailPane

H200 = SAMPLES / "h200" / "jax_gpu_step.xplane.pb"
OPS = SAMPLES / "h200" / "jax_gpu_ops.xplane.pb"
MI300 = SHARED / "xplane" / "mi300_jax_conv_tw003.xplane.pb"


def _first_kernel_of_first_op(path, op: str) -> tuple[dict, dict, int]:
    """The first host event named ``op`` (by start), the first kernel (by start) launched by a
    call inside it, and how many it launched, from the walker.  The calls are those of its own
    line or, where launches sit on lines of their own, of the one line whose calls all lie in
    ops of that name on the op's line (docs/formats.md)."""
    space = read_xspace(path)
    lines, kernels = [], []
    for p in space.planes:
        for ln in p.lines:
            rows = [{"name": p.event_name(e), "start": ln.timestamp_ns * 1000 + e.offset_ps, "dur": e.duration_ps,
                     "stats": {p.stat_names.get(m): v for m, v in e.stats}} for e in ln.events]
            if p.name.startswith("/device:GPU:"):
                kernels += rows
            else:
                lines.append(rows)
    ops = [(h, k) for k, rows in enumerate(lines) for h in rows if h["name"] == op]
    first, home = min(ops, key=lambda x: x[0]["start"])

    def within(c, line_k):
        return any(h["name"] == c["stats"]["hlo_op"] and h["start"] <= c["start"]
                   and c["start"] + c["dur"] <= h["start"] + h["dur"] for h in lines[line_k])

    owners = [home]
    for k, rows in enumerate(lines):
        calls = [h for h in rows if "hlo_op" in h["stats"] and "correlation_id" in h["stats"]]
        if k != home and calls and all(within(c, home) for c in calls):
            owners.append(k)
    inside = {h["stats"]["correlation_id"] for k in owners for h in lines[k] if "correlation_id" in h["stats"]
              and first["start"] <= h["start"] and h["start"] + h["dur"] <= first["start"] + first["dur"]}
    mine = sorted((k for k in kernels if k["stats"].get("correlation_id") in inside), key=lambda k: k["start"])
    return first, mine[0], len(mine)


async def _gt_and_back(path, op: str, facts: list[str]) -> None:
    first, kernel, count = _first_kernel_of_first_op(path, op)
    app = TraceApp([str(path)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt

        def at() -> int:
            return round((kt.origin_us + float(kt.ts[screen.current])) * 1e6)

        await search(pilot, op)
        for _ in range(64):  # the matches in tree order: to the walker's first op by time
            if at() == first["start"]:
                break
            await press(pilot, "n")
        assert kt.name(screen.current) == op and at() == first["start"]
        op_node = screen.current
        await press(pilot, ">")
        assert kt.name(screen.current) == kernel["name"] and at() == kernel["start"]
        assert f"> GPU event 1 of {count} under {op}" in screen_text(app)
        pane = screen.query_one(DetailPane)
        row = next(i for i, s in enumerate(pane._lines) if s.text.startswith(("Grid ", "Grid(")))
        pane.scroll_to(y=row, animate=False)
        await pilot.pause()
        shown = [" ".join(ln.split()) for ln in pane_lines(app, pane)]  # the label column's width varies
        for expected in facts:
            assert any(line.startswith(" ".join(expected.split())) for line in shown), (expected, shown)
        await press(pilot, "<")
        assert screen.current == op_node


async def test_h200_gt_from_the_command_buffer_op_to_its_first_kernel_and_back():
    """The H200's step is one CUDA graph (``command_buffer_1``, 15 kernels through one
    ``cuGraphLaunch``); the first kernel's ``kernel_details``: ``regs:90 static_shared:0
    dynamic_shared:16384 grid:256,1,1 block:128,1,1``."""
    _, kernel, count = _first_kernel_of_first_op(H200, "command_buffer_1")
    assert count == 15
    assert kernel["stats"]["kernel_details"].startswith("regs:90 static_shared:0 dynamic_shared:16384 grid:256,1,1")
    await _gt_and_back(H200, "command_buffer_1", ["Grid 256 × 1 × 1", "Block 128 × 1 × 1", "Registers/thread 90",
                                                  "Shared memory 16,384 B"])


@pytest.mark.slow  # 3,650 events and 35 lanes: ~2 s
async def test_mi300_gt_from_a_convolution_op_to_its_first_kernel_and_back():
    """On the MI300 the launches sit on lines of their own, joined to their op's line; the first
    ``cudnn-conv.1`` launches 2 kernels (its im2col and its GEMM)."""
    _, kernel, count = _first_kernel_of_first_op(MI300, "cudnn-conv.1")
    assert count == 2 and kernel["name"] == "Im3d2Col.kd"
    # XLA writes blocks (grid:1024,1,1); Kineto's grid of a hipExtModuleLaunchKernel kernel counts
    # work-items: the pane shows 262,144 work-items and the 1,024 blocks
    assert kernel["stats"]["kernel_details"].split()[:2] == ["grid:1024,1,1", "block:256,1,1"]
    await _gt_and_back(MI300, "cudnn-conv.1", ["Blocks 1024 × 1 × 1", "Block 256 × 1 × 1"])


@pytest.mark.slow  # 6,145 events: ~3 s
async def test_h200_gt_from_a_cublas_op_to_its_gemm_and_back():
    """Without command buffers each XLA op launches its own kernels: ``cublas-lt-matmul.0`` one
    cuBLAS GEMM, whose ``kernel_details`` give 168 registers and 231,424 B of shared memory."""
    _, kernel, count = _first_kernel_of_first_op(OPS, "cublas-lt-matmul.0")
    assert count == 1 and kernel["name"].startswith("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n")
    assert kernel["stats"]["kernel_details"].startswith("regs:168 static_shared:0 dynamic_shared:231424")
    await _gt_and_back(OPS, "cublas-lt-matmul.0", ["Grid 128 × 1 × 1", "Block 384 × 1 × 1", "Registers/thread 168",
                                                    "Shared memory 231,424 B"])
