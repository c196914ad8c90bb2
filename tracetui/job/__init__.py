"""Whole jobs: every rank of a distributed run (see docs/jobs.md).

``open_job`` groups files by rank, loads and summarises every rank in parallel processes
(or on a Dask cluster) through the per-file cache, and matches the collectives across
ranks; ``job_summary`` is the ``tracetui summary --json`` document of a job.
"""

from .discover import expand_inputs, looks_like_job
from .job import Job, RankResult, find_layout, job_summary, open_job

__all__ = ["Job", "RankResult", "expand_inputs", "find_layout", "job_summary", "looks_like_job", "open_job"]
