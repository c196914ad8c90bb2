"""Open a whole job: every rank of a distributed run, summarised in parallel, joined here.

``open_job(inputs)``: expand the inputs (folders, files, globs), identify every file in
parallel (kind, rank), group them into ranks (:mod:`tracetui.job.layout`), then load and
summarise every rank in parallel (:func:`tracetui.job.worker.summarise_rank`, through the
per-file cache) and join the collectives across ranks (:mod:`tracetui.job.match`).  The
parent process holds only the small per-rank results; a rank that fails is reported and
the others go on.  ``job_summary(job)`` is the ``tracetui summary --json`` document of a
job (``ranks``, ``collectives``, ``stragglers``, ``warnings``; see docs/jobs.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import units
from ..errors import TraceFormatError
from .discover import expand_inputs
from .executor import Runner
from .layout import JobLayout, group_ranks
from .match import match_collectives
from .stragglers import arrivals
from .worker import identify, summarise_rank

Progress = Callable[[str, float], None]

#: a rank whose first event is further than this (µs) from the median of the ranks' first
#: events was recorded at another time: another run (10 minutes)
FOREIGN_GAP_US = 600e6


@dataclass
class RankResult:
    """One rank's outcome: its files, the job's keys of its single-file summary
    (:func:`tracetui.analysis.summary.rank_summary`) and its collectives, or an error."""

    rank: int
    kineto: str
    et: str | None
    summary: dict[str, Any] | None
    collectives: list[dict[str, Any]]
    error: str | None = None
    start_us: float | None = None  #: absolute µs of the rank's first event
    foreign: bool = False  #: recorded at another time than the job's other ranks (not matched)

    @property
    def ok(self) -> bool:
        return self.error is None and self.summary is not None


@dataclass
class Job:
    """A loaded job: ``layout`` (files per rank), ``results`` (by rank, loaded or failed),
    ``collectives`` (matched across ranks), ``stragglers`` (per rank, ranked by arrival),
    ``warnings`` (strings), ``straggler`` (the verdict) and ``arrivals`` (who arrived last at
    each collective): :func:`tracetui.job.stragglers.arrivals`."""

    inputs: list[str]
    layout: JobLayout
    results: dict[int, RankResult]
    collectives: list[dict[str, Any]]
    stragglers: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    straggler: dict[str, Any] | None = None
    arrivals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ranks(self) -> list[int]:
        """Ranks with files, in order (loaded or not)."""
        return [r.rank for r in self.layout.ranks]

    @property
    def world_size(self) -> int:
        return self.layout.world_size or len(self.layout.ranks)

    @property
    def title(self) -> str:
        ins = self.inputs
        where = ins[0] if len(ins) == 1 else f"{len(ins)} inputs"
        return f"job {os.path.basename(os.path.normpath(where))} ({len(self.ranks)} ranks)"


def _failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    return {"rank": task["rank"], "kineto": task["kineto"], "et": task.get("et"), "summary": None,
            "collectives": [], "error": message}


def _unidentified(path: str, message: str) -> dict[str, Any]:
    return {"path": path, "kind": "unknown", "rank": None, "rank_from": None, "world_size": None, "backend": None,
            "pids": [], "error": f"{path}: {message}"}


def run_per_rank(inputs: list[str], fn: Callable[[dict[str, Any]], dict[str, Any]], fields: dict[str, Any],
                 on_error: Callable[[dict[str, Any], str], dict[str, Any]], *, workers: int | None,
                 scheduler: str | None, progress: Progress, verb: str,
                 follow_links: bool = False) -> tuple[JobLayout, list[dict[str, Any]]]:
    """Find the ranks of the job named by ``inputs`` and run ``fn`` on each, in parallel
    processes (or on the Dask ``scheduler``): ``fn`` gets ``{"rank", "kineto", "et", **fields}``
    (``on_error(task, message)`` answers for a task whose worker failed).  Progress: 0 to 0.1
    identifying the files, then to 0.95 as ranks are done ("<verb> 3/8 ranks").  ``follow_links``:
    see :func:`expand_inputs`."""
    skipped: list[str] = []
    with Runner(workers, scheduler) as run:
        layout = find_layout(inputs, run, progress, skipped, follow_links)
        layout.warnings[:0] = skipped  # the names left out first
        tasks = [{"rank": r.rank, "kineto": r.kineto, "et": r.et, **fields} for r in layout.ranks]
        outs = run.map(fn, tasks, on_error=on_error,
                       progress=lambda d, n: progress(f"{verb} {d}/{n} ranks", 0.1 + 0.85 * d / n))
    return layout, outs


def open_job(inputs: list[str], *, use_cache: bool = True, workers: int | None = None,
             scheduler: str | None = None, top: int = 15, rules: str | None = None,
             progress: Progress | None = None, follow_links: bool = False) -> Job:
    """Open the job named by ``inputs`` (see the module docstring).

    ``workers``: local processes (default one per core); ``scheduler``: a Dask scheduler
    address, to run the per-file work on a cluster instead.  ``follow_links``: read a folder's
    files that lead outside it (:func:`expand_inputs`).  Each rank's ``summary`` holds the
    keys of its single-file summary a job reads (:func:`tracetui.analysis.summary.rank_summary`),
    so ``top`` (rows of the single-file tables) changes nothing; it is accepted for callers.
    Raises TraceFormatError when the inputs hold no Kineto trace with a rank.
    """
    report = progress or (lambda msg, frac: None)
    layout, outs = run_per_rank(inputs, summarise_rank, {"use_cache": use_cache, "rules": rules}, _failed,
                                workers=workers, scheduler=scheduler, progress=report, verb="summarised",
                                follow_links=follow_links)
    results = {o["rank"]: RankResult(o["rank"], o["kineto"], o.get("et"), o["summary"], o["collectives"], o["error"],
                                     o.get("start_us")) for o in outs}
    warnings = list(layout.warnings)
    warnings += [f"rank {r.rank}: {r.error}" for r in results.values() if r.error]
    report("matching collectives across ranks", 0.97)
    ok = [r for r in results.values() if r.ok]
    joined = join_ranks({r.rank: r.collectives for r in ok}, {r.rank: r.start_us for r in ok}, layout.world_size)
    for r in joined.foreign:
        results[r].foreign = True
    report("ready", 1.0)
    arr = joined.arrivals
    return Job(list(inputs), layout, results, joined.collectives, arr["per_rank"], warnings + joined.warnings,
               arr["verdict"], arr["per_collective"])


@dataclass
class JoinedRanks:
    """The ranks' collectives joined (:func:`join_ranks`): ``collectives`` matched across
    the ranks, ``arrivals`` (:func:`tracetui.job.stragglers.arrivals` of them), ``foreign``
    (ranks recorded at another time, left out) and ``warnings``."""

    collectives: list[dict[str, Any]]
    arrivals: dict[str, Any]
    foreign: list[int]
    warnings: list[str]


def join_ranks(collectives: dict[int, list[dict[str, Any]]], starts: dict[int, float | None],
               world_size: int | None) -> JoinedRanks:
    """Join the loaded ranks' collectives (rank -> :func:`~tracetui.job.comms.rank_collectives`;
    ``starts``: rank -> absolute µs of its first event): ranks recorded far from the others
    (:data:`FOREIGN_GAP_US`) are left out, the others matched
    (:func:`~tracetui.job.match.match_collectives`) and their arrivals ranked.  The one join
    of ``tracetui summary JOB`` and ``tracetui check JOB``."""
    foreign, warnings = _foreign(starts)
    per_rank = {r: rows for r, rows in collectives.items() if r not in foreign}
    colls = match_collectives(per_rank, world_size)
    partial = sum(1 for c in colls if c["missing_ranks"])
    if partial:
        warnings.append(f"{partial} of {len(colls)} collectives not matched on every loaded rank")
    return JoinedRanks(colls, arrivals(colls, sorted(per_rank)), sorted(foreign), warnings)


def _foreign(starts: dict[int, float | None]) -> tuple[set[int], list[str]]:
    """Ranks recorded far from the others (:data:`FOREIGN_GAP_US` from the median of the
    ranks' first events; needs three ranks with a start), and their warnings."""
    known = sorted(s for s in starts.values() if s is not None)
    if len(known) < 3:
        return set(), []
    median = known[len(known) // 2]
    out, warnings = set(), []
    for r, s in starts.items():
        if s is not None and abs(s - median) > FOREIGN_GAP_US:
            out.add(r)
            away = units.s_text(abs(s - median) / 1e6, ",.0f")
            warnings.append(f"rank {r}: recorded {away} away from the other ranks: "
                            f"from another run? (left out of the collectives)")
    return out, warnings


def find_layout(inputs: list[str], run: Runner, progress: Progress | None = None,
                skipped: list[str] | None = None, follow_links: bool = False) -> JobLayout:
    """The files of each rank of the job named by ``inputs`` (identified on ``run``'s workers);
    files left out are said in ``skipped`` (see :func:`expand_inputs`).
    Raises TraceFormatError when the inputs hold no Kineto trace with a rank."""
    report = progress or (lambda msg, frac: None)
    files = expand_inputs(list(inputs), skipped, follow_links)
    if not files:
        raise TraceFormatError(inputs[0] if inputs else None, "no trace files (*.json, *.json.gz) found")
    report(f"identifying {len(files)} files", 0.0)
    infos = run.map(identify, files, on_error=_unidentified,
                    progress=lambda d, n: report(f"identified {d}/{n} files", 0.1 * d / n))
    layout = group_ranks(infos)
    if not layout.ranks:
        raise TraceFormatError(inputs[0] if len(inputs) == 1 else None,
                               "no Kineto trace with a rank among the files of this job"
                               + (f" ({layout.warnings[0]})" if layout.warnings else ""))
    return layout


_RANK_KEYS = ("trace", "gpu_timeline", "kernel_categories", "warnings")
_COLL_KEYS = ("name", "kind", "group", "seq", "index", "ranks", "missing_ranks", "start_skew_us", "end_skew_us",
              "min_dur_us", "max_dur_us", "first_rank", "last_rank", "bytes", "algo_bytes", "dtype", "algorithm",
              "protocol", "busbw_gbps")


def job_summary(job: Job) -> dict[str, Any]:
    """The ``summary --json`` document of a job.

    ``job``: {``inputs``, ``world_size``, ``backend``, ``ranks_found``, ``ranks_loaded``};
    ``ranks``: [{``rank``, ``kineto``, ``et``, ``error``, ``collectives`` (count), and from
    the rank's own summary ``trace``, ``gpu_timeline``, ``kernel_categories``, ``warnings``}];
    ``collectives``: matched rows (:func:`~tracetui.job.match.match_collectives` without
    ``members``); ``stragglers`` (per rank, ranked by arrival), ``straggler`` (the verdict:
    ``rank``, ``times_last``, ``collectives``, ``median_late_us``, ``tied_with``,
    ``evidence``), ``arrivals`` (per collective: ``index`` into ``collectives``,
    ``last_rank``, ``late_by_us``, ``skew_us``; :mod:`tracetui.job.stragglers`); ``warnings``.
    """
    ranks = []
    for r in job.ranks:
        res = job.results[r]
        row: dict[str, Any] = {"rank": r, "kineto": res.kineto, "et": res.et, "error": res.error,
                               "foreign": res.foreign, "collectives": len(res.collectives)}
        for k in _RANK_KEYS:
            row[k] = res.summary.get(k) if res.summary else None
        ranks.append(row)
    return {
        "job": {"inputs": job.inputs, "world_size": job.layout.world_size, "backend": job.layout.backend,
                "ranks_found": len(job.ranks), "ranks_loaded": sum(1 for r in job.results.values() if r.ok)},
        "ranks": ranks,
        "collectives": [{k: c[k] for k in _COLL_KEYS} for c in job.collectives],
        "stragglers": job.stragglers,
        "straggler": job.straggler,
        "arrivals": job.arrivals,
        "warnings": job.warnings,
    }
