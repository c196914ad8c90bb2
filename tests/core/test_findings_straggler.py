"""The ``straggler`` rule (issue 29, scope job; tracetui/findings/jobs.py on
tracetui/job/stragglers.arrivals): the rank that arrives last most often, what the others
waited for it, its evidence (the collective kernels on that rank) and what it did before.

Expected numbers of the shared 8-rank DLRM job are read from the raw rank files here (gzip +
json): each rank's NCCL kernels in start order are its collectives (one kernel each); a rank
arrives when its kernel starts; the host and GPU events before each are found by time on the
raw events, not through tracetui's tree.  A job written by the test has one rank last at every
barrier, by construction."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from statistics import median

import pytest
from findings_traces import NCCL_ALLREDUCE, SLOW, STEPS, write_barrier_job
from shared_traces import SAMPLES, SHARED

from tracetui.cli.check import render_text
from tracetui.findings import default_specs, rule_configs
from tracetui.findings.jobs import JOB_CHECKS, check_job, check_rank
from tracetui.findings.spec import overrides_as_data, parse_overrides
from tracetui.store.traces import load_cached

JOB = SHARED / "multirank" / "param_dlrm_8ranks"
HOST_CATS = ("cpu_op", "user_annotation")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _raw(rank: int) -> list[dict]:
    with gzip.open(JOB / f"rank{rank}_kineto.json.gz") as fh:
        return [e for e in json.load(fh)["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]


def _nccl(events: list[dict]) -> list[dict]:
    return sorted((e for e in events if e.get("cat") == "kernel" and e["name"].startswith("nccl")),
                  key=lambda e: e["ts"])


@pytest.fixture(scope="module")
def dlrm():
    raw = {r: _raw(r) for r in range(8)}
    report = check_job([str(JOB)], workers=1)
    found = [f for f in report.findings if f.rule == "straggler"]
    return raw, report, found


KIND = {"SendRecv": "all_to_all", "AllReduce": "all_reduce"}


@pytest.mark.slow
def test_the_dlrm_straggler_matches_the_raw_kernel_starts(dlrm):
    raw, report, found = dlrm
    kernels = {r: _nccl(ev) for r, ev in raw.items()}
    n = len(kernels[0])
    last, late = defaultdict(list), defaultdict(list)  # (rank, kind) -> [(collective, late by)], [lateness]
    for i in range(n):
        starts = {r: kernels[r][i]["ts"] for r in range(8)}
        kind = KIND[kernels[0][i]["name"].split("_")[1]]
        order = sorted(starts, key=lambda r: (-starts[r], r))
        if starts[order[0]] > min(starts.values()):
            last[(order[0], kind)].append((i, starts[order[0]] - starts[order[1]]))
        for r in range(8):
            late[(r, kind)].append(starts[r] - min(starts.values()))
    # per kind, the rank last most often: all_to_all rank 7 (4 of 5); all_reduce ranks 4, 5, 7 once each
    a2a = max(range(8), key=lambda r: (len(last[(r, "all_to_all")]), median(late[(r, "all_to_all")])))
    assert (a2a, len(last[(a2a, "all_to_all")])) == (7, 4)
    assert sorted(r for r in range(8) if last[(r, "all_reduce")]) == [4, 5, 7]
    assert all(len(last[(r, "all_reduce")]) <= 1 for r in range(8))  # under min_times_last: no finding

    assert [(f.check, f.rank) for f in found] == [("all_to_all", 7)]
    f = found[0]
    assert f.count == 4 and f.severity.word == "warning" and f.title.endswith(": all_to_all")
    assert f.value == pytest.approx(median(late[(7, "all_to_all")]))  # median lateness, µs: 186
    want_wait = [b for _, b in last[(7, "all_to_all")]]
    assert f.time_at_stake_us == pytest.approx(sum(want_wait)) and f.time_at_stake_us == pytest.approx(1300.0)
    assert f.evidence_us.tolist() == pytest.approx(want_wait)  # 505, 509, 162, 124
    # chance: 5 all-to-alls of 8 ranks -> 0.625; 4 / 0.625 = 6.4
    assert f.verdict.startswith("rank 7 arrived last at 4 of 5 all_to_all collectives, 6.4x as often as chance "
                                "(all kinds: 5 of 8); median lateness 186 µs")
    assert "over 1 step" in f.stake_label

    # the evidence: rank 7's NCCL kernels of those collectives, as node ids of its model
    kt = _kt7()
    want = [kernels[7][i] for i, _ in last[(7, "all_to_all")]]
    assert [kt.name(e) for e in f.evidence.tolist()] == [k["name"] for k in want]
    assert [kt.origin_us + kt.ts[e] for e in f.evidence.tolist()] == [k["ts"] for k in want]
    assert [d["event"] for d in f.details] == f.evidence.tolist()


@pytest.mark.slow
def test_what_the_dlrm_straggler_did_before_its_late_collectives(dlrm):
    raw, _, found = dlrm
    ev = raw[7]
    kernels = _nccl(ev)
    by_corr = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}
    ends = [k["ts"] + k["dur"] for k in kernels]
    details = found[0].details
    kt = _kt7()
    for d in details:
        i = [k["ts"] for k in kernels].index(kt.origin_us + kt.ts[d["event"]])
        k = kernels[i]
        launch = by_corr[k["args"]["correlation"]]
        assert d["launch_delay_us"] == pytest.approx(k["ts"] - launch["ts"])
        # the collective op: the innermost c10d:: op around the launch on its thread
        ops = [e for e in ev if e["name"].startswith("c10d::") and e["tid"] == launch["tid"]
               and e["ts"] <= launch["ts"] and e["ts"] + e["dur"] >= launch["ts"] + launch["dur"]]
        op = min(ops, key=lambda e: e["dur"])
        host = [e for e in ev if e.get("cat") in HOST_CATS and e["tid"] == op["tid"] and e["pid"] == op["pid"]]
        # just before: the op that ended last before the collective op started (the longest of ties)
        done = [e for e in host if e["ts"] + e["dur"] <= op["ts"]]
        end = max(e["ts"] + e["dur"] for e in done)
        assert d["host_before_name"] == max((e for e in done if e["ts"] + e["dur"] == end),
                                            key=lambda e: e["dur"])["name"]
        assert d["host_gap_us"] == pytest.approx(op["ts"] - end)
        # the longest op run whole since the previous collective ended (from the start: the first)
        since = max(ends[:i], default=float("-inf"))
        inside = [e for e in host if e["ts"] >= since and e["ts"] + e["dur"] <= op["ts"]]
        longest = max(e["dur"] for e in inside)
        assert d["host_longest_dur_us"] == pytest.approx(longest)
        assert d["host_longest_name"] in {e["name"] for e in inside if e["dur"] == longest}
        # the GPU: rank 7's device work (not NCCL) started before the kernel, the one ending last
        gpu = [e for e in ev if e.get("cat") in GPU_CATS and e["args"].get("device") == 7
               and not e["name"].startswith("nccl") and e["ts"] < k["ts"]]
        prev = max(gpu, key=lambda e: e["ts"] + e["dur"])
        assert d["gpu_before_name"] == prev["name"]
        assert d["gpu_gap_us"] == pytest.approx(k["ts"] - prev["ts"] - prev["dur"])
    worst = max(details, key=lambda d: d["late_by_us"])
    assert (worst["collective"], worst["late_by_us"]) == ("all_to_all", 509.0)
    assert worst["host_longest_name"] == "DistributedDataParallel.forward"
    assert "Worst: all_to_all #1, 509 µs after the next-latest rank" in found[0].verdict


def _kt7():
    return load_cached([str(JOB / "rank7_kineto.json.gz"), str(JOB / "rank7_et.json.gz")]).kineto


@pytest.mark.slow
def test_the_job_text_names_the_straggler_within_80_columns(dlrm):
    _, report, _ = dlrm
    text = render_text(report, width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "WARNING  straggler (all_to_all) rank 7" in text and "straggler" not in text.split("no findings from:")[-1]


# ---- a job written by the test ---------------------------------------------------------------

def test_a_rank_last_at_every_barrier_is_the_straggler(tmp_path):
    job = write_barrier_job(tmp_path / "job")
    report = check_job([str(job)], workers=1)
    found = [f for f in report.findings if f.rule == "straggler"]
    # barriers apart: rank 2 at every barrier; rank 0 at both all-reduces (300 µs late, the next at +3 µs)
    assert [(f.check, f.rank, f.count) for f in found] == [("barrier", SLOW, STEPS), ("all_reduce", 0, 2)]
    f = found[0]
    # rank 2 starts each barrier kernel at base+2320, the next-latest (rank 3) at base+323
    assert f.time_at_stake_us == pytest.approx(STEPS * 1997.0)
    assert f.evidence_us.tolist() == pytest.approx([1997.0] * STEPS)
    assert f.value == pytest.approx(2000.0)  # its median lateness at the barriers
    assert f.verdict.startswith(f"rank {SLOW} arrived last at 6 of 6 barrier collectives, 4x as often as chance "
                                "(all kinds: 6 of 8); median lateness 2 ms")
    assert "2 ms per step over 6 steps" in f.stake_label  # 11,982 µs / 6
    assert found[1].time_at_stake_us == pytest.approx(2 * 297.0)
    kt = load_cached([str(job / f"rank{SLOW}.json")]).kineto
    assert [kt.name(e) for e in f.evidence.tolist()] == [NCCL_ALLREDUCE] * STEPS
    assert [kt.origin_us + kt.ts[e] for e in f.evidence.tolist()] == [10_000.0 * s + 3_320.0 for s in range(STEPS)]
    for d in f.details:
        assert (d["kind"], d["host_before_name"], d["host_longest_name"]) == ("barrier", "slow_logging", "slow_logging")
        assert (d["host_longest_dur_us"], d["host_gap_us"], d["launch_delay_us"]) == (2000.0, 100.0, 15.0)
        assert (d["gpu_before_name"], d["gpu_gap_us"]) == ("gemm_kernel", 1670.0)
    assert "its host's longest op was slow_logging (2 ms)" in f.verdict
    assert all(len(line) <= 80 for line in render_text(report, width=80).splitlines())


def test_the_bundled_cpu_job_straggler_and_its_recorded_delay():
    """sample_traces/cpu_job4 (recorded by `tracetui record --ranks 4`): rank 3 sleeps 300 ms
    in a `straggler_delay` annotation before its explicit collectives (gloo: the collectives
    are gloo:* annotations on gloo's worker threads, issued by c10d ops on the main thread)."""
    folder = SAMPLES / "cpu_job4"
    starts = {}
    for r in range(4):
        with gzip.open(folder / f"rank{r}_kineto.json.gz") as fh:
            ev = [e for e in json.load(fh)["traceEvents"] if e.get("name") == "gloo:all_reduce"]
        starts[r] = sorted(e["ts"] for e in ev)
    lasts = [max(range(4), key=lambda r: (starts[r][i], -r)) for i in range(len(starts[0]))]
    assert lasts.count(3) == 3 and len(lasts) == 4
    found = [f for f in check_job([str(folder)], workers=1).findings if f.rule == "straggler"]
    assert [(f.check, f.rank, f.count) for f in found] == [("all_reduce", 3, 3)]
    worst = max(found[0].details, key=lambda d: d["late_by_us"])
    assert worst["host_longest_name"] == "straggler_delay" and worst["host_longest_dur_us"] > 300_000


def test_no_straggler_when_each_rank_is_last_once(tmp_path):
    job = write_barrier_job(tmp_path / "job", slow_at=lambda step: step % 4, noise_rank=None)
    report = check_job([str(job)], workers=1)
    # ranks 0 and 1 are last twice each (steps 0, 4 and 1, 5); chance is 6 x 1/4 = 1.5: under 2x
    assert not [f for f in report.findings if f.rule == "straggler"]
    assert next(r for r in report.rules if r["id"] == "straggler") == {
        "id": "straggler", "title": default_specs()["straggler"].title, "severity": "warning", "scope": "job",
        "enabled": True, "findings": 0}
    assert "straggler" in render_text(report, width=80).split("no findings from:")[-1]
    # thresholds are the user's: last twice at 1.3x chance is enough with these.  Rank 1 ranks
    # first: as often last as rank 0, median lateness 1 µs against 0 (tracetui/job/stragglers.py)
    rules = tmp_path / "rules.toml"
    rules.write_text("[straggler]\nmin_times_chance = 1.0\nseverity = 'error'\n")
    found = [f for f in check_job([str(job)], rule_configs(rules), workers=1).findings if f.rule == "straggler"]
    assert [(f.check, f.rank, f.count, f.severity.word) for f in found] == [("barrier", 1, 2, "error")]
    assert "(as often as rank 0)" in found[0].verdict and found[0].time_at_stake_us == pytest.approx(2 * 1997.0)


def test_a_disabled_straggler_rule_reads_no_collectives(tmp_path):
    job = write_barrier_job(tmp_path / "job")
    configs = parse_overrides({"straggler": {"enabled": False}}, "t", default_specs())
    report = check_job([str(job)], configs, workers=1)
    assert not [f for f in report.findings if f.rule == "straggler"]
    task = {"rank": 0, "kineto": str(job / "rank0.json"), "et": None, "overrides": overrides_as_data(configs)}
    assert check_rank(task)["collectives"] == []
    assert len(check_rank({**task, "collectives": True})["collectives"]) == STEPS + 2


def test_job_rules_are_data_plus_one_function():
    assert set(JOB_CHECKS) == {r for r, s in default_specs().items() if s.scope == "job"} == {"straggler"}
