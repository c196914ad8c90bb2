"""``tracetui summary`` as text: every column kept in an 80-column terminal (names wrap,
numbers never cut), piped output no wider than its content, identical devices grouped, one
sentence instead of empty GPU tables, and the idle-gaps table says it sums per stream."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console
from shared_traces import kineto_path

from tracetui import cli
from tracetui.cli.summary_render import grouped_devices, print_summary

HEADERS = {
    "Kernel categories": ("category", "count", "total ms", "%"),
    "Top kernels": ("name", "category", "count", "total ms", "mean µs", "%"),
    "Top ops": ("name", "count", "host ms", "GPU direct ms", "GPU subtree ms", "%"),
    "Streams": ("device:stream", "events", "busy", "idle", "host wait", "kernel-to-kernel", "other"),
    "Launch calls": ("class", "count", "call mean", "call p90", "delay med", "delay p90", "delay max"),
}


def _summary(name: str) -> dict:
    from tracetui.analysis.categories import get_categorizer
    from tracetui.analysis.summary import build_summary
    from tracetui.io import jsonout
    from tracetui.session import LinkedTrace, load_trace

    kt = load_trace(str(kineto_path(name)))
    return jsonout.loads(jsonout.dumps(build_summary(LinkedTrace(kineto=kt), get_categorizer(None))))


def _render(summary: dict, width: int) -> list[str]:
    buf = io.StringIO()
    print_summary(summary, Console(file=buf, width=width, color_system=None))
    return buf.getvalue().splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["b200x8_eager.json.gz", "h100_bert_inference.json.gz",
                                  "mi300_resnet_train_checkpointing.json.gz"])
def test_80_columns_keep_every_column_and_number(name):
    summary = _summary(name)
    lines = _render(summary, 80)
    assert max(cell_len(line) for line in lines) <= 80
    text = "\n".join(lines)
    for title, headers in HEADERS.items():
        at = next(i for i, line in enumerate(lines) if line.startswith(title))
        header_line = lines[at + 1]
        for header in headers:
            assert header in header_line, (title, header, header_line)
    top = summary["kernels"][0]
    assert f"{top['count']:,}" in text and f"{top['total_us'] / 1e3:,.3f}" in text and f"{top['mean_us']:,.3f}" in text


def test_the_top_kernel_of_b200_is_shown_whole_across_wrapped_lines():
    lines = _render(_summary("b200x8_eager.json.gz"), 80)
    at = next(i for i, line in enumerate(lines) if line.startswith("Top kernels"))
    first_cells = "".join(line.split("│")[0].strip() for line in lines[at + 3: at + 9])
    # the longest-running kernel, read from the file (36 launches, 3.182 ms)
    assert first_cells.startswith("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1")


def test_piped_output_is_no_wider_than_its_content(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert cli.main(["summary", str(kineto_path("h100_bert_inference.json.gz"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(line == line.rstrip() for line in lines)
    widest = max(cell_len(line) for line in lines)
    assert widest < 120  # the old fixed width padded everything to 120
    table_rule = next(line for line in lines if line.startswith("━"))
    assert cell_len(table_rule) < widest + 1


@pytest.mark.slow
def test_identical_devices_are_grouped():
    # deviceProperties of b200x8_eager: 8 x "NVIDIA B200"; v100x2_nccl_216k: 2 x "Tesla V100-SXM2-32GB"
    assert "devices: 8 × NVIDIA B200" in "\n".join(_render(_summary("b200x8_eager.json.gz"), 120))
    assert "devices: 2 × Tesla V100-SXM2-32GB" in "\n".join(_render(_summary("v100x2_nccl_216k.json.gz"), 120))
    assert grouped_devices(["A", "B", "A"]) == "2 × A, B"


def test_a_trace_without_gpu_work_prints_one_sentence_not_empty_tables():
    lines = _render(_summary("cpu_only_small.json.gz"), 80)
    text = "\n".join(lines)
    assert "No GPU work in this trace (no kernel, memcpy or memset)" in text
    for title in ("GPU timeline", "Kernel categories", "Top kernels", "Streams", "Idle gaps"):
        assert title not in text
    assert "aten::empty" in text  # its 4 cpu_ops are still listed


def test_idle_gaps_title_says_it_sums_per_stream():
    summary = _summary("mi300_resnet_train_checkpointing.json.gz")
    text = " ".join(" ".join(_render(summary, 200)).split())  # the title wraps at its table's width
    assert len(summary["streams"]) == 2
    assert ("Idle gaps by class (summed over 2 streams; gaps on different streams overlap in time, so the total "
            "can exceed the span)") in text
