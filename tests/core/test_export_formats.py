"""Every export format produced from a real trace and parsed back."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

import numpy as np
import orjson
import pytest
from shared_traces import KINETO, load_shared_kineto, load_shared_pair

from tracetui.export import export_bytes, resolve_selector, write_export
from tracetui.export.report import build_report
from tracetui.kineto import Kind, load_kineto
from tracetui.session import LinkedTrace


def linked(name: str) -> LinkedTrace:
    return LinkedTrace(load_shared_kineto(name))


BERT = "h100_bert_inference.json.gz"


def _md_sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if line.startswith("## "):
            cur = line[3:]
            out[cur] = []
        elif cur is not None and line.startswith("|"):
            out[cur].append(line)
    return out


def test_markdown_subtree_tables_count_rows():
    lt = linked(BERT)
    root = resolve_selector(lt, "name:nn.Module: BertLMHeadModel_0")
    text = export_bytes(lt, root, "md").decode()
    secs = _md_sections(text)
    # header + separator + one row per GPU event of the step (60 kernels + 1 memcpy)
    assert len(secs["GPU events"]) == 2 + 61
    assert len(secs["Kernel categories"]) == 2 + 6
    assert len(secs["GPU events by name"]) == 2 + 12
    rep = build_report(lt, root, python_frames=True)
    assert len(rep.ops) > 200  # cut at 200 rows, with a note
    every = export_bytes(lt, root, "md", python_frames=True).decode()
    assert len(_md_sections(every)["Op tree"]) == 2 + 200
    assert f"_{len(rep.ops) - 200:,} more rows not shown" in every
    assert len(secs["Idle gaps in the GPU window"]) == 2 + 60
    # names are code spans, pipes never break the table
    for row in secs["GPU events"][2:]:
        assert row.count(" | ") == 13  # 14 columns: grid, block and the blocks computed from the grid
    assert "| 0 | python | `nn.Module: BertLMHeadModel_0` |" in text  # the root, even a python frame


def test_markdown_escapes_pipes_in_names():
    lt = load_shared_pair("hta_simple_add_cuda_pair")
    root = resolve_selector(lt, "name:[param|torch.add|0|0|0]")
    text = export_bytes(lt, root, "md").decode()
    assert "`[param\\|torch.add\\|0\\|0\\|0]`" in text
    chain = _md_sections(text)["Parent chain"]
    assert len(chain) == 2 + 3
    assert all(r.count(" | ") == 4 for r in chain[2:])


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.by_heading: dict[str, list[list[str]]] = {}
        self.headings: list[str] = []
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []
        self._cell: list[str] | None = None
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += attrs
        if tag == "table":
            self.tables.append([])
            self.by_heading[self.headings[-1]] = self.tables[-1]
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "h2":
            self._in_h2 = True
            self.headings.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell or []))
            self._cell = None
        elif tag == "h2":
            self._in_h2 = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_h2:
            self.headings[-1] += data


def test_html_is_self_contained_and_parses():
    lt = linked(BERT)
    root = resolve_selector(lt, "name:aten::linear#3")
    page = export_bytes(lt, root, "html").decode()
    p = _Tables()
    p.feed(page)
    assert "link" not in p.tags and "img" not in p.tags and "iframe" not in p.tags
    assert "src" not in {k for k, _ in p.attrs}  # the sorting script is inline
    assert not any(v and ("http://" in v or "https://" in v) for _, v in p.attrs)
    assert "style" in p.tags
    by_title = p.by_heading
    # one kernel: nothing is idle inside the subtree's GPU window, the section says "none"
    assert "Idle gaps in the GPU window" in p.headings and "Idle gaps in the GPU window" not in by_title
    assert "Plots" in p.headings and len(p.tables) == len(p.headings) - 2  # "Plots" holds figures, no table
    kernels = by_title["GPU events"]
    assert kernels[0][:3] == ["start (µs)", "device:stream", "name"]
    assert len(kernels) == 2  # header + the one GEMM
    assert kernels[1][2].startswith("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16")  # < > escaped and back
    assert kernels[1][5:10] == ["40,2,1", "128,1,1", "40,2,1", "88", "33,792"]  # grid, block, blocks
    inputs = by_title["Root op inputs (Kineto args)"]
    assert [r[1] for r in inputs[1:]] == ["[1, 141, 512]", "[512, 512]", "[512]"]
    assert len(by_title["Op tree"]) == 1 + 12


def test_csv_rows_cover_the_subtree():
    lt = linked(BERT)
    kt = lt.kineto
    root = resolve_selector(lt, "name:nn.Module: BertLMHeadModel_0")
    rows = list(csv.DictReader(io.StringIO(export_bytes(lt, root, "csv", python_frames=True).decode())))
    sub = kt.subtree(root)
    assert len(rows) == sub.size
    assert [int(r["node"]) for r in rows] == sub.tolist()  # tree order
    # without python frames (the default): every other node, in the same order, the root kept
    short = list(csv.DictReader(io.StringIO(export_bytes(lt, root, "csv").decode())))
    keep = [n for n in sub.tolist() if kt.kind[n] != int(Kind.PYTHON) or n == root]
    assert [int(r["node"]) for r in short] == keep and len(keep) == sub.size - 1173
    kernels = [r for r in rows if r["kind"] == "kernel"]
    assert len(kernels) == 60
    assert sum(float(r["dur_us"]) for r in kernels) == pytest.approx(309.437 - 2.24)
    assert all(r["kernel_category"] for r in kernels)
    assert rows[0]["name"] == "nn.Module: BertLMHeadModel_0" and rows[0]["level"] == "0"
    assert float(rows[0]["gpu_subtree_us"]) == pytest.approx(309.437)
    addmm = next(r for r in rows if r["name"] == "aten::addmm")
    assert addmm["input_dims"].startswith("[[")


def test_json_report_round_trip():
    lt = linked(BERT)
    root = resolve_selector(lt, "name:nn.Module: BertLMHeadModel_0")
    doc = orjson.loads(export_bytes(lt, root, "json"))
    assert doc["root"] == root and doc["root_name"] == "nn.Module: BertLMHeadModel_0"
    assert len(doc["kernels"]) == 61
    assert doc["gpu_timeline"]["busy_ms"] == pytest.approx(0.309437)
    assert {c["category"] for c in doc["kernel_categories"]} >= {"gemm", "attention_fwd", "normalization"}
    assert [p["kind"] for p in doc["parent_chain"]][0] == "lane"
    assert doc["idle_summary"][0]["idle_class"] == "host_wait" and doc["idle_summary"][0]["count"] == 60
    whole = orjson.loads(export_bytes(lt, None, "json"))
    assert whole["root"] is None and whole["window_us"] is None
    assert whole["gpu_timeline"]["total_ms"] == pytest.approx(3.907825)


def _same_subtree(a, ra, b, rb):
    sa, sb = a.subtree(ra), b.subtree(rb)
    assert [a.name(i) for i in sa] == [b.name(i) for i in sb]
    np.testing.assert_allclose(a.dur[sa], b.dur[sb], rtol=0, atol=1e-6)
    # times: exact after moving to the same origin
    np.testing.assert_allclose(a.ts[sa] + (a.origin_us - b.origin_us), b.ts[sb], rtol=0, atol=1e-6)
    pos = {int(x): k for k, x in enumerate(sb)}
    for x, y in zip(sa.tolist(), sb.tolist()):
        if a.is_gpu_work(x):
            la, lb = int(a.launch_of[x]), int(b.launch_of[y])
            assert a.name(la) == b.name(lb)
            assert pos[lb] == int(np.flatnonzero(sa == la)[0])
            assert (a.pids[x], a.tids[x]) == (b.pids[y], b.tids[y])
        assert (a.depth[x] - a.depth[ra]) == (b.depth[y] - b.depth[rb])


@pytest.mark.parametrize("trace,selector", [
    (BERT, "name:aten::linear#3"),
    (BERT, "name:nn.Module: BertLMHeadModel_0"),
    ("a100_cudagraph_nccl_rank0.json.gz", "name:cudaGraphLaunch#9"),
])
def test_chrome_export_reloads_to_same_subtree(tmp_path, trace, selector):
    lt = linked(trace)
    kt = lt.kineto
    root = resolve_selector(lt, selector)
    out = tmp_path / "sub.json"
    write_export(lt, root, "chrome", out)
    back = load_kineto(out)
    assert back.warnings == [] or all(w.kind not in ("gpu_unlinked",) for w in back.warnings)
    cand = [i for i in range(back.n_events) if back.name(i) == kt.name(root)
            and back.ts[i] + (back.origin_us - kt.origin_us) == kt.ts[root]]
    assert len(cand) == 1
    _same_subtree(kt, root, back, cand[0])
    assert back.device_properties == kt.device_properties
    assert back.metadata["tracetui_export"]["root_name"] == kt.name(root)
    # the parent chain comes along, so the root sits at the same depth
    assert back.depth[cand[0]] == kt.depth[root]
    assert back.gpu_stats.unlinked == 0
    assert back.gpu_stats.confirmed_by_flow == back.gpu_stats.gpu_events


def test_chrome_whole_trace_keeps_flows_and_big_integers(tmp_path):
    lt = linked("mi250_minitoy_train.json.gz")
    kt = lt.kineto
    out = tmp_path / "whole.json.gz"
    write_export(lt, None, "chrome", out)
    back = load_kineto(out)
    assert back.n_events == kt.n_events
    assert back.names == kt.names or sorted(back.names) == sorted(kt.names)
    pairs = {(kt.name(b), float(kt.ts[b]), kt.name(f)) for b, f in enumerate(kt.fwd_of.tolist()) if f >= 0}
    shift = back.origin_us - kt.origin_us
    back_pairs = {(back.name(b), float(back.ts[b]) + shift, back.name(f))
                  for b, f in enumerate(back.fwd_of.tolist()) if f >= 0}
    assert len(pairs) == 8 and back_pairs == pairs
    assert back.gpu_stats.linked == kt.gpu_stats.linked
    lt = linked("large_integer_values.json.gz")
    write_export(lt, None, "chrome", tmp_path / "big.json")
    big = load_kineto(tmp_path / "big.json")
    assert [big.args(i) for i in range(big.n_events)] == [lt.kineto.args(i) for i in range(lt.kineto.n_events)]


def test_every_format_from_the_whole_trace_and_a_stream():
    lt = linked("a100_triton.json.gz")
    for fmt in ("md", "html", "csv", "json", "chrome"):
        buf = io.BytesIO()
        n = write_export(lt, None, fmt, buf)
        assert n == len(buf.getvalue()) > 100
    text = io.StringIO()
    write_export(lt, None, "md", text)
    assert text.getvalue().startswith("# tracetui report: whole trace a100_triton.json.gz")
    assert (KINETO / "a100_triton.json.gz").exists()


def test_cuda_graph_report_uses_the_gpu_window():
    """The 9th cudaGraphLaunch takes 0.569 ms on the host; its 20 kernels run 38-53 ms later."""
    lt = linked("a100_cudagraph_nccl_rank0.json.gz")
    kt = lt.kineto
    root = resolve_selector(lt, "name:cudaGraphLaunch#9")
    rep = build_report(lt, root)
    assert kt.dur[root] == 569.0
    assert len(rep.kernels) == 20
    assert rep.window == (214559.0, 229998.0)
    assert rep.timeline_us["total"] == pytest.approx(15439.0)
    assert rep.timeline_us["busy"] == pytest.approx(444.0)
    assert dict(zip(rep.categories["category"], rep.categories["count"])) == {"gemm": 1, "triton": 1, "memory": 18}
    by = rep.gap_summary.set_index("idle_class")["count"].to_dict()
    assert by == {"host_wait": 0, "kernel_to_kernel": 1, "other": 18}
    assert (rep.gaps["start"] >= 214559.0).all() and (rep.gaps["end"] <= 229998.0).all()
