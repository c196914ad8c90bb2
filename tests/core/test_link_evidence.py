"""ET <-> Kineto without Record function ids: sequence-number anchors, the iteration the ET
covers, order only between anchors, what found each link, and the link kept in the cache.

The expected links are read from the raw files here (gzip + json, not tracetui's loaders):
an ET op whose (name, ``seq_id``) matches exactly one Kineto cpu_op/user_annotation (same
name, ``Sequence number``) must link to that op.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import numpy as np
import pytest
from shared_traces import ET_DIR, load_shared_pair

from tracetui.link import align
from tracetui.link import et_kineto as et_kineto_mod

#: per pair: ET ops with a unique same-name Kineto op of their sequence number (counted from
#: the raw files by ``_raw_unique_matches``), and the links each method finds
PAIRS = {
    "param_linear_cuda_pair": dict(unique=159, by_sequence=159, by_order=769, linked=928, et_ops=928),
    "param_dlrm_rank0_cuda_pair": dict(unique=0, by_sequence=0, by_order=1670, linked=1670, et_ops=1672),
    "hta_simple_add_cuda_pair": dict(unique=6, by_sequence=6, by_order=30, linked=36, et_ops=36),
}


def _raw(folder: str):
    with gzip.open(ET_DIR / folder / "et.json.gz") as fh:
        et = json.load(fh)
    with gzip.open(ET_DIR / folder / "kineto.json.gz") as fh:
        kineto = json.load(fh)
    return et, kineto


def _attr(node: dict, key: str):
    if key in node:
        return node[key]
    for a in node.get("attrs", []):
        if a.get("name") == key:
            return a.get("value")
    return None


def _raw_unique_matches(folder: str) -> dict[int, dict]:
    """ET node id -> the one raw Kineto op (same name, Sequence number == seq_id)."""
    et, kineto = _raw(folder)
    by_key: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for ev in kineto["traceEvents"]:
        if ev.get("cat") in ("cpu_op", "user_annotation"):
            sn = ev.get("args", {}).get("Sequence number")
            if sn is not None:
                by_key[(ev["name"], sn)].append(ev)
    out = {}
    for node in et["nodes"]:
        seq = _attr(node, "seq_id")
        if seq is None or seq < 0 or node["name"].startswith("[pytorch|profiler|execution_"):
            continue
        hits = by_key.get((node["name"], seq), [])
        if len(hits) == 1:
            out[node["id"]] = hits[0]
    return out


@pytest.mark.parametrize("folder", sorted(PAIRS))
def test_every_unique_sequence_number_match_is_the_link(folder):
    want = PAIRS[folder]
    expected = _raw_unique_matches(folder)
    assert len(expected) == want["unique"]
    lt = load_shared_pair(folder)
    et, kt, link = lt.et, lt.kineto, lt.link
    for node_id, ev in expected.items():
        pos = et.pos_of_id(node_id)
        k = int(link.et_to_kineto[pos])
        assert k >= 0, f"ET node {node_id} not linked"
        # the raw event's name, thread and start time (abs µs), not tracetui's own keys
        assert kt.name(k) == ev["name"] and kt.tids[k] == ev["tid"]
        assert abs(kt.abs_ts_us(k) - float(ev["ts"])) < 0.01
        assert link.found_by_name(pos) == "sequence number" and link.heuristic[pos]
    s = link.stats
    assert (s.by_sequence, s.by_order, s.linked, s.et_ops) == (want["by_sequence"], want["by_order"], want["linked"],
                                                                want["et_ops"])
    assert s.by_rf_id == 0 and s.heuristic == s.linked == s.by_sequence + s.by_order
    assert s.method == ("sequence" if want["by_sequence"] else "order")
    linked = np.flatnonzero(link.et_to_kineto >= 0)
    assert all(et.name(p) == kt.name(int(link.et_to_kineto[p])) for p in linked.tolist())
    assert set(np.unique(link.found_by[linked]).tolist()) <= {2, 3}
    w = next(w for w in link.warnings if w.kind == "heuristic_link")
    assert (f"{s.by_sequence:,} ET ops were linked by sequence number, {s.by_order:,} by name-and-order alignment"
            in w.message)


def test_param_linear_links_the_iteration_the_et_recorded():
    """The ET's seq_ids (raw: 660-725) are iteration 11 of the Kineto trace's 40
    (Optimizer.zero_grad annotations: 40); every linked Kineto op that carries a Sequence
    number carries one of the ET's, and the link says which iteration it found."""
    et_raw, kineto_raw = _raw("param_linear_cuda_pair")
    seqs = [_attr(n, "seq_id") for n in et_raw["nodes"]]
    lo, hi = min(s for s in seqs if s >= 0), max(seqs)
    assert (lo, hi) == (660, 725)
    steps = sum(1 for e in kineto_raw["traceEvents"] if e.get("name") == "Optimizer.zero_grad#SGD.zero_grad")
    assert steps == 40
    lt = load_shared_pair("param_linear_cuda_pair")
    kt, link = lt.kineto, lt.link
    events = link.et_to_kineto[link.et_to_kineto >= 0]
    kseq = kt.seq[events]
    assert ((kseq[kseq >= 0] >= lo) & (kseq[kseq >= 0] <= hi)).all()
    assert (kseq >= 0).sum() == 267
    assert link.stats.window.startswith("iteration 11 of 40 ")
    assert link.stats.contradicted == 0


