"""Diff documents of files, of two ranks of a job, and of two whole jobs rank by rank.

:func:`diff_files` loads both sides through the trace cache and answers an unchanged pair
from its stored document (:func:`tracetui.store.summaries.diff_key`), so a re-diff costs
a file check.  :func:`diff_jobs` compares rank ``r`` of job A with rank ``r`` of job B for
every rank both have, each pair in a worker process (or on a Dask cluster), as ``tracetui
summary JOB`` does: only paths go out and a compact per-rank result comes back
(:data:`RANK_KEYS`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import TraceFormatError
from ..io import jsonout
from ..job import find_layout
from ..job.executor import Runner
from ..job.layout import JobLayout
from ..job.worker import rank_error

Progress = Callable[[str, float], None]

#: keys of a full document kept for each rank of a job diff
RANK_KEYS = ("step_time", "gpu_time_per_step", "gpu_events_per_step", "gpu_timeline", "alignment")
#: merged-tree rows kept for each rank of a job diff
RANK_TREE_ROWS = 5


def diff_files(paths_a: list[str], paths_b: list[str], *, use_cache: bool = True, step_a: int | None = None,
               step_b: int | None = None, rules: str | None = None, top: int = 15,
               labels: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    """The :func:`~tracetui.diff.report.diff_document` of two runs' files (each a Kineto or
    driver-call trace, with its ET), as JSON types; stored and reused when ``use_cache``."""
    from ..store.summaries import diff_key, read_summary, write_summary

    options = {"step_a": step_a, "step_b": step_b, "top": top, "labels": list(labels)}
    key = diff_key(paths_a, paths_b, rules, options) if use_cache else None
    doc = read_summary(key) if key is not None else None
    if doc is not None:
        return doc
    d = open_diff(DiffRequest(tuple(paths_a), tuple(paths_b), tuple(labels), step_a, step_b, rules, use_cache))
    from .report import diff_document

    doc = jsonout.loads(jsonout.dumps(diff_document(d, top)))
    if key is not None:
        write_summary(key, doc)
    return doc


def _import_diff() -> None:
    """Import what the diff needs after the loads (pandas and the analysis: ~0.4 s); a failure
    is left to the import that follows, which raises it where it belongs."""
    try:
        from . import report  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


def load_both(paths_a: list[str], paths_b: list[str], use_cache: bool,
              meanwhile: Callable[[], None] | None = None, progress: Progress | None = None) -> tuple[Any, Any]:
    """Both sides; the same files give the same loaded trace twice.  Through the cache they
    load at the same time (a big trace is parsed in a child process of its own, so the two
    share the cores) while ``meanwhile()`` runs here; without it one after the other (an
    in-process load decodes in forked workers only while this process has one thread).
    ``progress(message, fraction)``: each side's steps, ``A: ...`` and ``B: ...``, the
    fraction the mean of both sides'."""
    from concurrent.futures import ThreadPoolExecutor

    from ..store.traces import load_cached

    done = {"A": 0.0, "B": 0.0}

    def relay(side: str) -> Progress | None:
        if progress is None:
            return None

        def report(message: str, frac: float) -> None:
            done[side] = frac
            progress(f"{side}: {message}", (done["A"] + done["B"]) / 2)
        return report

    same = [os.path.abspath(p) for p in paths_a] == [os.path.abspath(p) for p in paths_b]
    if same or not use_cache:
        a = load_cached(paths_a, use_cache=use_cache, progress=relay("A"))
        b = a if same else load_cached(paths_b, use_cache=False, progress=relay("B"))
        if meanwhile is not None:
            meanwhile()
        return a, b
    with ThreadPoolExecutor(2, thread_name_prefix="tracetui-diff-load") as pool:
        fa = pool.submit(load_cached, paths_a, use_cache=use_cache, progress=relay("A"))
        fb = pool.submit(load_cached, paths_b, use_cache=use_cache, progress=relay("B"))
        if meanwhile is not None:
            meanwhile()
        return fa.result(), fb.result()


@dataclass(frozen=True)
class DiffRequest:
    """Two runs to compare, as files (the command line's sides resolved: a job's ranks to
    their files), with the steps, labels and rules of :func:`~tracetui.diff.compare.diff_traces`."""

    paths_a: tuple[str, ...]
    paths_b: tuple[str, ...]
    labels: tuple[str, str] = ("A", "B")
    step_a: int | None = None
    step_b: int | None = None
    rules: str | None = None
    use_cache: bool = True


