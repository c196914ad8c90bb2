"""Which files of a folder may be read now: a cheap poll of the folder's stat tuples, and the
completeness rule (docs/follow.md, "When a file is read").

Every ``interval`` seconds (:data:`POLL_S` by default) the folder is listed once
(``os.scandir``: one ``stat`` per trace file, no read) and each file's ``(size, mtime_ns,
inode)`` compared with the last look.  A file is read when

1. its stat tuple held still over two looks (or, seen for the first time, it was last written
   more than ``settle_s`` ago: a folder of finished traces is read at once), and
2. its content is complete (:mod:`tracetui.follow.complete`: a gzip trailer that checks, a JSON
   document that closes and parses), checked once per stat tuple, never again while it holds.

A file whose stat changes goes back to step 1 (a trace read before and rewritten is read
again).  A file that holds still but stays incomplete for ``stuck_s`` seconds is said once; a
file deleted before it was complete is said once.  :meth:`Watcher.after_read` stats the file
again after it was read: a file that changed (or went) while being read is said and read again
once it settles.  Nothing but the listing runs while nothing changes (measured:
bench/README.md, "Following a run").

Polling, not change notifications: it works the same on local disks and on network file systems
(NFS, Lustre, GPFS do not deliver inotify events for writes made on other hosts), and its cost
while idle is a listing per interval.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import units
from ..errors import TraceError

#: seconds between two looks at the folder (``tracetui follow --interval``)
POLL_S = 1.0
#: a file that holds still this many seconds but stays incomplete is said once
STUCK_S = 60.0

#: (size, mtime_ns, inode): what a look compares
Stat = tuple[int, int, int]

MOVING, INCOMPLETE, READING, DONE, FAILED = "moving", "incomplete", "reading", "done", "failed"


@dataclass(frozen=True)
class Ready:
    """A file to read now, with the stat tuple its completeness was checked at."""

    path: str
    name: str
    stat: Stat


@dataclass
class _File:
    stat: Stat
    since: float  #: clock time this stat tuple was first seen
    state: str
    why: str = ""
    said: bool = False


def stat_of(st: os.stat_result) -> Stat:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class Watcher:
    """The files of ``folder`` whose names end with one of ``suffixes`` (hidden files left
    out: a writer's temporary file is read once renamed), through :meth:`scan`."""

    def __init__(self, folder: str, *, suffixes: tuple[str, ...], complete: Callable[[str], str | None],
                 interval: float = POLL_S, stuck_s: float = STUCK_S, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.folder = folder
        self.suffixes = suffixes
        self.complete = complete
        #: a file first seen this long after its last write counts as settled
        self.settle_s = max(2.0 * interval, 1.0)
        self.stuck_s = stuck_s
        self.clock, self.wall = clock, wall
        self.files: dict[str, _File] = {}
        #: clock time of the last change seen (a file new, grown, rewritten, gone or read)
        self.last_change = clock()
        self._listing_error: str | None = None

    # ------------------------------------------------------------------ looking
    def _listing(self) -> tuple[dict[str, Stat], list[str]]:
        found: dict[str, Stat] = {}
        try:
            with os.scandir(self.folder) as it:
                for entry in it:
                    name = entry.name
                    if name.startswith(".") or not name.endswith(self.suffixes):
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue  # gone between the listing and the stat
                    if stat_mod.S_ISREG(st.st_mode):
                        found[name] = stat_of(st)
        except OSError as exc:
            why = f"cannot be listed ({exc.strerror or exc})"
            notes = [why] if why != self._listing_error else []
            self._listing_error = why
            return {}, notes
        self._listing_error = None
        return found, []

    def scan(self) -> tuple[list[Ready], list[tuple[str, str]]]:
        """One look: the files to read now, and notes ``(name, text)`` (a file deleted before it
        was complete, one stuck incomplete, the folder unreadable: name "")."""
        now = self.clock()
        found, errors = self._listing()
        notes = [("", e) for e in errors]
        if errors:
            return [], notes
        for name in [n for n in self.files if n not in found]:
            f = self.files.pop(name)
            self.last_change = now
            if f.state in (MOVING, INCOMPLETE):
                notes.append((name, "deleted before it was complete: not read"))
        ready: list[Ready] = []
        wall = self.wall()
        for name, st in found.items():
            f = self.files.get(name)
            if f is None or f.stat != st:
                self.last_change = now
                settled = f is None and wall - st[1] / 1e9 > self.settle_s
                f = self.files[name] = _File(st, now, MOVING)
                if not settled:
                    continue
            if f.state == MOVING:
                self._check(name, f, ready, notes)
            elif f.state == INCOMPLETE and not f.said and now - f.since >= self.stuck_s:
                f.said = True
                notes.append((name, f"unchanged for {units.s_text(now - f.since, '.0f')} but incomplete "
                                    f"({f.why}): read once it is complete"))
        return ready, notes

    def _check(self, name: str, f: _File, ready: list[Ready], notes: list[tuple[str, str]]) -> None:
        path = os.path.join(self.folder, name)
        try:
            why = self.complete(path)
        except TraceError as exc:  # gone or replaced since the listing: the next look says
            f.state, f.why = INCOMPLETE, exc.problem
            return
        except OSError as exc:
            f.state, f.why = INCOMPLETE, str(exc.strerror or exc)
            return
        if why is None:
            f.state = READING
            ready.append(Ready(path, name, f.stat))
        else:
            f.state, f.why = INCOMPLETE, why

    # ------------------------------------------------------------------ after a read
    def after_read(self, item: Ready) -> str | None:
        """Stat ``item`` again once read: None when it is as it was checked (it is done),
        else what happened (it is read again once complete)."""
        self.last_change = self.clock()
        try:
            st = stat_of(os.stat(item.path))
        except OSError:
            self.files.pop(item.name, None)
            return "deleted while being read: its numbers are not kept"
        f = self.files.get(item.name)
        if st != item.stat:
            self.files[item.name] = _File(st, self.clock(), MOVING)
            return "changed while being read: read again once it is complete"
        if f is not None:
            f.state = DONE
        return None

    def failed(self, item: Ready) -> None:
        """``item`` could not be read as it is: not tried again until it changes."""
        f = self.files.get(item.name)
        if f is not None and f.stat == item.stat:
            f.state = FAILED

    # ------------------------------------------------------------------ state
    def moving(self) -> list[str]:
        """Files whose stat tuple has not held still yet (a look from now may read them)."""
        return [n for n, f in self.files.items() if f.state == MOVING]

    def incomplete(self) -> list[tuple[str, str]]:
        """Files that hold still but are not complete: ``(name, why)``."""
        return [(n, f.why) for n, f in self.files.items() if f.state == INCOMPLETE]

    def idle_for(self) -> float:
        """Seconds since the last change seen."""
        return self.clock() - self.last_change
