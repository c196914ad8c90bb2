"""Stragglers by arrival (issue 23, item 5; tracetui/job/stragglers.py): per collective who
arrived last and by how much; per rank how often it was last and its median lateness, by
collective kind with barriers apart; the verdict names the rank last most often.

The expected numbers of the shared 8-rank DLRM job are read from the raw files here (gzip +
json): each rank's NCCL kernels in start order are its collectives in the job's order (NCCL
issues a group's collectives in the same order on every rank); a rank arrives when its
kernel starts."""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter, defaultdict
from statistics import median

import pytest
from shared_traces import SAMPLES, SHARED

from tracetui.job import job_summary, open_job
from tracetui.job.stragglers import arrivals

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
KIND = {"SendRecv": "all_to_all", "AllReduce": "all_reduce"}


def _raw_starts() -> list[dict[int, tuple[str, float]]]:
    """Per collective (in order): rank -> (kind, kernel start µs), from the raw files."""
    per_rank = {}
    for r in range(8):
        with gzip.open(os.path.join(JOB, f"rank{r}_kineto.json.gz")) as fh:
            ks = [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
        per_rank[r] = [(KIND[e["name"].split("_")[1]], float(e["ts"])) for e in sorted(ks, key=lambda e: e["ts"])]
    n = len(per_rank[0])
    return [{r: per_rank[r][i] for r in range(8)} for i in range(n)]


@pytest.mark.slow
def test_arrivals_of_the_dlrm_job_match_the_raw_kernel_starts():
    raw = _raw_starts()
    last = Counter()
    late: dict[int, list[float]] = defaultdict(list)
    late_kind: dict[tuple[int, str], list[float]] = defaultdict(list)
    late_by = []
    for coll in raw:
        starts = {r: ts for r, (_, ts) in coll.items()}
        first = min(starts.values())
        order = sorted(starts, key=lambda r: (-starts[r], r))
        last[order[0]] += 1
        late_by.append(starts[order[0]] - starts[order[1]])
        for r, (kind, ts) in coll.items():
            late[r].append(ts - first)
            late_kind[(r, kind)].append(ts - first)
    assert last.most_common(1) == [(7, 5)]

    job = open_job([JOB], workers=1)
    doc = job_summary(job)
    v = doc["straggler"]
    assert (v["rank"], v["times_last"], v["collectives"]) == (7, 5, 8)
    assert v["median_late_us"] == pytest.approx(median(late[7]))
    assert v["evidence"].startswith("rank 7 arrived last at 5 of 8 collectives")
    assert [a["last_rank"] for a in doc["arrivals"]] == [max(c, key=lambda r: (c[r][1], -r)) for c in raw]
    assert [a["late_by_us"] for a in doc["arrivals"]] == pytest.approx(late_by)
    for s in doc["stragglers"]:
        assert s["times_last"] == last[s["rank"]]
        assert s["median_late_us"] == pytest.approx(median(late[s["rank"]]))
        for kind, k in s["by_kind"].items():
            assert k["median_late_us"] == pytest.approx(median(late_kind[(s["rank"], kind)]))
    ranks = [s["rank"] for s in doc["stragglers"]]
    assert ranks[0] == 7 and sorted(ranks) == list(range(8))


def _coll(kind: str, starts: dict[int, float]) -> dict:
    return {"name": kind, "kind": kind, "ranks": len(starts), "start_us": min(starts.values()),
            "members": {r: {"start_us": s} for r, s in starts.items()}}


def test_the_rank_last_at_every_barrier_outranks_noisy_all_reduce_skews():
    """Rank 2 arrives 2 ms late at each of 6 barriers; two all-reduces have 300 ms of noise on
    rank 0.  Summed lateness (the old ranking) puts rank 0 first; arrival puts rank 2 first."""
    colls = [_coll("barrier", {0: 0.0, 1: 10.0, 2: 2_000.0}) for _ in range(6)]
    colls += [_coll("all_reduce", {0: 300_000.0, 1: 0.0, 2: 5.0}), _coll("all_reduce", {0: 250_000.0, 1: 3.0, 2: 0.0})]
    out = arrivals(colls, [0, 1, 2])
    by_rank = {s["rank"]: s for s in out["per_rank"]}
    assert by_rank[0]["late_us"] > by_rank[2]["late_us"]  # what the sum would have said
    assert out["verdict"]["rank"] == 2 and out["verdict"]["times_last"] == 6
    assert by_rank[2]["by_kind"]["barrier"] == {"collectives": 6, "times_last": 6, "median_late_us": 2_000.0}
    assert by_rank[0]["by_kind"]["all_reduce"]["times_last"] == 2
    assert "barrier: last at 6 of 6, median 2,000.0 µs late" in out["verdict"]["evidence"]
    assert [a["late_by_us"] for a in out["per_collective"][:6]] == [1_990.0] * 6


def test_no_verdict_without_a_late_rank():
    out = arrivals([_coll("all_reduce", {0: 5.0, 1: 5.0})], [0, 1])
    assert out["verdict"] is None and out["per_rank"][0]["times_last"] == 0


@pytest.mark.skipif(not (SAMPLES / "cpu_job4").is_dir(), reason="bundled job missing")
def test_bundled_job_names_its_delayed_rank():
    """sample_traces/cpu_job4 was recorded with rank 3 sleeping 300 ms before the explicit
    collectives (docs/jobs.md)."""
    doc = job_summary(open_job([str(SAMPLES / "cpu_job4")], workers=1))
    assert doc["straggler"]["rank"] == 3
