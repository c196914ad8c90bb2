"""ET <-> Kineto links and the scripted API chain on real pairs and a real GPU trace."""

from __future__ import annotations

import numpy as np
import pytest
from shared_traces import ET_DIR, SAMPLES, load_shared_pair

from tracetui import api
from tracetui.kineto import Kind
from tracetui.session import load_pair, load_trace


def test_torch_cpu_pair_links_every_rf_id():
    lt = load_shared_pair("torch_cpu_pair")
    s = lt.link.stats
    assert s.method == "rf_id"
    assert s.et_with_rf_id == 3200 and s.linked == 3200 and s.heuristic == 0
    assert s.name_mismatches == 0 and not s.suspect_mismatch
    et, kt, link = lt.et, lt.kineto, lt.link
    for pos in np.flatnonzero(link.et_to_kineto >= 0)[:500].tolist():
        assert et.name(pos) == kt.name(int(link.et_to_kineto[pos]))
        assert et.rf_id[pos] == kt.rf_id[int(link.et_to_kineto[pos])]


def test_threads_pair_reports_side_thread_as_et_only():
    lt = load_shared_pair("torch_cpu_pair_threads")
    s = lt.link.stats
    assert s.method == "rf_id"
    assert len(lt.et.thread_roots()) == 4
    assert s.et_only == 495
    assert s.linked == s.et_with_rf_id - 495
    # External id differs from Record function id for every event: the link never uses it
    kt = lt.kineto
    ops = np.flatnonzero(kt.kind == Kind.CPU_OP)
    assert (kt.external_id[ops] != kt.rf_id[ops]).all()


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["param_linear_cuda_pair", "param_dlrm_rank0_cuda_pair", "hta_simple_add_cuda_pair"])
def test_pairs_without_rf_ids_link_by_evidence_and_say_heuristic(folder):
    lt = load_shared_pair(folder)
    s = lt.link.stats
    assert s.method in ("sequence", "order")  # per-link counts: tests/core/test_link_evidence.py
    assert s.heuristic == s.linked > 0
    et, kt, link = lt.et, lt.kineto, lt.link
    linked = np.flatnonzero(link.et_to_kineto >= 0)
    same = sum(et.name(p) == kt.name(int(link.et_to_kineto[p])) for p in linked.tolist())
    assert same / linked.size >= 0.99
    assert link.heuristic[linked].all()
    assert any(w.kind == "heuristic_link" for w in lt.all_warnings())


def test_load_trace_detects_by_content(tmp_path):
    src = ET_DIR / "torch_cpu_pair" / "et.json.gz"
    odd = tmp_path / "trace.pt.trace.json.gz"  # an ET under a Kineto-looking name
    odd.write_bytes(src.read_bytes())
    et = load_trace(odd)
    assert not hasattr(et, "gpu_stats") and len(et.ids) == 3202
    lt = load_pair(ET_DIR / "torch_cpu_pair" / "kineto.json.gz", odd)  # either order
    assert lt.link.stats.linked == 3200


@pytest.mark.slow
def test_api_chain_on_real_gpu_pair():
    lt = load_shared_pair("param_linear_cuda_pair")
    et, kt, link = lt.et, lt.kineto, lt.link
    # an ET op that launched GPU work
    op_pos = next(p for p in np.flatnonzero(link.et_to_kineto >= 0).tolist()
                  if et.name(p) == "aten::addmm" and len(kt.gpu_events_of(int(link.et_to_kineto[p]))))
    op_id = int(et.ids[op_pos])
    meta = api.operation_metadata_scrape(op_id, et)
    assert meta.id == op_id and meta.name == "aten::addmm"
    assert meta.op_schema.startswith("aten::addmm")
    assert meta.inputs and all(t.shape is not None for t in meta.inputs)
    assert meta.inputs[0].nbytes == meta.inputs[0].numel * meta.inputs[0].itemsize
    events = api.op_to_kernel_tracing(op_id, et, kt)
    assert events[0].name == "aten::addmm" and events[0].cat == "cpu_op"
    kernels = [e for e in events if e.cat == "kernel"]
    assert kernels and all(e.heuristic_link for e in events)
    ident = api.get_gpu_op_identifier(kernels[0])
    km = api.kernel_metadata_scrape(ident, kt)
    assert km.name == kernels[0].name and km.grid and km.block and km.registers_per_thread is not None
    back = api.kernel_to_op_tracing(ident, kt, et)
    assert back.id == op_id and back.name == "aten::addmm" and back.heuristic


