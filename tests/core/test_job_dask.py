"""`--scheduler`: the per-rank parse and summaries on a Dask distributed cluster (a
LocalCluster of 2 worker processes) give the same job summary as the local run."""

from __future__ import annotations

import os

import pytest
from shared_traces import SHARED

from tracetui.job import job_summary, open_job

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
distributed = pytest.importorskip("distributed")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
def test_dask_cluster_gives_the_local_result():
    local = job_summary(open_job([JOB], workers=1))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        remote = job_summary(open_job([JOB], scheduler=cl.scheduler_address))
        with distributed.Client(cl.scheduler_address) as client:
            assert len(client.scheduler_info()["workers"]) == 2
    assert remote == local
    assert len(remote["collectives"]) == 8 and all(c["ranks"] == 8 for c in remote["collectives"])
