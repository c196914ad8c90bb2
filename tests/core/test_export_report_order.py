"""A subtree report a colleague can read (issue 26, item 5): it leads with the ops ranked by
the GPU time they launched (their kernels, shapes and share of the subtree), then kernels,
categories and gaps; python frames only when asked; the Markdown is GitHub tables (rendered by
markdown-it-py's GFM table rule, the parser rich ships with); the HTML stands alone and sorts
its tables.  The ranking is checked against the raw file (kernels grouped by the External id
of the op that launched them), not against tracetui's own tables."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from html.parser import HTMLParser

import orjson
import pytest
from markdown_it import MarkdownIt
from shared_traces import SAMPLES

from tracetui.cli import main
from tracetui.export import export_bytes, resolve_selector
from tracetui.session import LinkedTrace
from tracetui.store.traces import load_cached

SAMPLE = SAMPLES / "h100_bert_inference.json.gz"
ROOT = "name:nn.Module: BertLMHeadModel_0"
#: the sample records [memory] events (profile_memory): its report has the allocations after the gaps
SUBTREE_ORDER = ["Ops by GPU time", "GPU events by name", "GPU events", "Kernel categories", "GPU time breakdown",
                 "Idle time by class", "Idle gaps in the GPU window", "Memory: allocations", "Parent chain", "Op tree"]


@pytest.fixture(scope="module")
def lt() -> LinkedTrace:
    return load_cached([str(SAMPLE)], use_cache=False)


def _raw_ranking() -> list[tuple[int, float, int]]:
    """(External id, summed GPU µs, GPU events) of the launching ops, from the raw file: a GPU
    event carries the External id of the innermost cpu_op around its launch."""
    ev = json.load(gzip.open(SAMPLE))["traceEvents"]
    acc: dict[int, list[float]] = defaultdict(lambda: [0.0, 0])
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            a = acc[e["args"]["External id"]]
            a[0] += e["dur"]
            a[1] += 1
    return sorted(((x, round(us, 3), n) for x, (us, n) in acc.items()), key=lambda r: (-r[1], r[0]))


def _headings(md: str) -> list[str]:
    return [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]


def test_report_leads_with_ops_ranked_by_gpu_time(lt):
    root = resolve_selector(lt, ROOT)
    doc = orjson.loads(export_bytes(lt, root, "json"))
    ranking = doc["ops_by_gpu_time"]
    raw = _raw_ranking()
    kt = lt.kineto
    assert [(int(kt.external_id[r["node"]]), round(r["gpu_us"], 3), r["n_gpu"]) for r in ranking] == raw
    assert [r["rank"] for r in ranking] == list(range(1, len(raw) + 1))
    assert sum(r["percent"] for r in ranking) == pytest.approx(100.0)
    assert sum(r["gpu_us"] for r in ranking) == pytest.approx(309.437)  # 60 kernels + the memcpy
    top = ranking[0]  # the vocabulary projection: 141x512 @ 512x30522
    assert (top["name"], top["input_dims"]) == ("aten::addmm", "[[30522], [141, 512], [512, 30522], [], []]")
    assert top["gpu_names"][0]["name"].startswith("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm")
    assert top["percent"] == pytest.approx(100 * 41.28 / 309.437) and top["caller"] == "aten::linear"
    md = export_bytes(lt, root, "md").decode()
    assert _headings(md) == SUBTREE_ORDER
    first = md.split("## Ops by GPU time", 1)[1].split("\n## ", 1)[0]
    assert "| 1 | `aten::addmm` |" in first and "| 13.34 | 1 |" in first


def test_whole_trace_report_order(lt):
    md = export_bytes(lt, None, "md").decode()
    assert _headings(md) == ["Ops by GPU time", "Ops by name", "GPU events by name", "Kernel categories",
                             "GPU time breakdown", "Idle time by class", "Largest idle gaps", "Memory: allocations"]


def test_python_frames_only_when_asked(lt, tmp_path, capsys):
    root = resolve_selector(lt, ROOT)
    kt = lt.kineto
    plain = export_bytes(lt, root, "md").decode()
    tree = plain.split("## Op tree", 1)[1]
    assert "| python |" not in tree.replace("| 0 | python |", "")  # only the root itself
    assert "1,173 python function frames are not listed" in plain
    assert "| python |" in export_bytes(lt, root, "md", python_frames=True).decode().split("## Op tree", 1)[1]
    out = tmp_path / "with.json"
    assert main(["export", str(SAMPLE), "--select", ROOT, "--format", "json", "-o", str(out), "--no-cache",
                 "--python-frames"]) == 0
    kinds = {r["kind"] for r in orjson.loads(out.read_bytes())["ops"]}
    assert "python" in kinds
    assert main(["export", str(SAMPLE), "--select", ROOT, "--format", "json", "-o", str(out), "--no-cache"]) == 0
    ops = orjson.loads(out.read_bytes())["ops"]
    assert [r["node"] for r in ops if r["kind"] == "python"] == [root]
    assert len(ops) == sum(1 for n in kt.subtree(root).tolist() if n < kt.n_events and not kt.is_gpu_event(n)
                           and kt.kind[n] != 11) - 1173  # 11: instant events are not host events


def _split_row(line: str) -> list[str]:
    """Cells of a GFM table row: split at pipes that are not escaped."""
    body = line.strip()
    assert body.startswith("|") and body.endswith("|") and not body.endswith("\\|"), line
    return re.split(r"(?<!\\)\|", body[1:-1])


@pytest.mark.parametrize("selector", [ROOT, "name:aten::linear#1", None])
def test_markdown_tables_are_github_tables(lt, selector):
    root = resolve_selector(lt, selector) if selector else None
    md = export_bytes(lt, root, "md", python_frames=True).decode()
    lines = md.splitlines()
    tables = []  # (header cells, rows) as written
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            assert lines[i - 1] == "", f"no blank line before the table at line {i + 1}"
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            head = _split_row(block[0])
            assert all(re.fullmatch(r"-{3,}", c) for c in _split_row(block[1])), block[1]
            assert len(_split_row(block[1])) == len(head)
            for row in block[2:]:
                assert len(_split_row(row)) == len(head), row
            tables.append((head, block[2:]))
        i += 1
    html = MarkdownIt("commonmark").enable("table").render(md)
    rendered = re.findall(r"<table>(.*?)</table>", html, flags=re.S)
    assert len(rendered) == len(tables) >= 6
    for (head, rows), t in zip(tables, rendered):
        assert len(re.findall(r"<th[\s>]", t)) == len(head)
        assert len(re.findall(r"<tr[\s>]", t)) == 1 + len(rows)
        assert len(re.findall(r"<td[\s>]", t)) == len(head) * len(rows)
    # kernel names stay code: their template brackets are text, never HTML tags
    assert "<code>void cutlass::Kernel2&lt;cutlass_80" in html


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.th_classes: list[str | None] = []
        self.script = ""
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "th":
            self.th_classes.append(dict(attrs).get("class"))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.script += data


def test_html_stands_alone_and_sorts_its_tables(lt):
    page = export_bytes(lt, resolve_selector(lt, ROOT), "html").decode()
    p = _Page()
    p.feed(page)
    assert p.tags.count("script") == 1 and p.tags.count("table") == len(SUBTREE_ORDER)
    assert not {"link", "img", "iframe", "object"} & set(p.tags)
    assert not any(k in ("src", "href") for k, _ in p.attrs)  # nothing fetched, nothing linked
    assert not any(v and "://" in v for _, v in p.attrs) and "://" not in p.script
    assert p.th_classes and all(c == "sortable" for c in p.th_classes)
    assert "addEventListener" in p.script and "aria-sort" in p.script