def test_dlrm_pair_says_the_et_recorded_another_iteration():
    """Raw: ET seq_ids 440-479, Kineto Sequence numbers 480-519 (one ProfilerStep#10):
    no anchor exists, the order link stays inside ProfilerStep#10 and the warning says the
    two files recorded different iterations."""
    et_raw, kineto_raw = _raw("param_dlrm_rank0_cuda_pair")
    e = [s for s in (_attr(n, "seq_id") for n in et_raw["nodes"]) if s >= 0]
    k = [ev["args"]["Sequence number"] for ev in kineto_raw["traceEvents"]
         if "Sequence number" in ev.get("args", {})]
    assert (min(e), max(e), min(k), max(k)) == (440, 479, 480, 519)
    link = load_shared_pair("param_dlrm_rank0_cuda_pair").link
    assert link.stats.window == "ProfilerStep#10 (1 of 1 steps)"
    w = next(w for w in link.warnings if w.kind == "heuristic_link")
    assert "sequence numbers (440-479) are not in the Kineto trace (480-519)" in w.message


def test_cached_reopen_of_a_pair_does_no_linking(tmp_path, monkeypatch):
    from tracetui.store import traces

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "test-link-cache")
    calls = []
    real = et_kineto_mod.link_et_kineto

    def counting(et, kt):
        calls.append(1)
        return real(et, kt)

    import tracetui.session as session_mod
    import tracetui.store.links as links_mod

    monkeypatch.setattr(links_mod, "link_et_kineto", counting)
    monkeypatch.setattr(session_mod, "link_et_kineto", counting)
    monkeypatch.setattr(traces, "link_et_kineto", counting)
    pair = ET_DIR / "param_linear_cuda_pair"
    paths = [str(pair / "et.json.gz"), str(pair / "kineto.json.gz")]
    first = traces.load_cached(paths)
    assert len(calls) == 1 and list(tmp_path.glob("link-*.ttl"))
    again = traces.load_cached(paths)
    assert len(calls) == 1  # served from the cache: no linking
    for name in ("et_to_kineto", "kineto_to_et", "found_by"):
        assert np.array_equal(getattr(first.link, name), getattr(again.link, name))
    assert again.link.stats == first.link.stats
    assert [w.message for w in again.link.warnings] == [w.message for w in first.link.warnings]
    # a stale entry (another code fingerprint) is not used; no cache means linking each time
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "other-code")
    traces.load_cached(paths)
    assert len(calls) == 2
    traces.load_cached(paths, use_cache=False)
    assert len(calls) == 3


def test_a_corrupt_link_entry_is_ignored(tmp_path, monkeypatch):
    from tracetui.store import traces

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "test-link-cache")
    pair = ET_DIR / "hta_simple_add_cuda_pair"
    paths = [str(pair / "et.json.gz"), str(pair / "kineto.json.gz")]
    first = traces.load_cached(paths)
    entry = next(tmp_path.glob("link-*.ttl"))
    entry.write_bytes(entry.read_bytes()[:100])
    again = traces.load_cached(paths)
    assert np.array_equal(first.link.et_to_kineto, again.link.et_to_kineto)


def _lcs_length(a: list[int], b: list[int]) -> int:
    """Textbook dynamic programme (the table, row by row)."""
    below = [0] * (len(b) + 1)
    for x in reversed(a):
        row = [0] * (len(b) + 1)
        for j in range(len(b) - 1, -1, -1):
            row[j] = below[j + 1] + 1 if x == b[j] else max(below[j], row[j + 1])
        below = row
    return below[0]


@pytest.mark.parametrize("seed", range(6))
def test_align_names_pairs_equal_names_in_order(seed):
    rng = np.random.default_rng(seed)
    body = rng.integers(0, 12, size=60)
    a = np.concatenate([body, rng.integers(0, 12, size=5), body])
    b = np.concatenate([rng.integers(0, 12, size=7), body, body[::2]])
    ia, ib = align.align_names(a, b)
    assert (np.diff(ia) > 0).all() and (np.diff(ib) > 0).all()
    assert (a[ia] == b[ib]).all()
    # no unique name splits these ranges: the exact step finds a longest common subsequence
    assert ia.size == _lcs_length(a.tolist(), b.tolist())


def test_align_names_keeps_fixed_pairs_and_aligns_between_them():
    a = np.array([1, 2, 3, 9, 1, 2, 3])
    b = np.array([1, 2, 3, 1, 2, 3, 9, 1, 2, 3])
    ia, ib = align.align_names(a, b, fixed=(np.array([3]), np.array([6])))
    pairs = dict(zip(ia.tolist(), ib.tolist()))
    assert pairs[3] == 6 and pairs[4] == 7 and pairs[0] in (0, 3)


def test_link_is_linear_enough_on_a_long_repeated_iteration():
    """200 repeats of a 500-op iteration against one: the aligner stays near-linear (it
    pairs every op; the old difflib path took quadratic time here)."""
    it = np.tile(np.arange(50), 10)
    k = np.tile(it, 200)
    ia, ib = align.align_names(it, k)
    assert ia.size == it.size and (it[ia] == k[ib]).all()


def test_rf_id_links_say_so():
    lt = load_shared_pair("torch_cpu_pair")
    link = lt.link
    linked = np.flatnonzero(link.et_to_kineto >= 0)
    assert (link.found_by[linked] == 1).all() and not link.heuristic.any()
    assert link.stats.by_rf_id == 3200 and link.found_by_name(int(linked[0])) == "rf_id"
