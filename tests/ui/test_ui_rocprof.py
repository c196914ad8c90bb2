"""A rocprofv3 file and a generic Chrome trace in the browser (issue 38), at 80x24: the status
line says what each is (and that the rocprofv3 sample has no launch records), ``s`` opens the
summaries with the raw file's top kernel, and a kernel's detail pane shows its grid, workgroup,
VGPRs, SGPRs, LDS and scratch as the file gives them (gzip + json here, not tracetui)."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from pilot import open_app, open_summaries, pane_lines, press, screen_text
from rocprof_files import SAMPLE, TOOL, raw_sample
from shared_traces import SAMPLES

from tracetui.ui.app import TraceApp
from tracetui.ui.detail.detail_pane import DetailPane
from tracetui.ui.view.status_parts import trace_parts

JAX = SAMPLES / "h200" / "jax_gpu_step.trace.json.gz"


def _first_dispatch_of(name_start: str) -> tuple[dict, dict]:
    """(the first dispatch of the kernel whose name starts so, its kernel symbol) of the raw file."""
    proc = raw_sample()[TOOL][0]
    sym = {k["kernel_id"]: k for k in proc["kernel_symbols"]}
    d = next(d for d in proc["buffer_records"]["kernel_dispatch"]
             if sym[d["dispatch_info"]["kernel_id"]]["formatted_kernel_name"].startswith(name_start))
    return d, sym[d["dispatch_info"]["kernel_id"]]


def _status_words(screen) -> str:
    return " ".join(str(p.forms[0]) for p in trace_parts(screen.linked))


@pytest.mark.slow  # opens the 43,915-kernel sample: ~3 s
async def test_the_rocprof_sample_in_the_browser():
    d, sym = _first_dispatch_of("ncclDevKernel_Generic_1")
    info = d["dispatch_info"]
    app = TraceApp([str(SAMPLE)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        words = _status_words(screen)
        assert "AMD rocprofv3 trace" in words and "no launch records (0/43,915 GPU events linked)" in words
        assert screen_text(app).split("\n")[0].startswith(" 908_results.json.gz · AMD rocprofv3 trace · no launches")
        kt = screen.source.kt
        node = next(i for i in range(kt.n_events) if int(kt.correlation[i]) == d["correlation_id"]["internal"])
        screen.select(node)
        await pilot.pause()
        pane = screen.query_one(DetailPane)
        shown = []
        for first in ("Grid ", "VGPRs "):  # the pane shows a few rows at 80x24: scroll to each part
            row = next(i for i, s in enumerate(pane._lines) if s.text.startswith(first))
            pane.scroll_to(y=row, animate=False)
            await pilot.pause()
            shown += [" ".join(ln.split()) for ln in pane_lines(app, pane)]
        wg = [info["workgroup_size"][c] for c in "xyz"]
        grid = [info["grid_size"][c] for c in "xyz"]
        blocks = [-(-g // w) for g, w in zip(grid, wg)]
        for expected in (f"Grid {' × '.join(map(str, blocks))}", f"Block {' × '.join(map(str, wg))}",
                         f"VGPRs {sym['arch_vgpr_count']}", f"SGPRs {sym['sgpr_count']}",
                         f"LDS bytes {info['group_segment_size']:,}", f"scratch bytes {info['private_segment_size']:,}",
                         f"grid size (work-items) {' × '.join(map(str, grid))}"):
            assert any(line.startswith(expected) for line in shown), (expected, shown)


@pytest.mark.slow
async def test_s_shows_the_rocprof_samples_top_kernel():
    proc = raw_sample()[TOOL][0]
    names = {k["kernel_id"]: k["formatted_kernel_name"] for k in proc["kernel_symbols"]}
    ns: Counter = Counter()
    for d in proc["buffer_records"]["kernel_dispatch"]:
        ns[names[d["dispatch_info"]["kernel_id"]]] += d["end_timestamp"] - d["start_timestamp"]
    top = ns.most_common(1)[0][0]
    app = TraceApp([str(SAMPLE)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_summaries(app, pilot)
        assert top[:11] in screen_text(app).split("\n")[5]  # the first row, cut to its column
        await press(pilot, "escape")


async def test_a_generic_chrome_trace_in_the_browser():
    """JAX's trace.json: the status line says Chrome trace JSON (never a PyTorch trace) and its
    75 kernels (counted in the raw file) with no launch records."""
    raw = json.load(gzip.open(JAX))
    gpu_pid = next(e["pid"] for e in raw["traceEvents"] if e.get("name") == "process_name"
                   and e["args"]["name"].startswith("/device:GPU:"))
    n = sum(1 for e in raw["traceEvents"] if e.get("ph") == "X" and e["pid"] == gpu_pid)
    app = TraceApp([str(JAX)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        words = _status_words(screen)
        assert "Chrome trace JSON" in words and f"({n} kernels)" in words and "no launch records" in words
        assert "Chrome trace JSON" in screen_text(app)


def test_a_perfetto_exports_flow_is_shown_at_both_ends(tmp_path):
    """The flow of the Perfetto example (s on CrRendererMain inside Layout, f with bp e inside
    V8.Execute): each end's detail names the event at the other end (headless view)."""
    import io
    import sys
    from pathlib import Path

    from rich.console import Console

    from tracetui.session import open_traces
    from tracetui.ui.view.trace_detail import TraceDetail
    from tracetui.ui.view.trace_row_source import TraceRowSource

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from test_chrome_generic import perfetto_doc

    doc = perfetto_doc()
    flow = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert [(e["ph"], e["tid"], e["ts"]) for e in flow] == [("s", 11, 1150), ("f", 12, 2100)]
    p = tmp_path / "perfetto.json"
    p.write_text(json.dumps(doc))
    linked = open_traces([str(p)])
    kt = linked.kineto
    text = {}
    for name in ("Layout", "V8.Execute", "RunTask"):
        i = next(i for i in range(kt.n_events) if kt.name(i) == name)
        console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
        console.print(TraceDetail(TraceRowSource(linked)).build(i, width=100))
        text[name] = " ".join(console.export_text().split())
    assert "Flows out → V8.Execute · thread 12 (pid 10, renderer) · toplevel.flow 0x1" in text["Layout"]
    assert "Flows in ← Layout · CrRendererMain (renderer, pid 10) · toplevel.flow 0x1" in text["V8.Execute"]
    assert "Flows" not in text["RunTask"]  # the start binds to the innermost span (Layout), not its parent
    assert "Args src_file a.cc" in text["RunTask"]
