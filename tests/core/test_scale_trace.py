"""bench/scale_trace.py: an N-times tiling loads with N times the events and links, none across copies."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys

import numpy as np
import pytest
from shared_traces import REPO, kineto_path

from tracetui.kineto import load_kineto


def _scaler():
    spec = importlib.util.spec_from_file_location("scale_trace", REPO / "bench" / "scale_trace.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scale_trace"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tiled(tmp_path_factory):
    src = kineto_path("mi250_minitoy_train.json.gz")
    out = tmp_path_factory.mktemp("scale") / "mini_x3.json.gz"
    res = _scaler().scale_trace(src, out, 3, gap_us=500.0)
    return src, out, res


def test_tiling_counts(tiled):
    src, out, res = tiled
    base, big = load_kineto(src), load_kineto(out)
    n = base.n_events
    # mi250_minitoy_train: 220 events: 60 metadata ('M'), 113 X, 20 s + 25 f flows, 2 instants
    assert res.events_per_copy == 160 and res.metadata_events == 60
    assert big.n_events == 3 * n
    assert len(big.flows.cat) == 3 * len(base.flows.cat)
    assert big.gpu_stats.gpu_events == 3 * base.gpu_stats.gpu_events
    assert big.gpu_stats.linked == 3 * base.gpu_stats.linked > 0
    assert big.gpu_stats.confirmed_by_flow == 3 * base.gpu_stats.confirmed_by_flow
    assert int((big.fwd_of >= 0).sum()) == 3 * int((base.fwd_of >= 0).sum()) > 0
    assert len(big.lanes) == len(base.lanes)
    # copy i is copy 0 shifted in time by i * stride, names and kinds unchanged
    for i in range(3):
        sl = slice(i * n, (i + 1) * n)
        assert [big.names[k] for k in big.name_id[sl]] == [base.names[k] for k in base.name_id]
        assert np.array_equal(big.kind[sl], base.kind)
        assert np.allclose(big.ts[sl] - big.ts[:n], i * res.stride_us, atol=1e-6)
        assert np.array_equal(big.dur[sl], base.dur)


def test_no_cross_copy_links(tiled):
    src, out, res = tiled
    base, big = load_kineto(src), load_kineto(out)
    n = base.n_events
    copy = np.arange(big.n_events) // n
    lo = big.launch_of
    linked = np.flatnonzero(lo >= 0)
    assert np.array_equal(copy[lo[linked]], copy[linked])
    assert np.array_equal(big.launch_of[:n], base.launch_of)
    fw = np.flatnonzero(big.fwd_of >= 0)
    assert np.array_equal(copy[big.fwd_of[fw]], copy[fw])
    par = big.parent[: big.n_events]
    inner = np.flatnonzero((par >= 0) & (par < big.n_events))
    assert np.array_equal(copy[par[inner]], copy[inner])
    # ids offset per copy: correlation / External id / Record function id
    for col in ("correlation", "external_id", "rf_id"):
        a, b = getattr(base, col), getattr(big, col)[n:2 * n]
        has = a > 0
        assert has.any()
        assert np.array_equal(b[has], a[has] + res.id_stride)
        assert np.array_equal(b[~has], a[~has])  # -1 / 0 (none) kept


def test_flow_ids_and_metadata(tiled):
    src, out, res = tiled
    doc = json.loads(gzip.decompress(out.read_bytes()))
    orig = json.loads(gzip.decompress(src.read_bytes()))
    assert {k: v for k, v in doc.items() if k != "traceEvents"} == \
        {k: v for k, v in orig.items() if k != "traceEvents"}
    evs = doc["traceEvents"]
    assert sum(e["ph"] == "M" for e in evs) == 60
    ids = [e["id"] for e in evs if e["ph"] in ("s", "f")]
    base_ids = [e["id"] for e in orig["traceEvents"] if e["ph"] in ("s", "f")]
    assert len(ids) == 3 * len(base_ids) == 3 * 45
    assert sorted(ids) == sorted(b + i * res.id_stride for i in range(3) for b in base_ids)


@pytest.mark.slow
def test_plain_output_keeps_digits(tmp_path):
    src = kineto_path("v100_ns_timestamps_fwdbwd.json.gz")
    out = tmp_path / "ns_x2.json"
    res = _scaler().scale_trace(src, out, 2)
    text = out.read_bytes()
    assert text[:1] == b"{"
    # fractional-ns timestamps survive the shift digit for digit
    first = json.loads(gzip.decompress(src.read_bytes()))["traceEvents"]
    ev = next(e for e in first if e["ph"] == "X" and isinstance(e["ts"], float))
    raw = gzip.decompress(src.read_bytes())
    i = raw.find(b'"ts": ', raw.find(json.dumps(ev["name"]).encode()))
    tok = raw[i + 6:raw.find(b",", i)]
    ip, _, fp = tok.partition(b".")
    assert fp and (b'"ts": %d.%s' % (int(ip) + res.stride_us, fp)) in text
