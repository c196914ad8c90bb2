"""What the browser shows of a driver-call trace, built without an app (ui/view is free of
Textual): the detail of a launch record, an allocation, a transfer, an ioctl and a phase, and
the summaries' driver tables.  Facts are those the test file was written with
(``tests/driver_ui_files.py``), not tracetui's own model; the same views through real keys are
``test_ui_driver.py``'s (slow)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from driver_ui_files import FACTS, write_bpftrace
from rich.console import Console

from tracetui.session import open_traces
from tracetui.ui.view.driver_tables import driver_tables
from tracetui.ui.view.trace_detail import TraceDetail
from tracetui.ui.view.trace_row_source import TraceRowSource


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    linked = open_traces([str(write_bpftrace(tmp_path_factory.mktemp("driver") / "trace_cuda.jsonl"))])
    return linked.kineto, TraceDetail(TraceRowSource(linked))


def text_of(views, name: str, nth: int = 1) -> str:
    kt, detail = views
    node = [i for i in range(kt.n_events) if kt.name(i) == name][nth - 1]
    console = Console(width=120, record=True, file=io.StringIO(), color_system=None)
    console.print(detail.build(node, width=120))
    return " ".join(console.export_text().split())


def test_records_ioctls_and_phases_in_the_detail(views):
    d = text_of(views, "kernel launch")
    g, b = FACTS["launch_grid"], FACTS["launch_block"]
    assert f"Grid {g[0]} × {g[1]} × {g[2]}" in d and f"Block {b[0]} × {b[1]} × {b[2]}" in d
    assert f"Blocks {int(np.prod(g))}" in d and f"Threads {FACTS['launch_threads']:,} (grid × block)" in d
    d = text_of(views, "memory alloc", nth=2)
    size, total = FACTS["alloc_sizes"][1], FACTS["alloc_totals"][1]
    assert f"Size {size:,} B ({size / 1e6:.1f} MB)" in d and f"Running total {total:,} B ({total / 1e6:.1f} MB)" in d
    d = text_of(views, "transfer H2D")
    gbps = FACTS["h2d_bytes"] / (FACTS["h2d_ms"] * 1e-3) / 1e9
    assert f"{gbps:,.2f} GB/s (bytes ÷ duration)" in d and f"the file says {FACTS['h2d_gbps']} GB/s" in d
    d = text_of(views, "nvidia_ioctl")
    assert "_IOC(read/write, 'F' (0x46), nr 0x2a, 32 B)" in d and "NV_ESC_RM_CONTROL" in d
    d = text_of(views, "phase: weight loading")
    assert "Rule from the first allocation to the first kernel launch" in d


def test_the_driver_tables_answer_from_the_file(views):
    kt, _ = views
    tables = {t.key: t for t in driver_tables(kt)}
    launches = next(r for r in tables["d-calls"].rows if r[0] == "cuLaunchKernel")  # name, api, count ...
    assert launches[1:3] == ("driver", FACTS["launches"])
    answers = " ".join(str(c) for t in tables.values() for r in t.rows for c in r)
    assert f"{sum(FACTS['alloc_sizes']):,} B" in answers  # the allocations' bytes, as the file gives them


def test_the_notes_of_a_hop_across_the_driver_link(tmp_path):
    from driver_ui_files import write_linked

    from tracetui.ui.view.driver_notes import back_texts, driver_link_note, hop_texts

    kineto, drv = write_linked(tmp_path)
    kt = open_traces([str(kineto), str(drv)]).kineto
    k = next(i for i in range(kt.first) if kt.name(i) == "cuLaunchKernel" and int(kt.link.kineto_to_driver[i]) >= 0)
    call = int(kt.link.kineto_to_driver[k])
    gpu = kt.gpu_events_of(k)
    note, toast = hop_texts(kt, k, call, gpu)
    assert note.plain.startswith(f"> driver call {kt.name(call)}") and f"linked to {kt.name(k)}" in note.plain
    assert "heuristic link, clock offset ±" in note.plain and toast.startswith(f"driver call {kt.name(call)}")
    assert ("> again: the kernel" if gpu.size == 1 else f"> again: its {gpu.size:,} GPU events") in toast
    note, toast = back_texts(kt, k, call)
    op = int(kt.cpu_op_of[k])
    assert note.plain.startswith(f"< runtime call {kt.name(k)} (op {kt.name(op)})") and "heuristic link" in toast
    assert driver_link_note(kt, call).plain == f" via {kt.name(k)} (heuristic link)"
