"""Whole jobs: every rank of a distributed run (see docs/jobs.md).

``open_job`` groups files by rank, loads and summarises every rank in parallel processes
(or on a Dask cluster) through the per-file cache, and matches the collectives across
ranks; ``job_summary`` is the ``tracetui summary --json`` document of a job.

Only the input tests (``looks_like_job``, ``expand_inputs``) load with the package: every
start of ``tracetui`` runs them.  The job machinery (``job``, ``executor``, ``worker``,
``match``) is imported when ``open_job``, ``job_summary``, ``Job`` or ``RankResult`` is
first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names
from .discover import expand_inputs, looks_like_job

if TYPE_CHECKING:
    from .job import Job, RankResult, find_layout, job_summary, open_job

__all__ = ["Job", "RankResult", "expand_inputs", "find_layout", "job_summary", "looks_like_job", "open_job"]

__getattr__ = lazy_names(__name__, {name: ".job" for name in ("Job", "RankResult", "find_layout", "job_summary",
                                                                "open_job")})
