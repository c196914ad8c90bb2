"""Follow a folder a profiler writes traces into: each complete trace read once, measured, and
compared with the cycle before it (docs/follow.md).

:meth:`Follower.poll` is one look at the folder (:class:`~tracetui.follow.watch.Watcher`): the
files that became complete are read (through the trace cache, :func:`tracetui.store.traces.load_cached`,
so opening a cycle in the browser afterwards parses nothing), in the order of their series
(:mod:`tracetui.follow.cycle`), and come back as :class:`~tracetui.follow.cycle.Cycle`\\ s; what
went wrong comes back as :class:`Note`\\ s (one line each), never as an exception: a file that
is not a trace, one deleted or rewritten while being read.  ``tracetui follow`` prints them; the
browser's follow screen shows them (:mod:`tracetui.ui.follow`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import LoadCancelled, TraceError, one_line
from ..store import traces as store_traces
from .complete import trace_complete
from .cycle import Cycle, change_of, measure, series_of
from .watch import POLL_S, Ready, Watcher


@dataclass(frozen=True)
class FollowRequest:
    """What to follow: the folder, the poll interval (s), the cache, the kernel category rules."""

    folder: str
    interval: float = POLL_S
    use_cache: bool = True
    rules: str | None = None


@dataclass(frozen=True)
class Note:
    """Something said about a file (``path``; None: the folder) while following."""

    path: str | None
    text: str

    def line(self) -> str:
        return one_line(f"{self.path}: {self.text}" if self.path else self.text)


def _order(item: Ready) -> tuple[int, str]:
    """Files found in one look are read in the order they were written: the time in a handler's
    name, else the modification time."""
    _, ns = series_of(item.name)
    return (ns if ns is not None else item.stat[1], item.name)


class Follower:
    """Reads the traces of ``request.folder`` as they are completed (module docstring).
    ``cancelled()``: checked while a trace loads (a true answer stops the load:
    :class:`~tracetui.errors.LoadCancelled` propagates)."""

    def __init__(self, request: FollowRequest, *, cancelled: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        from .. import formats

        self.request = request
        self.watcher = Watcher(request.folder, suffixes=formats.job_suffixes(), complete=trace_complete,
                               interval=request.interval, clock=clock, wall=wall)
        self.cycles: list[Cycle] = []
        self._series: dict[str, list[Cycle]] = {}
        self._cancelled = cancelled or (lambda: False)
        self._categorizer: Any = None
        self._configs: Any = None

    def _progress(self, message: str, fraction: float) -> None:
        if self._cancelled():
            raise LoadCancelled()

    def _rules(self) -> tuple[Any, Any]:
        if self._configs is None:
            from ..analysis.categories import get_categorizer
            from ..findings import rule_configs

            self._categorizer = get_categorizer(self.request.rules)
            self._configs = rule_configs()
        return self._categorizer, self._configs

    def poll(self) -> list[Cycle | Note]:
        """One look at the folder; the cycles read and the notes, in order."""
        ready, notes = self.watcher.scan()
        out: list[Cycle | Note] = [Note(os.path.join(self.request.folder, n) if n else self.request.folder, t)
                                   for n, t in notes]
        for item in sorted(ready, key=_order):
            out.append(self._read(item))
        return out

    def _read(self, item: Ready) -> Cycle | Note:
        """Load, measure and compare one complete file; a :class:`Note` when it cannot be (its
        file is then not read again until it changes) or changed meanwhile (read again)."""
        try:
            linked = store_traces.load_cached([item.path], use_cache=self.request.use_cache, progress=self._progress)
            if linked.kineto is None:
                raise TraceError(item.path, "an Execution Trace, not a profiler trace: not a cycle")
            numbers = measure(linked, *self._rules())
        except LoadCancelled:
            raise
        except (TraceError, MemoryError, OSError) as exc:
            moved = self.watcher.after_read(item)
            if moved is not None:
                return Note(item.path, moved)
            self.watcher.failed(item)
            why = exc.problem if isinstance(exc, TraceError) else (
                "not enough memory to read it" if isinstance(exc, MemoryError) else str(exc))
            return Note(item.path, f"not read: {why}")
        moved = self.watcher.after_read(item)
        if moved is not None:
            return Note(item.path, moved)
        del linked
        series, ns = series_of(item.name)
        earlier = self._series.setdefault(series, [])
        cycle = Cycle(item.path, item.stat[0], series, len(earlier) + 1, ns if ns is not None else item.stat[1],
                      numbers, first=earlier[0] if earlier else None, previous=earlier[-1] if earlier else None,
                      index=len(self.cycles))
        if cycle.previous is not None:
            cycle.change = self._change(cycle.previous, cycle)
        earlier.append(cycle)
        self.cycles.append(cycle)
        return cycle

    def _change(self, before: Cycle, cycle: Cycle) -> dict[str, Any]:
        """The diff engine's comparison of ``before`` with ``cycle`` (both files read again
        through the cache: only one trace is held at a time)."""
        from ..diff.runs import diff_files

        try:
            doc = diff_files([before.path], [cycle.path], use_cache=self.request.use_cache, rules=self.request.rules,
                             top=1, labels=(before.name, cycle.name))
        except LoadCancelled:
            raise
        except (TraceError, MemoryError, OSError) as exc:
            why = exc.problem if isinstance(exc, TraceError) else type(exc).__name__
            return {"against": before.path, "error": one_line(why)}
        return change_of(doc, before.path)

    # ------------------------------------------------------------------ state
    def waiting(self) -> bool:
        """Is a file still moving (a later look may read it)?"""
        return bool(self.watcher.moving())

    def incomplete(self) -> list[Note]:
        """A note per file that holds still but is not complete."""
        return [Note(os.path.join(self.request.folder, n), f"incomplete ({why}): not read")
                for n, why in self.watcher.incomplete()]
