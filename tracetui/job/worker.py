"""The per-rank work, as top-level functions a process pool or a Dask worker can run.

Each takes and returns plain, picklable values: a path or a small task dict in, a small
dict out (kind and rank; or the rank's summary and collectives, a few kB to a few tens of
kB).  The parsed trace itself never leaves the worker: it goes to the per-file cache
(:func:`tracetui.store.traces.load_cached`), which the browser later maps for the one
rank it shows.  Neither function raises for bad input: a rank that fails to load comes
back with ``error`` set and the others go on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TraceError
from .discover import identify_file


def identify(path: str) -> dict[str, Any]:
    """Kind, rank, world size of one file (see :func:`tracetui.job.discover.identify_file`)."""
    return identify_file(path)


def guarded(task: dict[str, Any], out: dict[str, Any], work: Callable[[], None]) -> dict[str, Any]:
    """``work()`` (which fills ``out``), with any failure of the rank ``task`` written to
    ``out["error"]`` instead of raised: one rank's bad input or bug must not stop the others."""
    try:
        work()
    except Exception as exc:  # noqa: BLE001 -- one rank's failure must not stop the others; reported with the rank
        out["error"] = rank_error(task, exc)
    return out


def summarise_rank(task: dict[str, Any]) -> dict[str, Any]:
    """Load one rank (Kineto + optional ET, through the cache) and summarise it for the job.

    ``task``: ``{"rank", "kineto", "et", "use_cache", "rules"}``.  Returns ``{"rank",
    "kineto", "et", "summary"`` (the job's keys of the rank's single-file summary:
    :func:`~tracetui.analysis.summary.rank_summary`, stored in the cache beside the trace and
    read back while the files are unchanged, as ``tracetui summary`` does:
    :mod:`tracetui.store.summaries`), ``"collectives"``
    (:func:`~tracetui.job.comms.rank_collectives`), ``"distributed"`` (its distributedInfo),
    ``"start_us"`` (absolute µs of its first event, None when it has none), ``"pid"`` (worker
    process), ``"error"}``."""
    out: dict[str, Any] = {"rank": task["rank"], "kineto": task["kineto"], "et": task.get("et"), "summary": None,
                           "collectives": [], "distributed": {}, "start_us": None, "pid": os.getpid(),
                           "error": None}

    def work() -> None:
        from ..analysis.summary import rank_summary
        from ..io import jsonout
        from ..store.summaries import rank_summary_key, read_summary, write_summary
        from ..store.traces import load_cached
        from .comms import rank_collectives

        paths = [task["kineto"]] + ([task["et"]] if task.get("et") else [])
        use_cache, rules = task.get("use_cache", True), task.get("rules")
        linked = load_cached(paths, use_cache=use_cache)
        key = rank_summary_key(paths, rules) if use_cache else None
        summary = read_summary(key) if key is not None else None
        if summary is None:
            # as `tracetui summary --json` gives these keys (JSON types: tuples become lists ...)
            summary = jsonout.loads(jsonout.dumps(rank_summary(linked, categorizer(rules))))
            if key is not None:
                write_summary(key, summary)
        out["summary"] = summary
        out["collectives"] = rank_collectives(linked.kineto, linked.et, linked.link)
        out["distributed"] = dict(linked.kineto.distributed_info)
        out["start_us"] = first_event_us(linked.kineto)

    return guarded(task, out, work)


#: the categorizers of this worker process by rules file (path, content): the ranks of a job
#: share one, and with it the categories of their kernel names already matched
_CATEGORIZERS: dict[Any, Any] = {}


def categorizer(rules: str | None) -> Any:
    """:func:`~tracetui.analysis.categories.get_categorizer` of ``rules``, one per rules file
    and content in this process (a rule file changed between two jobs is read again)."""
    from ..analysis.categories import get_categorizer, user_rules_location

    path = Path(rules) if rules is not None else user_rules_location()
    try:
        key = None if path is None else (os.path.abspath(path), path.read_bytes())
    except OSError:
        return get_categorizer(rules)  # says what is wrong with the file
    found = _CATEGORIZERS.get(key)
    if found is None:
        found = _CATEGORIZERS[key] = get_categorizer(rules)
    return found


def first_event_us(kt: Any) -> float | None:
    """Absolute µs of the trace's first event (None when it has none): what tells a rank
    recorded at another time (:data:`tracetui.job.job.FOREIGN_GAP_US`)."""
    return float(kt.origin_us + float(np.nanmin(kt.ts))) if kt.n_events else None


def rank_error(task: dict[str, Any], exc: BaseException) -> str:
    """The one line a rank whose work failed is reported with (bad input, memory, a bug)."""
    if isinstance(exc, TraceError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return f"{task['kineto']}: not enough memory to load this rank"
    return f"{task['kineto']}: failed: {type(exc).__name__}: {exc}"
