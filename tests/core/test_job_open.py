"""Opening a whole job (tracetui/job): files grouped by rank from distributedInfo, ETs paired
by content, each rank's numbers equal to the single-file summary of that rank, and the
warnings for missing, duplicated, foreign and failing ranks.  Facts from the shared
8-rank DLRM job (tests/shared_traces.SHARED / multirank/param_dlrm_8ranks)."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from shared_traces import SHARED, kineto_path

from tracetui.analysis.categories import get_categorizer
from tracetui.analysis.summary import RANK_KEYS, build_summary, rank_summary
from tracetui.cli.entry import main
from tracetui.io import jsonout
from tracetui.job import job_summary, looks_like_job, open_job
from tracetui.job.discover import expand_inputs, identify_file
from tracetui.store.traces import load_cached

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
pytestmark = pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")


def _k(r: int) -> str:
    return os.path.join(JOB, f"rank{r}_kineto.json.gz")


@pytest.fixture(scope="module")
def job():
    return open_job([JOB], workers=1)


def test_ranks_come_from_distributed_info_and_ets_pair_by_content(job):
    assert job.ranks == list(range(8))
    assert job.layout.world_size == 8 and job.layout.backend == "nccl"
    for rf in job.layout.ranks:
        assert rf.rank_from == "content"
        assert os.path.basename(rf.kineto) == f"rank{rf.rank}_kineto.json.gz"
        assert os.path.basename(rf.et) == f"rank{rf.rank}_et.json.gz"
    assert job.warnings == []
    # the ET's rank is the one its record_param_comms nodes record; its pid is the Kineto's CPU pid
    info = identify_file(os.path.join(JOB, "rank5_et.json.gz"))
    assert (info["kind"], info["rank"], info["rank_from"], info["pids"]) == ("et", 5, "content", [59816])


@pytest.mark.slow
def test_each_rank_equals_the_single_file_summary_of_that_rank(job):
    for r in range(8):
        single = jsonout.loads(jsonout.dumps(build_summary(load_cached([_k(r)]), get_categorizer(None))))
        mine = job.results[r].summary
        assert tuple(mine) == RANK_KEYS  # the job's keys of the single-file summary, nothing else computed
        for key in mine:
            if key not in ("source", "warnings"):
                assert mine[key] == single[key], (r, key)
    # rank 0, as `tracetui summary rank0_kineto.json.gz` says: 13.009 ms span, 5.537 ms exposed comm
    tl = job.results[0].summary["gpu_timeline"]
    assert round(tl["total_ms"], 3) == 13.009 and round(tl["exposed_comm_ms"], 3) == 5.537


@pytest.mark.parametrize("name", ["h100_bert_inference.json.gz", "mtia_inference_rank0.json.gz",
                                  "large_integer_values.json.gz", "cpu_only_small.json.gz"])
def test_rank_summary_is_the_summary_s_rank_keys(name):
    # what a job computes per rank: the same values as the single-file summary's keys (the
    # mtia and large-integer traces carry load warnings), none of the other tables
    linked = load_cached([kineto_path(name)], use_cache=False)
    full = build_summary(linked, get_categorizer(None))
    assert rank_summary(linked, get_categorizer(None)) == {k: full[k] for k in RANK_KEYS}
    assert full["warnings"] or "mtia" not in name


def test_a_worker_keeps_one_categorizer_per_rules_file(tmp_path):
    from tracetui.job.worker import categorizer

    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ncategory = "mine"\npattern = "^gemm"\n')
    first = categorizer(str(rules))
    assert categorizer(str(rules)) is first and first.categorize("gemm_x") == "mine"
    rules.write_text('[[rule]]\ncategory = "theirs"\npattern = "^gemm"\n')  # changed: read again
    assert categorizer(str(rules)).categorize("gemm_x") == "theirs"


def test_looks_like_job():
    assert looks_like_job([JOB])
    assert looks_like_job([os.path.join(JOB, "rank*_kineto.json.gz")])
    assert looks_like_job([_k(0), _k(1)])  # two Kineto traces: two ranks
    assert not looks_like_job([_k(0), os.path.join(JOB, "rank0_et.json.gz")])  # one rank's pair
    assert not looks_like_job([_k(0)])
    assert len(expand_inputs([os.path.join(JOB, "rank*_kineto.json.gz")])) == 8


def test_missing_duplicated_foreign_and_failing_ranks(tmp_path):
    for r in range(5):
        os.symlink(_k(r), tmp_path / f"rank{r}_kineto.json.gz")
    os.symlink(_k(2), tmp_path / "copy_of_two.json.gz")  # rank 2 again (from content)
    with gzip.open(_k(6)) as fh:
        doc = json.load(fh)
    doc["distributedInfo"]["world_size"] = 4  # another run
    (tmp_path / "rank6_kineto.json").write_text(json.dumps(doc))
    (tmp_path / "rank5_kineto.json").write_text(
        json.dumps({"distributedInfo": {"rank": 5, "world_size": 8, "backend": "nccl"}, "traceEvents": 12}))
    job = open_job([str(tmp_path)], workers=1, follow_links=True)  # links to the shared job
    assert job.ranks == [0, 1, 2, 3, 4, 5]
    assert [r for r in job.ranks if job.results[r].ok] == [0, 1, 2, 3, 4]
    w = "\n".join(job.warnings)
    assert "rank 2: two Kineto traces (copy_of_two.json.gz, rank2_kineto.json.gz); using copy_of_two.json.gz" in w
    assert "rank6_kineto.json: from another run (world_size 4, the job's is 8); skipped" in w
    assert "ranks 6-7 missing (world_size 8, 6 ranks found)" in w
    assert "rank 5: " in w and "'traceEvents' is a number" in w
    # the loaded ranks still match their collectives (5 ranks of 8: every one partial)
    assert len(job.collectives) == 8 and all(c["ranks"] == 5 for c in job.collectives)


def test_cli_summary_of_a_job_directory(capsys):
    assert main(["summary", JOB, "--json", "--workers", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == list(range(8))
    assert all(r["collectives"] == 8 and r["error"] is None for r in doc["ranks"])
    assert len(doc["collectives"]) == 8 and doc["job"]["ranks_loaded"] == 8
    assert main(["summary", _k(0), _k(3), "--workers", "1"]) == 0  # two Kineto traces: a job of 2 ranks
    out = capsys.readouterr().out
    assert "Job: 2 of 2 ranks loaded (world_size 8" in out and "ranks 1-2, 4-7 missing" in out
    assert main(["info", JOB]) == 2  # info takes one rank's files
    assert capsys.readouterr().err == f"tracetui: {JOB}: is a directory, not a trace file\n"


def test_job_summary_json_keys(job):
    doc = job_summary(job)
    assert set(doc["ranks"][0]) >= {"rank", "gpu_timeline", "kernel_categories", "trace", "collectives", "error"}
    assert set(doc["collectives"][0]) >= {"name", "group", "seq", "ranks", "start_skew_us", "end_skew_us", "last_rank",
                                          "bytes", "busbw_gbps", "min_dur_us", "max_dur_us", "algorithm"}


def test_a_rank_recorded_an_hour_apart_is_from_another_run(tmp_path):
    for r in range(4):
        os.symlink(_k(r), tmp_path / f"rank{r}_kineto.json.gz")
    with gzip.open(_k(4)) as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += 3600e6  # one hour later
    (tmp_path / "rank4_kineto.json").write_text(json.dumps(doc))
    job = open_job([str(tmp_path)], workers=1, follow_links=True)  # links to the shared job
    assert [r for r in job.ranks if job.results[r].foreign] == [4]
    assert any(w.startswith("rank 4: recorded 3,600 s away from the other ranks") for w in job.warnings)
    assert all(c["ranks"] == 4 and 4 not in c["members"] for c in job.collectives)
    assert job_summary(job)["ranks"][4]["foreign"] is True