def test_round_trip_kernel_op_kernels():
    lt = load_shared_pair("param_dlrm_rank0_cuda_pair")
    et, kt = lt.et, lt.kineto
    gpu = np.flatnonzero(kt.kind == Kind.KERNEL)
    checked = 0
    for g in gpu.tolist():
        ident = api.get_gpu_op_identifier(api._event(kt, g))
        op = api.kernel_to_op_tracing(ident, kt, et)
        if op is None:
            continue
        kernels = {e.index for e in api.op_to_kernel_tracing(op.id, et, kt)}
        assert g in kernels
        checked += 1
    assert checked >= 0.9 * gpu.size


def test_api_chain_on_cpu_pair_and_tree_navigation():
    from tracetui import find_node, format_parent_chain, format_subtree  # the public API

    lt = load_pair(SAMPLES / "cpu_transformer_et.json.gz", SAMPLES / "cpu_transformer_kineto.json.gz")
    assert lt.link.stats.linked == 2592 and lt.link.stats.heuristic == 0
    et, kt = lt.et, lt.kineto
    mm = next(p for p in range(len(et.ids)) if et.name(p) == "aten::mm")
    meta = api.operation_metadata_scrape(int(et.ids[mm]), lt)
    assert len(meta.inputs) == 2 and meta.outputs[0].shape is not None
    evs = api.op_to_kernel_tracing(int(et.ids[mm]), lt, lt)
    assert evs[0].name == "aten::mm" and not evs[0].heuristic_link
    k = evs[0].index
    node = find_node(kt, int(kt.external_id[k]), kt.pids[k], kt.tids[k])
    assert node == k
    chain = format_parent_chain(kt, k).splitlines()
    assert chain[-1].startswith("  " * (len(chain) - 1) + "[cpu_op] aten::mm")
    assert "aten::mm" in format_subtree(kt, k).splitlines()[0]


def test_unknown_ids_are_trace_errors():
    from tracetui.errors import TraceError

    lt = load_shared_pair("torch_cpu_pair")
    with pytest.raises(TraceError, match="no ET node with id 99999999"):
        api.operation_metadata_scrape(99999999, lt.et)
    with pytest.raises(TraceError):
        api.kernel_metadata_scrape((0.0, 1.0, 7, 123456), lt.kineto)


def test_top_level_api_exports():
    import tracetui

    for name in tracetui.__all__:
        assert getattr(tracetui, name) is not None


def test_api_link_memo_keeps_no_pair_alive():
    """The API links an ET to its Kineto trace once per pair (analysis.frames.per_trace);
    the memo is dropped with the Kineto trace and holds the ET only weakly."""
    import gc
    import weakref

    from tracetui.analysis import frames
    from tracetui.et import load_et
    from tracetui.kineto import load_kineto

    pair = ET_DIR / "hta_simple_add_cuda_pair"
    kt, et = load_kineto(pair / "kineto.json.gz"), load_et(pair / "et.json.gz")
    linked = [api.op_to_kernel_tracing(int(i), et, kt) for i in et.ids[:40]]
    assert sum(map(len, linked)) > 0 and id(kt) in frames._CACHE
    refs = weakref.ref(kt), weakref.ref(et)
    del kt, et, linked
    gc.collect()
    assert [r() for r in refs] == [None, None]
    assert all(ref() is not None for ref, _ in frames._CACHE.values())
