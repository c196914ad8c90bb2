"""Collectives matched across the ranks of the shared 8-rank DLRM job, NCCL's bus
bandwidth, the straggler ranking, and the parallel paths (process pool) giving the
same answer as one process.  Counts read from the files: every rank has 8 NCCL kernels,
5 ncclKernel_SendRecv (under nccl:all_to_all) and 3 ncclKernel_AllReduce_RING_LL (under
nccl:all_reduce, inputs [394241], [112], [226960] floats)."""

from __future__ import annotations

import os

import pytest
from shared_traces import SHARED

from tracetui.job import job_summary, open_job
from tracetui.job.comms import rank_collectives
from tracetui.job.nccl import bus_bandwidth_gbps, collective_kind, parse_kernel_name
from tracetui.store.traces import load_cached

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
pytestmark = pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")


@pytest.fixture(scope="module")
def job():
    return open_job([JOB], workers=1)


@pytest.mark.slow
def test_every_nccl_collective_is_matched_on_all_8_ranks(job):
    for r in range(8):
        assert len(job.results[r].collectives) == 8
    cs = job.collectives
    assert [c["kind"] for c in cs] == ["all_to_all"] * 4 + ["all_reduce", "all_to_all", "all_reduce", "all_reduce"]
    assert all(c["ranks"] == 8 and c["missing_ranks"] == [] for c in cs)
    assert [c["bytes"] for c in cs if c["kind"] == "all_reduce"] == [394241 * 4, 112 * 4, 226960 * 4]
    assert {(c["algorithm"], c["protocol"]) for c in cs} == {("RING", "SIMPLE"), ("RING", "LL")}
    # the first all_to_all: rank 1's SendRecv kernel ran 7,635 µs, waiting for rank 7
    first = next(iter(cs))
    assert first["first_rank"] == 1 and first["last_rank"] == 7 and first["max_dur_us"] == 7635.0
    assert first["members"][1]["dur_us"] == 7635.0
    # all ranks leave a collective together (one host clock): end skews of a few µs
    assert max(c["end_skew_us"] for c in cs) <= 7.0


def test_bus_bandwidth_is_nccls(job):
    ar = next(c for c in job.collectives if c["kind"] == "all_reduce")
    assert ar["busbw_gbps"] == pytest.approx(1576964 / (ar["min_dur_us"] * 1e-6) / 1e9 * 2 * 7 / 8)
    assert bus_bandwidth_gbps("all_gather", 8_000, 1.0, 8) == pytest.approx(8.0 * 7 / 8)
    assert bus_bandwidth_gbps("broadcast", 8_000, 1.0, 8) == pytest.approx(8.0)
    assert bus_bandwidth_gbps("reduce_scatter", 8_000, 0.0, 8) is None


def test_straggler_ranking(job):
    top = job.stragglers[0]
    assert top["rank"] == 7 and top["times_last"] == 5 and top["collectives"] == 8
    assert sorted(s["rank"] for s in job.stragglers) == list(range(8))
    assert sum(s["times_last"] for s in job.stragglers) == 8


def test_kernel_names_and_collective_names():
    assert parse_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == (
        "all_reduce", "RING", "LL")
    assert parse_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)") == ("reduce_scatter", "RING", "LL")
    assert parse_kernel_name("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == ("send_recv", "", "")
    assert [collective_kind(n) for n in ("allreduce", "nccl:all_to_all", "_allgather_base", "c10d::alltoall_base_",
                                         "all_to_allv")] == ["all_reduce", "all_to_all", "all_gather", "all_to_all",
                                                             "all_to_all"]


def test_group_and_sizes_from_record_param_comms_args():
    # b200x8_eager: one _allgather_base on process group "3", 25,136 BFloat16 in, 201,088 out
    kt = load_cached([os.path.join(SHARED, "kineto", "b200x8_eager.json.gz")]).kineto
    (row,) = rank_collectives(kt)
    assert (row["kind"], row["group"], row["group_size"], row["in_bytes"], row["out_bytes"]) == (
        "all_gather", "3", 8, 25136 * 2, 201088 * 2)


@pytest.mark.slow
def test_process_pool_gives_the_same_result(job):
    pooled = open_job([JOB], workers=2)
    assert job_summary(pooled) == job_summary(job)


def _row(kind: str, seq: int | None, start: float, group: str | None = "0") -> dict:
    return {"collective": kind, "kind": kind, "group": group, "seq": seq, "in_bytes": 1000, "out_bytes": None,
            "dtype": "Float", "group_size": 2, "algorithm": "RING", "protocol": "LL", "start_us": start,
            "end_us": start + 10.0, "dur_us": 10.0, "kernel": int(start), "op": int(start)}


def test_matching_by_group_and_sequence_number_wins_over_order():
    from tracetui.job.match import match_collectives

    # rank 1 lists seq 8 before seq 7 (another stream started it first): matched by seq, not order
    per_rank = {0: [_row("all_reduce", 7, 100.0), _row("all_reduce", 8, 200.0)],
                1: [_row("all_reduce", 8, 150.0), _row("all_reduce", 7, 160.0)]}
    cs = match_collectives(per_rank)
    assert [(c["seq"], c["ranks"], c["first_rank"], c["last_rank"], c["start_skew_us"]) for c in cs] == [
        (7, 2, 0, 1, 60.0), (8, 2, 1, 0, 50.0)]
    # no seq: by order per group and kind; another group is counted apart
    per_rank = {0: [_row("all_reduce", None, 100.0), _row("all_reduce", None, 110.0, "1")],
                1: [_row("all_reduce", None, 105.0, "1"), _row("all_reduce", None, 120.0)]}
    cs = match_collectives(per_rank)
    assert [(c["group"], c["index"], c["start_skew_us"]) for c in cs] == [("0", 0, 20.0), ("1", 0, 5.0)]
