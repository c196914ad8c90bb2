"""Accelerator device work beyond CUDA (issue 18): MTIA device events are device work linked
to their launches, the trace origin ignores outlier timestamps, lanes keep one name.

Counts were read from ``mtia_inference_rank0.json.gz`` with a small json script: 1,313
``mtia_ccp_events`` (877 ``dma_request``), 991 of them carry a ``correlation`` that a
``mtia_runtime`` event also carries (and an ``ac2g`` flow confirms); the other 322 start
before the profiler's window and have neither.  Metadata rows sit at ``ts`` 0.0, events
at 701,805,074,372.596 .. 701,805,517,864.886 µs.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
from shared_traces import kineto_path, load_shared_kineto

from tracetui.kineto.kinds import Kind

MTIA = "mtia_inference_rank0.json.gz"


def test_mtia_device_events_are_device_work_linked_to_their_launches():
    t = load_shared_kineto(MTIA)
    s = t.gpu_stats
    assert (s.gpu_events, s.linked, s.confirmed_by_flow, s.no_correlation) == (1313, 991, 991, 322)
    gpu = np.flatnonzero(np.isin(t.kind, [int(Kind.KERNEL), int(Kind.MEMCPY)]))
    assert gpu.size == 1313
    assert int((t.kind == int(Kind.MEMCPY)).sum()) == 877  # dma_request
    linked = gpu[t.launch_of[gpu] >= 0]
    pairs = Counter((t.name(int(t.launch_of[g])).split(" - ")[0], t.name(int(g))) for g in linked)
    assert pairs == Counter({
        ("enqueueCommand memcpyHtoDAsync", "dma_request"): 333,
        ("enqueueCommand memcpyDtoHAsync", "dma_request"): 324,
        ("recordEvent", "event_record"): 224,
        ("enqueueCommand waitOnEvent", "event_wait"): 37,
        ("runFunction", "remote"): 37,
        ("runFunction", "merge"): 36,
    })
    assert {t.category(int(t.launch_of[g])) for g in linked} == {"mtia_runtime"}
    # each device event sits under its launch in the tree, on a device lane of MTIA 17
    assert (t.parent[linked] == t.launch_of[linked]).all()
    lanes = {t.lanes[int(li)] for li in t.lane_of[gpu]}
    assert all(ln.is_gpu and ln.pid == 17 for ln in lanes) and len(lanes) == 12


def test_mtia_summary_shows_device_time(tmp_path, monkeypatch, capsys):
    from tracetui.cli import main

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    assert main(["summary", "--json", "--no-cache", str(kineto_path(MTIA))]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trace"]["gpu_events"] == 1313 and doc["trace"]["gpu_events_unlinked"] == 322
    tl = doc["gpu_timeline"]
    assert tl["busy_ms"] > 400 and tl["total_memcpy_ms"] > 40
    assert abs(tl["computation_ms"] + tl["exposed_memcpy_ms"] - tl["busy_ms"]) < 1e-6
    cats = {c["category"]: c["count"] for c in doc["kernel_categories"]}
    assert sum(cats.values()) == 1313
    assert {k["name"] for k in doc["kernels"]} >= {"event_wait", "merge", "remote", "pe_exe", "dma_request"}
    assert doc["trace"]["gpu_lanes"][0] == "Stream 101 (MTIA 17, pid 17)"


def test_origin_lies_within_the_real_span():
    t = load_shared_kineto(MTIA)
    assert t.origin_us == 701_805_074_372  # the first event, not a metadata row at ts 0.0
    assert float(np.nanmin(t.ts)) >= 0.0 and float(np.nanmax(t.ts)) < 450_000.0  # µs: the 0.44 s span


def test_origin_rule_ignores_outliers_and_names_them():
    from tracetui.kineto.timestamps import OUTLIER_BEFORE_MEDIAN_US, choose_origin

    ints = np.array([0, 1_700_000_000_000_000, 1_700_000_000_000_500, 1_700_000_000_001_000, 5], dtype=np.int64)
    fr = np.zeros(5)
    meta = np.array([False, False, False, False, True])
    origin, out = choose_origin(ints, fr, meta)
    assert origin == 1_700_000_000_000_000 and out.tolist() == [True, False, False, False, False]
    assert OUTLIER_BEFORE_MEDIAN_US == 86_400_000_000
    # a trace that starts at 0 keeps its origin at 0
    origin, out = choose_origin(np.array([0, 10, 20]), np.zeros(3), np.zeros(3, bool))
    assert origin == 0 and not out.any()


def test_outlier_event_is_kept_outside_the_tree_and_named(tmp_path):
    import gzip

    from tracetui.kineto import load_kineto

    doc = json.loads(gzip.open(kineto_path("a100_triton.json.gz")).read())
    ev = doc["traceEvents"]
    ev.append({"ph": "X", "cat": "cpu_op", "name": "placeholder", "pid": ev[0].get("pid", 0),
               "tid": ev[0].get("tid", 0), "ts": 0.0, "dur": 1.0})
    p = tmp_path / "outlier.json"
    p.write_text(json.dumps(doc))
    t = load_kineto(p)
    ref = load_shared_kineto("a100_triton.json.gz")
    assert t.origin_us == ref.origin_us
    w = [x for x in t.warnings if x.kind == "outlier_timestamp"]
    assert len(w) == 1 and w[0].count == 1


def test_lane_names_agree_between_tree_and_timeline():
    t = load_shared_kineto(MTIA)
    for ln in t.lanes:
        assert ln.short, ln
        if not ln.short.startswith(("GPU", "T ")):
            assert ln.label.startswith(ln.short), (ln.label, ln.short)
    dev = [ln for ln in t.lanes if ln.is_gpu]
    assert [ln.short for ln in dev][:2] == ["Stream 101", "Stream 102"]
    cuda = load_shared_kineto("h100_bert_inference.json.gz")
    g = next(ln for ln in cuda.lanes if ln.is_gpu)
    assert g.label == f"GPU {g.pid} stream {g.tid}" and g.short == f"GPU{g.pid} s{g.tid}"


def _modified_copy(tmp_path, name: str, edit) -> object:
    import gzip

    from tracetui.kineto import load_kineto

    doc = json.loads(gzip.open(kineto_path(name)).read())
    edit(doc["traceEvents"])
    p = tmp_path / f"modified_{name.replace('.gz', '')}"
    p.write_text(json.dumps(doc))
    return load_kineto(p)


def test_stream_sync_pseudo_lane_attaches_to_its_stream(tmp_path):
    """a100_event_sync_multistream's "Stream Wait Event" (cuda_sync, pid 0, stream 24), moved
    to the pseudo thread 1000024 "stream 24 (sync)" as newer Kineto writes it (no shared
    trace has one)."""
    def edit(ev):
        for e in ev:
            if e.get("cat") == "cuda_sync" and e.get("tid") == 24:
                e["tid"] = 1_000_024
        ev.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 1_000_024,
                   "args": {"name": "stream 24 (sync)"}})

    t = _modified_copy(tmp_path, "a100_event_sync_multistream.json.gz", edit)
    ref = load_shared_kineto("a100_event_sync_multistream.json.gz")
    assert [ln.label for ln in t.lanes] == [ln.label for ln in ref.lanes]
    assert [ln.label for ln in t.lanes if ln.is_gpu] == ["GPU 0 stream 20", "GPU 0 stream 24", "GPU 0 stream 28"]
    sync = [i for i in range(t.n_events) if t.name(i) == "Stream Wait Event"]
    assert len(sync) == 1 and t.lanes[int(t.lane_of[sync[0]])].label == "GPU 0 stream 24"
    assert int(t.parent[sync[0]]) == t.lanes[int(t.lane_of[sync[0]])].node
    assert t.gpu_stats.gpu_events == ref.gpu_stats.gpu_events  # not device work


# ------------------------------------------------------------------ counters
CUPTI = "a100_cupti_counters.json.gz"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"


def _cupti_facts():
    import gzip

    ev = json.loads(gzip.open(kineto_path(CUPTI)).read())["traceEvents"]
    ranges = [e for e in ev if e.get("cat") == "cuda_profiler_range"]
    return ranges, sum(e["args"][FFMA] for e in ranges)


def test_cupti_counter_model():
    from tracetui.kineto.counters import counters_of

    ranges, ffma_total = _cupti_facts()
    assert len(ranges) == 77 and ffma_total == 39_142_369_720
    t = load_shared_kineto(CUPTI)
    c = counters_of(t)
    assert (c.events.size, c.ranges.size, c.n_samples, len(c.series_names)) == (77, 77, 693, 9)
    missing = int(next(e for e in c.ranges.tolist() if t.name(e) == "__missing__"))
    vals = dict(c.of_event(missing))
    assert vals[FFMA] == 9_119_334_400 and vals["smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"] == 24_780_800
    row = next(r for r in c.table() if r["series"] == FFMA)
    assert row["samples"] == 77 and row["sum"] == ffma_total and row["max"] == 9_119_334_400


def test_cupti_counters_in_summary_and_export(tmp_path, monkeypatch, capsys):
    from tracetui.cli import main

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    path = str(kineto_path(CUPTI))
    assert main(["summary", "--json", "--no-cache", path]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {k: doc["counters"][k] for k in ("events", "ranges", "samples")} == {"events": 77, "ranges": 77,
                                                                                "samples": 693}
    ffma = next(r for r in doc["counters"]["series"] if r["series"] == FFMA)
    assert ffma["sum"] == 39_142_369_720
    out = tmp_path / "cupti.json"
    assert main(["export", "--no-cache", "-f", "json", "-o", str(out), path]) == 0
    exp = json.loads(out.read_text())["counters"]
    assert len(exp["samples"]) == 693 and len({s["event"] for s in exp["samples"]}) == 77
    out2 = tmp_path / "one.json"
    assert main(["export", "--no-cache", "-f", "json", "--select", "name:__missing__", "-o", str(out2), path]) == 0
    one = json.loads(out2.read_text())["counters"]
    assert {s["series"]: s["value"] for s in one["samples"]}[FFMA] == 9_119_334_400


def test_summary_of_a_trace_without_counters_has_no_counters_key():
    from tracetui.analysis.summary import build_summary
    from tracetui.session import LinkedTrace

    doc = build_summary(LinkedTrace(kineto=load_shared_kineto("a100_triton.json.gz")))
    assert "counters" not in doc


def test_counter_events_c_phase(tmp_path):
    from tracetui.kineto.counters import counters_of

    def edit(ev):
        t0 = next(e["ts"] for e in ev if e.get("ph") == "X")
        for k, v in enumerate((10, 30, 20)):
            ev.append({"ph": "C", "name": "Memory", "pid": 1, "tid": 0, "ts": t0 + 100 * k,
                       "args": {"allocated": v, "Memory": v * 2, "note": "text"}})

    t = _modified_copy(tmp_path, "a100_triton.json.gz", edit)
    c = counters_of(t)
    assert c.series_names == ["Memory: allocated", "Memory"] and c.n_samples == 6 and c.ranges.size == 0
    ts, dur, val = c.series_samples(0)
    assert val.tolist() == [10.0, 30.0, 20.0] and (dur == 0).all()


# ------------------------------------------------------------------ what is not understood
def test_unknown_category_and_phase_are_named_with_counts(tmp_path, monkeypatch, capsys):
    from tracetui.cli import main

    def edit(ev):
        base = next(e for e in ev if e.get("ph") == "X")
        for k in range(3):
            ev.append(dict(base, cat="npu_mystery", name=f"m{k}"))
        ev.append(dict(base, ph="b", id=1, name="async thing"))
        ev.append(dict(base, ph="b", id=2, name="async thing"))

    _modified_copy(tmp_path, "a100_triton.json.gz", edit)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["info", "--json", "--no-cache", str(tmp_path / "modified_a100_triton.json")]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w.startswith("3 events of category 'npu_mystery' are not understood") for w in warnings), warnings
    assert any(w.startswith("2 events of phase (ph) 'b' are not understood") for w in warnings), warnings
    ref = load_shared_kineto("a100_triton.json.gz")
    assert not [w for w in ref.warnings if w.kind in ("unknown_category", "unknown_phase")]


def test_xpu_and_privateuse1_launches_link_like_cuda(tmp_path):
    """h100_bert_inference with its cuda_runtime calls renamed as an XPU / PrivateUse1 backend
    writes them: the same GPU events link to the same launches."""
    ref = load_shared_kineto("h100_bert_inference.json.gz")
    for cat in ("xpu_runtime", "privateuse1_runtime"):
        def edit(ev, cat=cat):
            for e in ev:
                if e.get("cat") == "cuda_runtime":
                    e["cat"] = cat

        t = _modified_copy(tmp_path, "h100_bert_inference.json.gz", edit)
        assert t.gpu_stats.linked == ref.gpu_stats.linked == 61
        assert (t.launch_of == ref.launch_of).all()
        assert not [w for w in t.warnings if w.kind == "unknown_category"]
