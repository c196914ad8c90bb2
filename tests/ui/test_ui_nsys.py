"""The browser on an Nsight Systems export: a kernel's detail (demangled name, grid, block,
registers, shared memory, the theoretical occupancy from the export's GPU table) and the
``>``/``<`` jumps between an op and its kernels, with the values read from the raw file."""

from __future__ import annotations

import numpy as np
import pytest
from nsys_export import KERNEL, abs_ns, copy_with, query
from pilot import open_app, press, screen_text, search

from tracetui.kineto.kinds import Kind
from tracetui.nsys import load_nsys
from tracetui.ui.app import TraceApp
from tracetui.ui.detail.detail_pane import DetailPane

_H100 = ("computeMajor", 9), ("computeMinor", 0), ("maxThreadsPerBlock", 1024), ("maxRegistersPerBlock", 65536), \
    ("maxRegistersPerSm", 65536), ("threadsPerWarp", 32), ("maxShmemPerBlock", 49152), \
    ("maxShmemPerBlockOptin", 232448), ("maxShmemPerSm", 233472), ("maxWarpsPerSm", 64), ("smCount", 132)


def _with_gpu_table(tmp_path):
    cols = ", ".join(c for c, _ in _H100)
    vals = ", ".join(str(v) for _, v in _H100)
    return copy_with(tmp_path, f"CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, {cols})",
                     *(f"INSERT INTO TARGET_INFO_GPU (id, name, {cols}) VALUES ({d}, 'NVIDIA H100 80GB HBM3', {vals})"
                       for d in (0, 1)))


@pytest.mark.slow
async def test_kernel_detail_and_jumps_on_an_export(tmp_path):
    p = _with_gpu_table(tmp_path)
    tr = load_nsys(p)
    app = TraceApp(use_cache=False, paths=[str(p)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::mm")
        op = screen.current
        assert tr.name(op) == "aten::mm"
        await press(pilot, "greater_than_sign")
        kernel = screen.current
        assert tr.kind_of(kernel) == Kind.KERNEL and int(tr.cpu_op_of[kernel]) == op
        start = int(abs_ns(tr, np.array([kernel]))[0])  # the kernel's configuration as the file has it
        (name, gx, gy, gz, bx, by, bz, regs, smem), = query(
            p, f"SELECT s.value, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
               f"staticSharedMemory + dynamicSharedMemory FROM {KERNEL} k JOIN StringIds s ON s.id = k.demangledName "
               "WHERE k.start = ?", (start,))
        assert tr.name(kernel) == name
        detail = " ".join(screen.query_one(DetailPane).text().split())
        assert f"Grid {gx} × {gy} × {gz}" in detail and f"Block {bx} × {by} × {bz}" in detail
        assert f"Registers/thread {regs}" in detail and f"Shared memory {smem:,} B" in detail
        assert "Theoretical occ." in detail and "not computable" not in detail
        assert "NVIDIA H100 80GB HBM3" in detail
        assert name.split("_")[0] in screen_text(app)
        await press(pilot, "less_than_sign")
        assert screen.current == op
