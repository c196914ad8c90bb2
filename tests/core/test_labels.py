"""Labels say what they count (issue 23, item 3): GPU events (kernels + memcpys + memsets) are
not kernels, an MTIA trace's device work is "device events", and exports carry the theoretical
occupancy with its limiter beside Kineto's estimate, each under its own name.  Counts are read
from the raw files (gzip + json)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter

import pytest
from shared_traces import kineto_path, load_shared_kineto

from tracetui.cli.info import trace_info
from tracetui.export import export_bytes, resolve_selector
from tracetui.export.tree_text import format_subtree
from tracetui.session import LinkedTrace


def _raw_categories(name: str) -> Counter:
    with gzip.open(kineto_path(name)) as fh:
        return Counter(e.get("cat") for e in json.load(fh)["traceEvents"] if e.get("ph") == "X")


def test_gpu_events_are_not_kernels_h100():
    cats = _raw_categories("h100_bert_inference.json.gz")
    assert (cats["kernel"], cats["gpu_memcpy"], cats["gpu_memset"]) == (60, 1, 0)
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    want = {"called": "GPU events", "events": 61, "kernels": 60, "memcpy": 1, "memset": 0}
    assert kt.device_work_counts() == want
    assert trace_info(LinkedTrace(kt))["kineto"]["device_work"] == want
    first = format_subtree(kt, kt.roots()[0], depth=0)
    assert first.endswith("gpu=309.437us gpu_events=61")  # the tree text counts GPU events, not kernels


def test_mtia_device_events_are_not_called_kernels():
    cats = _raw_categories("mtia_inference_rank0.json.gz")
    with gzip.open(kineto_path("mtia_inference_rank0.json.gz")) as fh:
        dma = sum(1 for e in json.load(fh)["traceEvents"]
                  if e.get("cat") == "mtia_ccp_events" and e.get("name") == "dma_request")
    assert (cats["mtia_ccp_events"], dma) == (1313, 877)
    kt = load_shared_kineto("mtia_inference_rank0.json.gz")
    assert kt.device_word() == "device"
    assert kt.device_work_counts() == {"called": "device events", "events": 1313, "kernels": None, "memcpy": 877,
                                       "memset": 0}
    md = export_bytes(LinkedTrace(kt), None, "md").decode()
    assert "- device events: 1,313 (877 memcpy, 0 memset), summed device time" in md
    assert "## device events by name" in md and "GPU events" not in md
    warn = next(w for w in kt.warnings if w.kind == "gpu_unlinked")
    assert warn.message.startswith("322 of 1313 device events have no launch event")


def test_exports_carry_theoretical_occupancy_and_kinetos_estimate_under_its_own_name():
    """The sm90 GEMM of h100_bert_inference: raw args say est. achieved occupancy 0 %; its
    theoretical occupancy is 18.75 %, limited by registers and shared memory together
    (tests/core/test_occupancy.py works it out)."""
    with gzip.open(kineto_path("h100_bert_inference.json.gz")) as fh:
        raw = [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"
               and e["name"].startswith("sm90_xmma_gemm_bf16bf16") and e["args"].get("registers per thread") == 168]
    assert raw and all(e["args"]["est. achieved occupancy %"] == 0 for e in raw)
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    lt = LinkedTrace(kt)
    rows = [r for r in csv.DictReader(io.StringIO(export_bytes(lt, None, "csv").decode()))
            if r["name"].startswith("sm90_xmma_gemm_bf16bf16") and r["registers"] and float(r["registers"]) == 168]
    assert len(rows) == len(raw)
    for r in rows:
        assert "occupancy" not in r
        assert (r["theoretical_occupancy_pct"], r["occupancy_limiter"], r["kineto_est_occupancy_pct"]) == (
            "18.75", "registers + shared memory per SM", "0.0")
    js = json.loads(export_bytes(lt, None, "json"))
    k = next(x for x in js["kernels"] if x["name"].startswith("sm90_xmma_gemm_bf16bf16") and x["registers"] == 168)
    assert (k["theoretical_occupancy_pct"], k["occupancy_limiter"], k["kineto_est_occupancy_pct"]) == (
        18.75, "registers + shared memory per SM", 0.0)
    assert "occupancy" not in k
    root = resolve_selector(lt, f"node:{int(k['event'])}")
    md = export_bytes(lt, int(kt.launch_of[root]), "md").decode()
    assert "| theoretical occupancy (%) | limited by | Kineto est. occupancy (%) |" in md
    assert "| 18.75 | registers + shared memory per SM | 0.00 |" in md


@pytest.mark.parametrize("name, word", [("h100_bert_inference.json.gz", "GPU"), ("mtia_inference_rank0.json.gz",
                                                                                   "device")])
def test_summary_header_names_its_device_events(name, word):
    from tracetui.analysis.summary import build_summary

    s = build_summary(LinkedTrace(load_shared_kineto(name)))
    assert s["trace"]["device_work"]["called"] == f"{word} events"
