"""How ``tracetui summary`` tables fit a width (tracetui.cli.fit_table): number headers
wrap after hyphens, digits are never cut even in a terminal too narrow for them, piped names
fold but are never shortened, unnamed devices are grouped, and an Execution Trace alone gets
one sentence.  Facts asserted were counted in the raw trace files."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from shared_traces import ET_DIR, kineto_path

from tracetui import cli
from tracetui.cli.fit_table import (
    Col,
    column_widths,
    fitted_table,
    shorten,
    wrap_header,
)
from tracetui.cli.summary_render import grouped_devices, print_summary


def _summary(name: str) -> dict:
    from tracetui.analysis.categories import get_categorizer
    from tracetui.analysis.summary import build_summary
    from tracetui.io import jsonout
    from tracetui.session import LinkedTrace, load_trace

    kt = load_trace(str(kineto_path(name)))
    return jsonout.loads(jsonout.dumps(build_summary(LinkedTrace(kineto=kt), get_categorizer(None))))


@pytest.fixture(scope="module")
def a100_graph() -> dict:
    return _summary("a100_cudagraph_nccl_rank0.json.gz")


@pytest.fixture(scope="module")
def v100x2() -> dict:
    return _summary("v100x2_nccl_216k.json.gz")


def _render(summary: dict, width: int) -> list[str]:
    buf = io.StringIO()
    print_summary(summary, Console(file=buf, width=width, color_system=None))
    return buf.getvalue().splitlines()


def _block(lines: list[str], title: str) -> tuple[str, list[str]]:
    """(header text, body rows) of the table whose title starts with ``title``."""
    at = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    rule = next(i for i in range(at, len(lines)) if lines[i].startswith("━"))
    end = next((i for i in range(rule + 1, len(lines)) if "│" not in lines[i]), len(lines))
    return "\n".join(lines[at + 1:rule]), lines[rule + 1:end]


def test_wrap_header_breaks_at_spaces_and_after_hyphens():
    assert wrap_header("kernel-to-kernel", 10) == "kernel-to-\nkernel"
    assert wrap_header("kernel-to-kernel", 9) == "kernel-\nto-kernel"
    assert wrap_header("GPU subtree ms", 11) == "GPU subtree\nms"
    assert wrap_header("host ms", 20) == "host ms"


def test_shorten_keeps_both_ends_and_leaves_short_names_alone():
    name = "void at::native::elementwise_kernel<128, 4, " + "x" * 200 + ">::operator()"
    cut = shorten(Text(name), 60)
    assert len(cut.plain) == 60 and "…" in cut.plain
    assert cut.plain.startswith("void at::native::elementwise_kernel") and cut.plain.endswith(">::operator()")
    assert shorten("aten::mm", 60) == "aten::mm"


def test_numbers_keep_their_digits_when_the_width_is_too_small_for_them():
    cols = [Col("name", False), Col("bytes"), Col("total µs")]
    rows = [[Text("Memcpy DtoD (Device -> Device)"), "5,892,787,600", "21,862.000"]]
    widths = column_widths(cols, rows, 20)
    assert widths[1:] == [13, 10]  # the numbers' own widths, though 20 cells cannot hold them
    buf = io.StringIO()
    con = Console(file=buf, width=20, color_system=None)
    con.print(fitted_table("Copies", cols, rows, 20), crop=False)
    assert "5,892,787,600" in buf.getvalue() and "21,862.000" in buf.getvalue()


def test_a100_cudagraph_streams_fit_80_columns_with_a_wrapped_header(a100_graph):
    lines = _render(a100_graph, 80)
    assert max(cell_len(ln) for ln in lines) <= 80
    header, rows = _block(lines, "Streams")
    for word in ("device:stream", "events", "busy", "idle", "host wait", "other", "kernel-", "to-kernel"):
        assert word in header
    # the raw trace has 7,262 GPU events on device 0 stream 7, and GPU work on 6 streams
    assert len(rows) == 6
    assert rows[0].split("│")[0].strip() == "0:7" and rows[0].split("│")[1].strip() == "7,262"
    assert "Idle gaps by class (summed over 6 streams;" in "\n".join(lines)


@pytest.mark.slow
def test_v100x2_at_80_and_at_50_columns_keeps_every_digit(v100x2):
    # raw trace: 2,020 ncclKernel_AllReduce_RING_LL_Sum_float launches, 357,343 µs in all;
    # 2,040 DtoD memcpys moving 5,892,787,600 bytes
    for width in (80, 50):
        lines = _render(v100x2, width)
        _, kernels = _block(lines, "Top kernels")
        first = [c.strip() for c in kernels[0].split("│")]
        assert first[0].startswith("ncclKern") and first[2:4] == ["2,020", "357.343"]
        _, copies = _block(lines, "Copies")
        assert [c.strip() for c in copies[0].split("│")][:3] == ["DtoD", "2,040", "5,892,787,600"]
    assert max(cell_len(ln) for ln in _render(v100x2, 80)) <= 80


def test_piped_names_fold_but_are_never_shortened(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert cli.main(["summary", "--no-cache", str(kineto_path("b200x8_eager.json.gz"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(ln == ln.rstrip() for ln in lines)
    _, rows = _block(lines, "Top kernels")
    names = "".join(r.split("│")[0].strip() for r in rows)
    assert "…" not in names
    # the elementwise copy kernel's full (1,000+ character) name ends like this in the file
    assert "const&)::{lambda(int)#1})" in names


def test_unnamed_devices_are_grouped():
    assert grouped_devices(["", "", None]) == "3 × (unnamed)"
    assert grouped_devices([]) == "none listed"
    # deviceProperties of amd_vllm_hipgraph: 8 devices, every name ""
    lines = _render(_summary("amd_vllm_hipgraph.json.gz"), 80)
    assert "devices: 8 × (unnamed)" in lines


def test_an_execution_trace_alone_gets_its_counts(capsys):
    """An ET alone is summarised by counts (tests/core/test_counters_et_alone.py checks them)."""
    path = ET_DIR / "et_only" / "resnet_1gpu_schema_1.0.3.json.gz"
    assert cli.main(["summary", "--no-cache", str(path)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    assert "14,391 nodes, 14,388 ops on 2 threads" in " ".join(out.out.split())  # wraps at 80
