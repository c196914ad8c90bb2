"""Selectors on real traces and real ET + Kineto pairs."""

from __future__ import annotations

import pytest
from shared_traces import load_shared_kineto, load_shared_pair

from tracetui.errors import TraceError
from tracetui.export import resolve_selector
from tracetui.export.report import build_report
from tracetui.export.selectors import SelectorError
from tracetui.session import LinkedTrace

BERT = "h100_bert_inference.json.gz"


def bert() -> LinkedTrace:
    return LinkedTrace(load_shared_kineto(BERT))


def test_ext_selector_finds_the_cpu_op():
    lt = bert()
    node = resolve_selector(lt, "ext:9")
    assert lt.kineto.name(node) == "aten::index_select"
    # the op's kernel carries the same External id
    (gpu,) = lt.kineto.gpu_events_of(node)
    assert lt.kineto.external_id[gpu] == 9


def test_name_selector_counts_occurrences_from_one():
    lt = bert()
    kt = lt.kineto
    linears = sorted((i for i in range(kt.n_events) if kt.name(i) == "aten::linear"), key=lambda i: kt.ts[i])
    assert len(linears) == 26
    assert resolve_selector(lt, "name:aten::linear") == linears[0]
    assert resolve_selector(lt, "name:aten::linear#1") == linears[0]
    assert resolve_selector(lt, "name:aten::linear#3") == linears[2]
    assert resolve_selector(lt, "name:aten::linear#26") == linears[25]
    with pytest.raises(SelectorError, match="occurs 26 time"):
        resolve_selector(lt, "name:aten::linear#27")
    # a name that ends in #digits matches whole, on the host side first
    step = resolve_selector(lt, "name:ProfilerStep#6")
    assert kt.name(step) == "ProfilerStep#6" and kt.kind_of(step).name == "ANNOTATION"
    assert resolve_selector(lt, "name:ProfilerStep#6#1") == step


def test_node_selector_and_no_selector():
    lt = bert()
    assert resolve_selector(lt, None) is None
    assert resolve_selector(lt, "  ") is None
    assert resolve_selector(lt, "node:66") == 66
    lane_root = lt.kineto.n_events  # the first lane's root node
    assert resolve_selector(lt, f"node:{lane_root}") == lane_root


@pytest.mark.parametrize("sel,msg", [
    ("ext:424242", "no cpu_op or user_annotation has External id 424242"),
    ("ext:abc", "'abc' is not an integer"),
    ("name:aten::nope", "no event named 'aten::nope'"),
    ("node:-1", "node ids run from 0"),
    ("kernel:3", "unknown kind 'kernel'"),
    ("ext", "expected ext:<External id>"),
    ("et:5", "no Execution Trace is loaded"),
])
def test_bad_selectors_raise_one_line_trace_errors(sel, msg):
    with pytest.raises(SelectorError) as exc:
        resolve_selector(bert(), sel)
    assert isinstance(exc.value, TraceError)
    assert msg in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith(load_shared_kineto(BERT).path)


def test_et_selector_on_cpu_pair_exact_link():
    lt = load_shared_pair("torch_cpu_pair")
    node = resolve_selector(lt, "et:5")
    kt = lt.kineto
    assert kt.name(node) == "aten::layer_norm"
    assert kt.args(node)["Record function id"] == lt.et.rf_id[lt.et.pos_of_id(5)] == 3
    rep = build_report(lt, node)
    assert rep.et_node is not None and rep.et_node["id"] == 5 and not rep.et_node["heuristic"]
    assert rep.et_node["inputs"][0]["type"].startswith("Tensor(")
    assert rep.inputs and rep.inputs[0]["dims"] == rep.et_node["inputs"][0]["shape"]
    with pytest.raises(SelectorError, match="no ET node has id 999999"):
        resolve_selector(lt, "et:999999")


def test_et_selector_on_gpu_pair_heuristic_link():
    lt = load_shared_pair("hta_simple_add_cuda_pair")
    node = resolve_selector(lt, "et:36")
    kt = lt.kineto
    assert kt.name(node) == "aten::add"
    rep = build_report(lt, node)
    assert rep.et_node["heuristic"] is True and rep.et_node["found_by"] == "sequence number"  # raw: seq_id 0
    assert [a["shape"] for a in rep.et_node["inputs"][:2]] == [[256, 256], [256, 256]]
    assert len(rep.kernels) == 1 and rep.kernels.iloc[0]["kernel_category"] == "elementwise"
    assert ("ET links were found without Record function ids (heuristic): 6 by sequence number, 30 by "
            "name-and-order alignment") in rep.notes


def test_et_selector_for_an_unlinked_et_node():
    lt = load_shared_pair("param_dlrm_rank0_cuda_pair")
    with pytest.raises(SelectorError, match=r"ET node 1920 \(aten::select\) has no Kineto event"):
        resolve_selector(lt, "et:1920")
