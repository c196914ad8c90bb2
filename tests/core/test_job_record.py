"""`tracetui record --ranks 4` records a real 4-rank CPU job (gloo, DDP + explicit
all_reduce / broadcast / all_gather, an ET observer per rank) whose straggler (rank 3,
sleeping before the explicit collectives) the cross-rank summary finds.  Per rank and step:
1 DDP bucket all_reduce of the 2,632 gradient floats (32x64 + 64 + 64x8 + 8), then
all_reduce, broadcast and all_gather of 4,096 floats; 2 recorded steps: 8 collectives per
rank.

Checked twice: on the job bundled in ``sample_traces/cpu_job4`` (recorded by that command
with ``--delay-ms 300``, see sample_traces/README.md; no torch needed), and on a job recorded
now (needs torch, skipped without it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_traces import SAMPLES

from tracetui.analysis.categories import get_categorizer
from tracetui.analysis.summary import RANK_KEYS, build_summary
from tracetui.io import jsonout
from tracetui.job import open_job
from tracetui.store.traces import load_cached

DELAY_MS = 300.0
BUNDLED = Path(SAMPLES) / "cpu_job4"


def check_recorded_job(folder: Path) -> None:
    job = open_job([str(folder)], workers=2)
    assert job.ranks == [0, 1, 2, 3] and job.layout.world_size == 4 and job.layout.backend == "gloo"
    assert all(rf.et is not None and rf.et.endswith(f"rank{rf.rank}_et.json.gz") for rf in job.layout.ranks)
    assert job.warnings == []
    # each rank's numbers are the single-file summary of that rank
    for r in job.ranks:
        single = jsonout.loads(jsonout.dumps(build_summary(load_cached([job.results[r].kineto]),
                                                           get_categorizer(None))))
        assert tuple(job.results[r].summary) == RANK_KEYS
        for key in RANK_KEYS:
            if key not in ("source", "warnings"):
                assert job.results[r].summary[key] == single[key], (r, key)
    # every collective matched on all 4 ranks
    cs = job.collectives
    assert [c["kind"] for c in cs] == ["all_reduce", "all_reduce", "broadcast", "all_gather"] * 2
    assert all(c["ranks"] == 4 and c["missing_ranks"] == [] for c in cs)
    assert [c["bytes"] for c in cs[:4]] == [2632 * 4, 4096 * 4, 4096 * 4, 4096 * 4]
    # the straggler: last to arrive at each explicit all_reduce, by about its delay; ranked first
    explicit = [c for c in cs if c["kind"] == "all_reduce" and c["bytes"] == 4096 * 4]
    assert len(explicit) == 2
    assert all(c["last_rank"] == 3 and c["start_skew_us"] >= 0.8 * DELAY_MS * 1000 for c in explicit)
    assert job.stragglers[0]["rank"] == 3


def test_bundled_recorded_job_is_grouped_paired_matched_with_its_straggler():
    check_recorded_job(BUNDLED)


@pytest.fixture(scope="module")
def job4(tmp_path_factory):
    pytest.importorskip("torch")
    from tracetui.cli.record import main as record_main

    out = tmp_path_factory.mktemp("rec")
    assert record_main(["--ranks", "4", "--out-dir", str(out), "--delay-ms", str(DELAY_MS)]) == 0
    return out / "cpu_job4"


def test_recorded_job_is_grouped_and_paired(job4):
    check_recorded_job(job4)
