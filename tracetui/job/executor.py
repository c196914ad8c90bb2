"""Run one function over many items: in this process, in a local process pool, or on a
Dask distributed cluster (``--scheduler ADDRESS``).

:class:`Runner` is opened once per job and used for each phase (identify the files,
then summarise the ranks), so the pool's processes or the cluster connection start once.

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
from typing import Any, Self, TypeVar

T = TypeVar("T")
R = TypeVar("R")

Progress = Callable[[int, int], None]

#: imported once by the fork server, so each pool worker starts with them loaded
PRELOAD = ["tracetui.job.worker", "tracetui.store.traces", "tracetui.analysis.summary", "tracetui.job.comms"]


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
    _forkserver_context()
    forkserver.ensure_running()


def _forkserver_context() -> Any:
    """The forkserver context, with :data:`PRELOAD` set (effective if the server is not yet running)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


class Runner:
    """``with Runner(workers, scheduler) as run: run.map(fn, items, on_error=...)``.

    The pool (or the Dask client) is started on the first ``map`` that needs it and
    closed when the ``with`` block ends."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None) -> None:
        self.workers = workers or default_workers()
        self.scheduler = scheduler
        self._pool: ProcessPoolExecutor | None = None
        self._client: Any = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, on_error: Callable[[T, str], R],
            progress: Progress | None = None) -> list[R]:
        """``[fn(x) for x in items]`` in item order, spread over processes or the cluster."""
        if not items:
            return []
        if self.scheduler:
            return self._map_dask(fn, items, on_error, progress)
        if min(self.workers, len(items)) <= 1:
            out = []
            for k, x in enumerate(items):
                out.append(fn(x))
                if progress:
                    progress(k + 1, len(items))
            return out
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=_forkserver_context())
        results: list[Any] = [None] * len(items)
        futures = {self._pool.submit(fn, x): k for k, x in enumerate(items)}
        for done, fut in enumerate(as_completed(futures), 1):
            k = futures[fut]
            try:
                results[k] = fut.result()
            except Exception as exc:  # noqa: BLE001 -- the worker process died (BrokenProcessPool) or could not pickle
                results[k] = on_error(items[k], f"worker process failed: {type(exc).__name__}: {exc}")
            if progress:
                progress(done, len(items))
        return results

    def _map_dask(self, fn: Callable[[T], R], items: Sequence[T], on_error: Callable[[T, str], R],
                  progress: Progress | None) -> list[R]:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError as exc:
            from ..errors import TraceError

            raise TraceError(None, "--scheduler needs Dask: pip install 'tracetui[cluster]'") from exc
        if self._client is None:
            try:
                self._client = Client(self.scheduler, timeout=30)
            except OSError as exc:
                from ..errors import TraceError

                raise TraceError(None, f"cannot reach the Dask scheduler at {self.scheduler}: {exc}") from exc
        results: list[Any] = [None] * len(items)
        futures = self._client.map(fn, list(items), pure=False)
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
