"""Mismatched pairs (issue 7, item 3): an ET and a Kineto trace from different runs are
detected and reported with the link statistics; a heuristic link is never shown as exact.

Facts verified on the files: torch_cpu_pair and torch_cpu_pair_threads are two different runs
(same model, same rf_id range 1..~3,700, but the rf_ids name different ops), and the project's
own sample pair is a third run of a different model.  Pairing across runs matches most rf_ids
(they are small counters) while the names disagree.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared_traces import ET_DIR, KINETO, SAMPLES

from tracetui.session import load_pair


def _pair(et: str, kin: str):
    return load_pair(et, kin)


def _no_link_is_presented_as_exact_unless_by_rf_id(lt) -> None:
    link, s = lt.link, lt.link.stats
    linked = link.et_to_kineto >= 0
    assert s.linked == int(linked.sum())
    if s.method in ("sequence", "order"):
        assert link.heuristic[linked].all() and s.heuristic == s.linked
        assert any(w.kind == "heuristic_link" and "heuristic, may be wrong" in w.message for w in link.warnings)
    else:
        assert not link.heuristic.any() and s.heuristic == 0
    # both directions agree, and point at ops
    k = link.et_to_kineto[linked]
    assert (link.kineto_to_et[k] == np.flatnonzero(linked)).all()


MISMATCHED = {
    # (ET, Kineto): (ET ops, Kineto ops, linked by rf_id, linked names that differ)
    "et torch_cpu_pair + kineto torch_cpu_pair_threads": (
        ET_DIR / "torch_cpu_pair" / "et.json.gz", ET_DIR / "torch_cpu_pair_threads" / "kineto.json.gz",
        (3200, 3200, 2753, 2654)),
    "et torch_cpu_pair_threads + kineto torch_cpu_pair": (
        ET_DIR / "torch_cpu_pair_threads" / "et.json.gz", ET_DIR / "torch_cpu_pair" / "kineto.json.gz",
        (3695, 3200, 3200, 3087)),
    "sample et + shared kineto": (
        SAMPLES / "cpu_transformer_et.json.gz", ET_DIR / "torch_cpu_pair" / "kineto.json.gz",
        (2592, 3200, 2592, 2425)),
    "shared et + sample kineto": (
        ET_DIR / "torch_cpu_pair" / "et.json.gz", SAMPLES / "cpu_transformer_kineto.json.gz",
        (3200, 2592, 2592, 2425)),
    "shared et + mi250 kineto": (
        ET_DIR / "torch_cpu_pair" / "et.json.gz", KINETO / "mi250_minitoy_train.json.gz", (3200, 73, 73, 72)),
}


@pytest.mark.parametrize("case", sorted(MISMATCHED))
def test_rf_id_pairs_from_different_runs_are_flagged(case):
    et, kin, (et_ops, k_ops, linked, mism) = MISMATCHED[case]
    lt = _pair(et, kin)
    s = lt.link.stats
    assert (s.method, s.et_ops, s.kineto_ops, s.name_mismatches) == ("rf_id", et_ops, k_ops, mism)
    # the links whose names differ would point at unrelated ops: dropped and counted
    assert s.suspect_mismatch and s.dropped == mism and s.linked == linked - mism
    (w,) = [w for w in lt.all_warnings() if w.kind == "mismatched_pair"]
    assert w.message == (f"the ET and Kineto traces look like different runs: {linked:,} of {et_ops:,} ET rf_ids "
                         f"found in Kineto, {mism:,} linked names differ (those {mism:,} are not shown as links)")
    _no_link_is_presented_as_exact_unless_by_rf_id(lt)
    k = lt.link.et_to_kineto
    kept = np.flatnonzero(k >= 0)
    assert all(lt.et.name(int(p)) == lt.kineto.name(int(k[p])) for p in kept)


@pytest.mark.parametrize("folder", ["torch_cpu_pair", "torch_cpu_pair_threads"])
def test_same_run_pairs_are_not_flagged(folder):
    lt = _pair(ET_DIR / folder / "et.json.gz", ET_DIR / folder / "kineto.json.gz")
    s = lt.link.stats
    assert not s.suspect_mismatch and s.name_mismatches == 0 and s.linked == 3200
    assert not [w for w in lt.all_warnings() if w.kind == "mismatched_pair"]


def test_sample_pair_is_one_run():
    lt = _pair(SAMPLES / "cpu_transformer_et.json.gz", SAMPLES / "cpu_transformer_kineto.json.gz")
    s = lt.link.stats
    assert (s.method, s.linked, s.name_mismatches, s.suspect_mismatch) == ("rf_id", 2592, 0, False)


def test_heuristic_links_are_flagged_on_a_same_run_pair():
    lt = _pair(ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz",
               ET_DIR / "hta_simple_add_cuda_pair" / "kineto.json.gz")
    s = lt.link.stats
    assert (s.method, s.linked, s.heuristic) == ("sequence", 36, 36)
    _no_link_is_presented_as_exact_unless_by_rf_id(lt)


ORDER_MISMATCHED = {
    "hta et + param_linear kineto": (ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz",
                                     ET_DIR / "param_linear_cuda_pair" / "kineto.json.gz", (36, 14)),
    "param_linear et + hta kineto": (ET_DIR / "param_linear_cuda_pair" / "et.json.gz",
                                     ET_DIR / "hta_simple_add_cuda_pair" / "kineto.json.gz", (928, 3)),
}


@pytest.mark.parametrize("case", sorted(ORDER_MISMATCHED))
def test_heuristic_pairs_from_different_runs_stay_heuristic(case):
    et, kin, (et_ops, linked) = ORDER_MISMATCHED[case]
    lt = _pair(et, kin)
    s = lt.link.stats
    assert (s.method, s.et_ops, s.linked, s.heuristic) == ("order", et_ops, linked, linked)
    _no_link_is_presented_as_exact_unless_by_rf_id(lt)


@pytest.mark.parametrize("case", sorted(ORDER_MISMATCHED))
def test_heuristic_pairs_from_different_runs_are_flagged(case):
    et, kin, (et_ops, linked) = ORDER_MISMATCHED[case]
    lt = _pair(et, kin)
    assert lt.link.stats.suspect_mismatch
    (w,) = [w for w in lt.all_warnings() if w.kind == "mismatched_pair"]
    assert w.message == (f"the ET and Kineto traces look like different runs: name-and-order alignment linked only "
                         f"{linked:,} of {et_ops:,} ET ops")


def test_kineto_without_ops_links_nothing_and_says_so():
    lt = _pair(ET_DIR / "torch_cpu_pair" / "et.json.gz", KINETO / "mi210_gpu_only.json.gz")
    s = lt.link.stats
    assert (s.method, s.linked, s.et_only) == ("none", 0, 3200)
    assert [w.message for w in lt.link.warnings] == ["no ET op could be linked: the Kineto trace has no cpu_op events"]


def test_cli_info_shows_the_mismatch_and_the_statistics(tmp_path, monkeypatch, capsys):
    import json

    from tracetui.cli import main

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    et, kin, _ = MISMATCHED["sample et + shared kineto"]
    assert main(["info", "--json", "--no-cache", str(kin), "--et", str(et)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["et_link"]["suspect_mismatch"] is True and info["et_link"]["name_mismatches"] == 2425
    assert any(w.startswith("the ET and Kineto traces look like different runs") for w in info["warnings"])