def open_diff(req: DiffRequest, progress: Progress | None = None, categorizer: Any = None) -> Any:
    """Load both sides of ``req`` (through the cache) and diff them: a
    :class:`~tracetui.diff.compare.TraceDiff` (what the browser shows).  ``progress`` as
    :func:`load_both`'s, then the alignment; ``categorizer``: the kernel categories (default:
    ``req.rules`` read here)."""
    report = progress or (lambda msg, frac: None)
    a, b = load_both(list(req.paths_a), list(req.paths_b), req.use_cache, meanwhile=_import_diff,
                     progress=lambda m, f: report(m, 0.8 * f))
    from ..analysis.categories import get_categorizer
    from .compare import diff_traces

    report("pairing the steps and aligning the op trees", 0.85)
    cat = categorizer if categorizer is not None else get_categorizer(req.rules)
    return diff_traces(a, b, step_a=req.step_a, step_b=req.step_b, categorizer=cat, labels=req.labels)


def rank_files(layout: JobLayout, rank: int, where: str) -> list[str]:
    """The Kineto trace (and ET) of ``rank``; TraceFormatError when the job has no such rank."""
    for r in layout.ranks:
        if r.rank == rank:
            return [r.kineto] + ([r.et] if r.et else [])
    have = ", ".join(str(r.rank) for r in layout.ranks)
    raise TraceFormatError(where, f"has no rank {rank} (ranks found: {have})")


def diff_rank(task: dict[str, Any]) -> dict[str, Any]:
    """One rank pair of a job diff (runs in a worker): the compact result, or ``error`` set."""
    out: dict[str, Any] = {"rank": task["rank"], "a": task["a"], "b": task["b"], "error": None}
    try:
        doc = diff_files(task["a"], task["b"], use_cache=task["use_cache"], step_a=task["step_a"],
                         step_b=task["step_b"], rules=task["rules"], top=task["top"],
                         labels=(f"A rank {task['rank']}", f"B rank {task['rank']}"))
        out.update({k: doc[k] for k in RANK_KEYS})
        out["tree"] = doc["tree"][:RANK_TREE_ROWS]
    except Exception as exc:  # noqa: BLE001 -- one rank's failure must not stop the others; reported with the rank
        out["error"] = rank_error({"kineto": task["a"][0]}, exc)
    return out


def _failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    return {"rank": task["rank"], "a": task["a"], "b": task["b"], "error": message}


def diff_jobs(job_a: str, job_b: str, *, use_cache: bool = True, step_a: int | None = None,
              step_b: int | None = None, rules: str | None = None, top: int = 15, workers: int | None = None,
              scheduler: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Rank ``r`` of ``job_a`` against rank ``r`` of ``job_b``, for every rank both have.

    Returns ``{"kind": "jobs", "a", "b" (inputs and ranks found), "ranks": [per rank:
    "rank", "a", "b" (files), "error", and the document's ``RANK_KEYS`` and its first
    ``tree`` rows], "only_a", "only_b" (ranks one job lacks), "warnings"}``."""
    report = progress or (lambda msg, frac: None)
    with Runner(workers, scheduler) as run:
        skip_a: list[str] = []
        skip_b: list[str] = []
        la = find_layout([job_a], run, skipped=skip_a)
        lb = find_layout([job_b], run, skipped=skip_b)
        ra, rb = {r.rank for r in la.ranks}, {r.rank for r in lb.ranks}
        both = sorted(ra & rb)
        if not both:
            raise TraceFormatError(job_b, f"has no rank in common with {job_a}")
        tasks = [{"rank": r, "a": rank_files(la, r, job_a), "b": rank_files(lb, r, job_b), "use_cache": use_cache,
                  "step_a": step_a, "step_b": step_b, "rules": rules, "top": top} for r in both]
        outs = run.map(diff_rank, tasks, on_error=_failed,
                       progress=lambda d, n: report(f"compared {d}/{n} ranks", d / n))
    warnings = [f"A: {w}" for w in skip_a + list(la.warnings)] + [f"B: {w}" for w in skip_b + list(lb.warnings)]
    warnings += [f"rank {o['rank']}: {o['error']}" for o in outs if o["error"]]
    return {"kind": "jobs", "a": {"inputs": job_a, "ranks": sorted(ra)}, "b": {"inputs": job_b, "ranks": sorted(rb)},
            "ranks": outs, "only_a": sorted(ra - rb), "only_b": sorted(rb - ra), "warnings": warnings}


def job_rank_files(job: str, ranks: list[int], workers: int | None = None, scheduler: str | None = None
                   ) -> list[list[str]]:
    """The files of each of ``ranks`` in the job ``job``."""
    with Runner(workers, scheduler) as run:
        layout = find_layout([job], run)
    return [rank_files(layout, r, job) for r in ranks]
