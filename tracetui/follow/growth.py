"""When to read a growing file again: a driver-call trace (JSON Lines) a tracer appends to while
it runs, shown live in the browser (``tracetui FILE.jsonl --follow``; docs/follow.md).

The rule is the folder's (:mod:`tracetui.follow.watch`) for one file: its stat tuple changed
since it was last read, then held still over two looks, and it ends with a whole line
(:func:`tracetui.follow.complete.lines_complete`); then it is read again from the start by the
loader without the cache (a file that changes every few seconds would only fill the cache).
Kept simple: a tracer's file grows by a few lines a second, and the driver-call reader reads a
million lines a second.  A file that shrank or was replaced is read again the same way; one that
is gone is said once.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import TraceError
from .complete import lines_complete
from .watch import Stat, stat_of


class Growth:
    """``path``'s growth since it was last read (:meth:`read_at` says when that was)."""

    def __init__(self, path: str, *, complete: Callable[[str], str | None] = lines_complete) -> None:
        self.path = path
        self.complete = complete
        self.read_stat: Stat | None = None  #: the stat tuple of the last read
        self._seen: Stat | None = None  #: the stat tuple of the last look
        self._gone = False

    def read_at(self, st: Stat | None) -> None:
        """The file was read at stat tuple ``st`` (None: not known; taken now)."""
        if st is None:
            try:
                st = stat_of(os.stat(self.path))
            except OSError:
                st = None
        self.read_stat = self._seen = st

    def poll(self) -> tuple[Stat | None, str | None]:
        """One look: (the stat tuple to read it at, or None for not now; a note, or None).
        A file is to be read again when it changed since its last read, held still since the
        look before, and ends with a whole line."""
        try:
            st = stat_of(os.stat(self.path))
        except OSError:
            if self._gone:
                return None, None
            self._gone = True
            return None, "is gone: the trace shown is its last read"
        self._gone = False
        seen, self._seen = self._seen, st
        if st == self.read_stat or st != seen:
            return None, None
        try:
            if self.complete(self.path) is not None:
                return None, None
        except (TraceError, OSError):  # gone or replaced since the stat: the next look sees it
            return None, None
        return st, None

    def grew(self, st: Stat) -> int:
        """Bytes more than at the last read (negative: the file shrank, was replaced)."""
        return st[0] - (self.read_stat[0] if self.read_stat is not None else 0)
