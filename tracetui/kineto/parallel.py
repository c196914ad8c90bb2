"""Decode a big trace's events in several processes: the typed decode and the columns of
each contiguous slice of events run in a forked worker, the parent decodes the first slice
itself and takes over the workers' rows in order (interned codes renumbered so the result
is exactly that of a serial decode).

Forking shares the events' text with the workers copy-on-write, so nothing is sent to them
but byte offsets (the spans of their events).  The numeric columns of the whole trace are
allocated once, in an anonymous shared memory map, and every worker writes its rows there in
place; what it sends back through its pipe (pickle) is small: its interned values, the flow
ids, and how many args bytes it wrote into its region of a second shared map (the
:class:`~.columns.ArgsMap` the blob is made of, in place).  Used only where forking is safe and pays: Linux, a
process with no other threads (the parse child of :mod:`tracetui.store.traces`, the CLI), and at
least ``MIN_EVENTS_PER_WORKER`` events per worker.  ``$TRACETUI_DECODE_WORKERS`` sets the
number of processes (1 = serial).  A worker that fails for any reason other than the data
(killed, out of memory) costs only time: its slice is decoded again in the parent.  Data
the fast path refuses raises the same msgspec error as the serial decode, and the caller
falls back to the tolerant path.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import threading

import msgspec

from .. import config
from .columns import ArgsMap, ArgsRegion, Columns, DecodeProgress, Tally

log = logging.getLogger(__name__)

#: fewer events than this per process is not worth a fork (a worker costs ~50 ms)
MIN_EVENTS_PER_WORKER = 200_000
#: at most this many processes (each adds ~100-150 MB of its own at the peak for a 2M-event trace)
MAX_WORKERS = 4


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def decode_workers(n_events: int) -> int:
    """How many processes should decode ``n_events`` events here (1 = serial)."""
    env = config.env("TRACETUI_DECODE_WORKERS")
    if env:
        try:
            wanted = max(1, int(env))
        except ValueError:
            wanted = 1
    else:
        wanted = min(available_cpus(), MAX_WORKERS)
    # Linux only: macOS system libraries are not fork-safe (why multiprocessing spawns there)
    if wanted <= 1 or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1
    return max(1, min(wanted, n_events // MIN_EVENTS_PER_WORKER))


def columns_parallel(text: msgspec.Raw, spans: list[tuple[int, int]], chunk: int, n: int, workers: int,
                     cols: Columns, progress: DecodeProgress | None = None) -> Columns:
    """Fill ``cols`` with the columns of the ``n`` events of ``text`` (the events array),
    cut into ``spans`` of ``chunk`` events (:func:`~.decode.chunk_spans`), using
    ``workers`` processes; returns ``cols``.  ``progress`` follows the parent's own spans
    (the workers' are as many and decode at the same pace).

    Raises msgspec.DecodeError / UnicodeDecodeError when the fast path refuses the data.
    """
    per = -(-len(spans) // workers)
    groups = [(k, min(k + per, len(spans))) for k in range(0, len(spans), per)]
    # every process writes the args bytes of its rows into its own region of one shared
    # map, as big as the raw text of its events (args are a part of it: an upper bound)
    args = ArgsMap([spans[hi - 1][1] - spans[lo][0] for lo, hi in groups])
    cols.args_map = args
    cols.blobs = args.regions[0]
    started: list[_Worker] = []
    for (lo, hi), region in zip(groups[1:], args.regions[1:]):
        row = lo * chunk
        try:
            started.append(_Worker(*_fork_worker(text, spans[lo:hi], row, cols.columns, region), lo, hi, region))
        except OSError as exc:
            log.debug("tracetui: cannot start a decode worker: %s", exc)
            started.append(_Worker(0, -1, lo, hi, region))
    try:
        lo, hi = groups[0]
        cols.add_spans(text, spans[lo:hi], progress)
        for w in started:
            part = w.receive()
            if part == "refused":
                raise msgspec.DecodeError("a decode worker's slice was refused by the fast path")
            if part is None:  # the worker could not do it: decode its spans here
                region = ArgsRegion(w.region.mm, w.region.start, w.region.end - w.region.start)
                part_cols = Columns(cols.columns, None, type(cols.repaired)(), base=w.lo * chunk,
                                    blobs=region)
                part_cols.add_spans(text, spans[w.lo:w.hi])
                part = part_cols.export()
                part["blobs"] = region.describe()
            cols.absorb(part)
    finally:
        for w in started:
            w.stop()
    if cols.rows != n:  # pragma: no cover - every span holds the events chunk_spans counted
        raise msgspec.DecodeError(f"{cols.rows} of {n} events decoded")
    return cols


class _Worker:
    """A forked decode worker: its pid, the read end of its pipe, its spans and its args region."""

    def __init__(self, pid: int, fd: int, lo: int, hi: int, region: ArgsRegion) -> None:
        self.pid, self.fd, self.lo, self.hi, self.region = pid, fd, lo, hi, region

    def receive(self) -> dict | str | None:
        """The worker's columns, "refused", or None when it failed (or never started)."""
        if self.fd < 0:
            return None
        fd, self.fd = self.fd, -1
        try:
            with os.fdopen(fd, "rb") as inp:
                msg = pickle.load(inp)
        except Exception as exc:  # died before sending everything
            log.debug("tracetui: decode worker %s failed: %s", self.pid, exc)
            return None
        if msg[0] == "ok":
            return msg[1]
        return "refused" if msg[0] == "refused" else None

    def stop(self) -> None:
        """Close the pipe (a worker still writing gets EPIPE and exits) and reap the process."""
        if self.fd >= 0:  # never received: the parent gave up (an error), the result is not wanted
            os.close(self.fd)
            self.fd = -1
            if self.pid > 0:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
        if self.pid > 0:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0


def _fork_worker(text: msgspec.Raw, spans: list[tuple[int, int]], row: int, columns: dict,
                 region: ArgsRegion) -> tuple[int, int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        return pid, r
    # worker: never returns
    status = 1
    try:
        os.close(r)
        with os.fdopen(w, "wb") as out:
            try:
                cols = Columns(columns, None, Tally(), base=row, blobs=region)
                cols.add_spans(text, spans)
                part = cols.export()
                part["blobs"] = region.describe()
                msg: object = ("ok", part)
            except (msgspec.DecodeError, UnicodeDecodeError):
                msg = ("refused",)
            pickle.dump(msg, out, protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    finally:
        os._exit(status)  # skip interpreter teardown: the parent owns everything else
