"""Run one function over many items: in this process, in a local process pool, or on a
Dask distributed cluster (``--scheduler ADDRESS``).

Local: one process per core by default (``workers``), started with ``forkserver`` so a
pool opened from a threaded program (the browser) never forks its threads; one item, or
``workers=1``, runs here without a pool.  A worker process that dies (killed for memory)
fails only the items it had: they come back as ``on_error(item, message)``.

Dask: ``client.map`` over the items on the cluster at ``scheduler`` (an address such as
``tcp://host:8786``); the workers must import the same tracetui and see the files at the
same paths (a shared file system).  Only the items (paths, small task dicts) go out and
the small results come back; the cross-rank join runs here, on the client.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

Progress = Callable[[int, int], None]


def default_workers() -> int:
    """One per core (``os.process_cpu_count`` where it exists, else ``os.cpu_count``)."""
    count = getattr(os, "process_cpu_count", os.cpu_count)()
    return max(count or 1, 1)


def start_pool_helpers() -> None:
    """Start multiprocessing's resource tracker and fork server now.

    Call before a program replaces ``sys.stderr`` with an object without a real file
    descriptor (Textual does, while the browser runs): starting them later passes
    ``sys.stderr.fileno()`` (-1 then) to the child and fails ("bad value(s) in fds_to_keep")."""
    from multiprocessing import forkserver, resource_tracker

    resource_tracker.ensure_running()
    forkserver.ensure_running()


def run_all(fn: Callable[[T], R], items: Sequence[T], *, on_error: Callable[[T, str], R],
            workers: int | None = None, scheduler: str | None = None,
            progress: Progress | None = None) -> list[R]:
    """``[fn(x) for x in items]`` in item order, spread over processes or a Dask cluster."""
    if not items:
        return []
    if scheduler:
        return _run_dask(fn, items, scheduler, on_error, progress)
    n = min(workers or default_workers(), len(items))
    if n <= 1:
        out = []
        for k, x in enumerate(items):
            out.append(fn(x))
            if progress:
                progress(k + 1, len(items))
        return out
    results: list[Any] = [None] * len(items)
    ctx = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        futures = {pool.submit(fn, x): k for k, x in enumerate(items)}
        for done, fut in enumerate(as_completed(futures), 1):
            k = futures[fut]
            try:
                results[k] = fut.result()
            except Exception as exc:  # noqa: BLE001 -- the worker process died (BrokenProcessPool) or could not pickle
                results[k] = on_error(items[k], f"worker process failed: {type(exc).__name__}: {exc}")
            if progress:
                progress(done, len(items))
    return results


def _run_dask(fn: Callable[[T], R], items: Sequence[T], scheduler: str, on_error: Callable[[T, str], R],
              progress: Progress | None) -> list[R]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        from ..errors import TraceError

        raise TraceError(None, "--scheduler needs Dask: pip install 'tracetui[cluster]'") from exc
    results: list[Any] = [None] * len(items)
    with Client(scheduler) as client:
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        for done, fut in enumerate(dask_completed(futures), 1):
            k = index[fut.key]
            try:
                results[k] = fut.result()
            except Exception as exc:  # noqa: BLE001 -- the task failed on the worker (lost worker, unpicklable ...)
                results[k] = on_error(items[k], f"Dask task failed: {type(exc).__name__}: {exc}")
            if progress:
                progress(done, len(items))
    return results
