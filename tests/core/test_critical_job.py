"""The critical path of a step across the 8 ranks of the shared DLRM job crosses to the
rank that arrived last at a collective (checked against the raw files' NCCL kernel starts)."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

import numpy as np
import pytest
from shared_traces import SHARED

from tracetui.cli.entry import main
from tracetui.job.critical import job_critical_paths

JOB = SHARED / "multirank" / "param_dlrm_8ranks"


@lru_cache(maxsize=None)
def _nccl_starts(rank: int) -> list[int]:
    """Absolute start (µs) of each NCCL kernel of a rank, in time order (one kernel per collective)."""
    ev = json.loads(gzip.decompress((JOB / f"rank{rank}_kineto.json.gz").read_bytes()))["traceEvents"]
    return sorted(e["ts"] for e in ev if e.get("cat") == "kernel" and e.get("name", "").startswith("ncclKernel"))


@pytest.fixture(scope="module")
def job_path():
    return job_critical_paths([str(JOB)], step=10, workers=1)


def test_path_crosses_to_the_rank_that_arrived_last(job_path):
    cp = job_path.chosen
    assert cp.crossings, "the step's path stays on one rank"
    c = cp.crossings[0]
    at_abs = c["at_us"] + cp.origin_us
    late = c["to_rank"]
    # the crossing is at the start of one of the late rank's NCCL kernels ...
    ordinal = _nccl_starts(late).index(round(at_abs))
    # ... and of that collective's kernels on the 8 ranks, the late rank's started last
    starts = {r: _nccl_starts(r)[ordinal] for r in range(8)}
    assert max(starts, key=starts.get) == late
    assert c["waited_us"] == pytest.approx(starts[late] - starts[c["from_rank"]])
    assert c["collective"] == "all_to_all" and late == 7 and c["from_rank"] == 4
    # the path runs on both ranks, contiguous in time, and names what rank 7 did before it arrived
    s = cp.segments
    assert {4, 7} <= set(s.rank.tolist())
    assert np.allclose(s.start_us[1:], (s.start_us + s.dur_us)[:-1])
    assert sum(cp.by_kind_us.values()) == pytest.approx(cp.total_us)
    assert c["before"] and all(b["start_us"] < c["at_us"] for b in c["before"])
    # the path ends where the job's step ends: rank 4's ProfilerStep#10 (the latest end of any rank)
    assert cp.start_us + cp.total_us + cp.origin_us == pytest.approx(1694128201424049 + 17979)


@pytest.mark.slow
def test_job_cli_json(capsys):
    assert main(["critical-path", str(JOB), "--step", "10", "--json", "--workers", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["crossings"][0]["to_rank"] == 7
    assert sum(doc["by_kind_us"].values()) == pytest.approx(doc["total_us"])
    assert {s["rank"] for s in doc["segments"]} >= {4, 7}
    assert main(["critical-path", str(JOB), "--shrink", "x=10", "--workers", "1"]) == 2
