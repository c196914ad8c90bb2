"""The traces ``tracetui mcp`` keeps loaded for its session: opened once, reused by every tool.

A trace (with its ET or driver-call trace) is loaded through the on-disk cache
(:func:`tracetui.store.traces.load_cached`, so a reopen after an eviction costs a cache read)
and kept in memory, keyed by each file's identity (real path, size, mtime): an edited file is
loaded again.  What is kept is bounded by memory: least recently used traces go first once the
estimated sizes pass the budget (``--max-mb``, default :data:`MEMORY_SHARE` of the memory
available at the start).  Beside each trace the session keeps its query session (DuckDB tables
built once) and the last documents computed on it (paging through a long answer computes it once).
"""

from __future__ import annotations

import mmap
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TraceFileError
from ..session import LinkedTrace

#: share of the memory available at the start that loaded traces may take (unless ``--max-mb``)
MEMORY_SHARE = 0.25
#: budget where the available memory cannot be read
FALLBACK_BYTES = 2 << 30
#: what a trace holds beside its arrays once analysed (frames, tables): its arrays times this
OVERHEAD = 2.0
#: documents kept per trace (the answers paged through)
DOCUMENTS = 8


@dataclass
class KeptTrace:
    """One loaded trace of the session: the linked trace, its estimated bytes, its query
    session (made on the first query) and its last documents."""

    key: tuple
    linked: LinkedTrace
    nbytes: int
    query: Any = None
    documents: OrderedDict = field(default_factory=OrderedDict)

    def document(self, key: tuple, make) -> Any:
        """The document ``make()`` computes, kept for the next call with the same ``key``."""
        if key in self.documents:
            self.documents.move_to_end(key)
            return self.documents[key]
        doc = self.documents[key] = make()
        while len(self.documents) > DOCUMENTS:
            self.documents.popitem(last=False)
        return doc

    def close(self) -> None:
        if self.query is not None:
            self.query.close()
            self.query = None


def default_budget(max_mb: float | None = None) -> int:
    """Bytes the loaded traces may take: ``max_mb`` megabytes (SI, as :mod:`tracetui.units`)
    when given, else :data:`MEMORY_SHARE` of the memory available now."""
    if max_mb is not None:
        return int(max_mb * 1e6)
    from ..io.limits import available_memory_bytes

    avail = available_memory_bytes()
    return int(avail * MEMORY_SHARE) if avail else FALLBACK_BYTES


def identity(paths: list[str]) -> tuple:
    """The key of a load: each file's real path, size and mtime."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError as exc:  # gone since the roots allowed it
            raise TraceFileError(p, f"cannot be read ({exc.strerror or exc})") from None
        out.append((p, st.st_size, st.st_mtime_ns))
    return tuple(out)


def estimate_bytes(linked: LinkedTrace) -> int:
    """Estimated memory of a loaded trace: the arrays, blobs and strings of its models (two
    levels of attributes deep), times :data:`OVERHEAD`."""
    seen: set[int] = set()
    total = sum(_size(part, 2, seen) for part in (linked.kineto, linked.et, linked.link))
    return int(total * OVERHEAD)


def _size(obj: Any, depth: int, seen: set[int]) -> int:
    if obj is None or id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (str, bytes, bytearray)):
        return len(obj)
    if isinstance(obj, mmap.mmap):
        return len(obj)
    if depth < 0:
        return sys.getsizeof(obj)
    if isinstance(obj, dict):
        return sum(_size(v, depth - 1, seen) for v in obj.values()) + 64 * len(obj)
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, str) for x in obj[:16]):
            return sum(len(x) + 50 for x in obj)
        return sum(_size(v, depth - 1, seen) for v in obj) + 8 * len(obj)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {s: getattr(obj, s, None) for s in obj.__slots__}
    return sum(_size(v, depth - 1, seen) for v in (fields or {}).values())


class LoadedTraces:
    """The session's loaded traces, least recently used first, within ``budget`` bytes.
    ``loads`` and ``reuses`` count what each request got (the session resource shows them)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items: OrderedDict[tuple, KeptTrace] = OrderedDict()
        self.loads = 0
        self.reuses = 0

    def get(self, paths: list[str]) -> KeptTrace:
        """The loaded trace of ``paths`` (real paths the roots allowed): kept, else loaded."""
        key = identity(paths)
        hit = self.items.get(key)
        if hit is not None:
            self.items.move_to_end(key)
            self.reuses += 1
            return hit
        from ..store.traces import load_cached

        linked = load_cached(paths)
        self.loads += 1
        item = KeptTrace(key, linked, estimate_bytes(linked))
        self._drop_older_versions(paths)
        self.items[key] = item
        self._evict(keep=key)
        return item

    def _drop_older_versions(self, paths: list[str]) -> None:
        """A file edited since it was loaded: its old load goes."""
        names = tuple(paths)
        for key in [k for k in self.items if tuple(p for p, _, _ in k) == names]:
            self.items.pop(key).close()

    def _evict(self, keep: tuple) -> None:
        """Least recently used first, until the kept traces fit (the newest stays: the
        request being answered needs it; it goes with the next load if alone too big)."""
        while self.used() > self.budget and len(self.items) > 1:
            oldest = next(iter(self.items))
            if oldest == keep:
                break
            self.items.pop(oldest).close()

    def used(self) -> int:
        return sum(i.nbytes for i in self.items.values())

    def state(self) -> dict[str, Any]:
        """What the session holds (the ``tracetui://session`` resource)."""
        return {"loaded": [{"files": [p for p, _, _ in k], "estimated_bytes": i.nbytes} for k, i in self.items.items()],
                "budget_bytes": self.budget, "used_bytes": self.used(), "loads": self.loads, "reuses": self.reuses}

    def close(self) -> None:
        for item in self.items.values():
            item.close()
        self.items.clear()
