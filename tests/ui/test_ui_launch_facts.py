"""Launch facts stated once (tracetui/kineto/launch_facts.py) and said alike by the detail pane,
``kernel_metadata_scrape`` and the exports: what a kernel's grid counts (work-items for
``hipExtModuleLaunchKernel``), the blocks computed from it, and an older trace's External id
that is its own correlation.  The truth is read from the raw JSON with the standard library."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math

import pytest
from rich.console import Console
from shared_traces import kineto_path

from tracetui.api import kernel_metadata_scrape
from tracetui.export import export_bytes
from tracetui.session import open_traces
from tracetui.ui.view.trace_detail import TraceDetail
from tracetui.ui.view.trace_row_source import TraceRowSource

MI300 = kineto_path("mi300_resnet_train_checkpointing.json.gz")
#: a MIOpen transpose kernel launched by hipExtModuleLaunchKernel with a partial last block
TRANSPOSE = "transpose_NCHW2CNHW_V2_2D_WG_off64"
V100_OLD = kineto_path("v100_old_flow_format_cudagraph.json.gz")


def raw_kernel(path, launch_name: str, name: str | None = None) -> tuple[dict, dict]:
    """(the first kernel launched by a ``launch_name`` call (and named ``name``), that call),
    read from the file with the standard library."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("name") == launch_name and "correlation" in e.get("args", {})}
    kernel = next(e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in launches
                  and (name is None or e.get("name") == name))
    return kernel, launches[kernel["args"]["correlation"]]


def detail_text(linked, node: int) -> str:
    console = Console(width=120, record=True, file=io.StringIO(), color_system=None)
    console.print(TraceDetail(TraceRowSource(linked)).build(node, width=120))
    return " ".join(console.export_text().split())


@pytest.fixture(scope="module")
def mi300():
    return open_traces([str(MI300)])


def test_a_work_item_grid_is_said_alike_by_the_detail_pane_the_api_and_every_export(mi300):
    raw, launch = raw_kernel(MI300, "hipExtModuleLaunchKernel", TRANSPOSE)  # its grid: the global work size
    grid, block = raw["args"]["grid"], raw["args"]["block"]
    blocks = [math.ceil(g / b) for g, b in zip(grid, block)]
    assert (grid, block, blocks) == ([784, 1, 64], [256, 1, 1], [4, 1, 64])  # 784 / 256: a partial block
    kt = mi300.kineto
    ident = (float(raw["ts"]), float(raw["dur"]), int(raw["args"]["stream"]), int(raw["args"]["External id"]))
    meta = kernel_metadata_scrape(ident, kt)
    assert (meta.grid, meta.block, meta.grid_unit, meta.blocks) == ((784, 1, 64), (256, 1, 1), "work-items", (4, 1, 64))
    assert not meta.external_id_is_correlation  # External id 543, correlation 5341
    text = detail_text(mi300, meta.index)
    assert "Grid (work-items) 784 × 1 × 64 (hipExtModuleLaunchKernel gives the grid in work-items" in text
    assert "Blocks 4 × 1 × 64 (work-items ÷ block, rounded up)" in text
    op = int(kt.cpu_op_of[meta.index])
    rows = list(csv.DictReader(io.StringIO(export_bytes(mi300, op, "csv").decode())))
    row = next(r for r in rows if int(r["node"]) == meta.index)
    assert (row["grid"], row["grid_unit"], row["blocks"]) == ("784,1,64", "work-items", "4,1,64")
    assert row["external_id_is_correlation"] == "False"
    kernels = json.loads(export_bytes(mi300, op, "json"))["kernels"]
    k = next(k for k in kernels if k["event"] == meta.index)
    assert (k["grid"], k["grid_unit"], k["blocks"], k["external_id_is_correlation"]) == (
        "784,1,64", "work-items", "4,1,64", False)
    md = export_bytes(mi300, op, "md").decode()
    assert "| blocks |" in md and "| 784,1,64 | 256,1,1 | 4,1,64 |" in md


def test_a_grid_in_blocks_is_its_own_blocks(mi300):
    kt = mi300.kineto
    raw, _ = raw_kernel(MI300, "hipLaunchKernel")  # a grid in blocks, as CUDA's
    meta = kernel_metadata_scrape((float(raw["ts"]), float(raw["dur"]), int(raw["args"]["stream"]),
                                   int(raw["args"]["External id"])), kt)
    assert meta.grid_unit == "blocks" and meta.blocks == tuple(raw["args"]["grid"]) == meta.grid == (1, 40, 1)
    text = detail_text(mi300, meta.index)
    assert "Grid 1 × 40 × 1" in text and "work-items" not in text


def test_an_external_id_that_is_the_correlation_is_said_alike():
    linked = open_traces([str(V100_OLD)])
    kt = linked.kineto
    k = next(i for i in range(kt.n_events) if kt.is_gpu_work(i) and int(kt.external_id[i]) == 1937342)
    assert int(kt.correlation[k]) == 1937342  # read from the file: an old trace's own correlation
    ident = (kt.abs_ts_us(k), float(kt.dur[k]), int(kt.stream[k]), 1937342)  # (ts, dur, stream, External id)
    assert kernel_metadata_scrape(ident, kt).external_id_is_correlation
    assert "External id 1937342 (equals the correlation, as in older traces" in detail_text(linked, k)
    op = int(kt.cpu_op_of[k])
    rows = list(csv.DictReader(io.StringIO(export_bytes(linked, op, "csv").decode())))
    row = next(r for r in rows if int(r["node"]) == k)
    assert row["external_id"] == "1937342" and row["external_id_is_correlation"] == "True"
    ops = [r for r in rows if r["kind"] == "cpu_op"]
    assert all(r["external_id_is_correlation"] == "" for r in ops)  # only GPU events carry the flag
