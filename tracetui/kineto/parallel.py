"""Decode a big trace's events in several processes: the typed decode and the columns of
each contiguous slice of events run in a forked worker, the parent decodes the first slice
itself and takes over the workers' rows in order (interned codes renumbered so the result
is exactly that of a serial decode).

Forking shares the raw events with the workers copy-on-write, so nothing is sent to them.
The numeric columns of the whole trace are allocated once, in an anonymous shared memory
map, and every worker writes its rows there in place; what it sends back through its pipe
(pickle) is small: its interned values, the flow ids, and how many args bytes it wrote
into its region of a second shared map.  Used only where forking is safe and pays: Linux, a
process with no other threads (the parse child of :mod:`tracetui.store.traces`, the CLI), and at
least ``MIN_EVENTS_PER_WORKER`` events per worker.  ``$TRACETUI_DECODE_WORKERS`` sets the
number of processes (1 = serial).  A worker that fails for any reason other than the data
(killed, out of memory) costs only time: its slice is decoded again in the parent.  Data
the fast path refuses raises the same msgspec error as the serial decode, and the caller
falls back to the tolerant path.
"""

from __future__ import annotations

import logging
import mmap
import os
import pickle
import signal
import sys
import threading

import msgspec
import numpy as np

from .. import config
from . import columns as _columns
from .columns import Columns, DecodeProgress, Tally

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


def _bounds(n: int, workers: int, align: int) -> list[tuple[int, int]]:
    """``workers`` contiguous row ranges covering ``0..n``, cut at multiples of ``align``."""
    step = -(-n // workers)
    step = -(-step // align) * align
    return [(s, min(s + step, n)) for s in range(0, n, step)]


def columns_parallel(raws: list[msgspec.Raw], workers: int, cols: Columns,
                     progress: DecodeProgress | None = None) -> Columns:
    """Fill ``cols`` with the columns of ``raws`` using ``workers`` processes; returns ``cols``.

    ``progress`` follows the parent's own slice (the workers' slices are as big and
    decode at the same pace).

    Raises msgspec.DecodeError / UnicodeDecodeError when the fast path refuses the data.
    """
    ranges = _bounds(len(raws), workers, _columns.COL_CHUNK)
    # each worker writes the args bytes of its rows into its own region of one shared map,
    # sized by the raw bytes of its events (args are a part of them: an upper bound)
    raw_len = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    sizes = [int(raw_len[lo:hi].sum()) for lo, hi in ranges[1:]]
    del raw_len
    blob_map = mmap.mmap(-1, max(1, sum(sizes)))
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    workers_started: list[_Worker] = []
    for (lo, hi), start, size in zip(ranges[1:], starts, sizes):
        region = _BlobRegion(blob_map, start, size)
        try:
            workers_started.append(_Worker(*_fork_worker(raws, lo, hi, cols.columns, region), lo, hi))
        except OSError as exc:
            log.debug("tracetui: cannot start a decode worker: %s", exc)
            workers_started.append(_Worker(0, -1, lo, hi))
    try:
        lo, hi = ranges[0]
        cols.add_raw(raws[lo:hi], progress)
        for w in workers_started:
            part = w.receive()
            if part == "refused":
                raise msgspec.DecodeError("a decode worker's slice was refused by the fast path")
            if part is None:  # the worker could not do it: decode its slice here
                part_cols = Columns(cols.columns, None, type(cols.repaired)(), base=w.lo)
                part_cols.add_raw(raws[w.lo:w.hi])
                part = part_cols.export()
            elif isinstance(part["blobs"], tuple):  # ("region", start, used): bytes in blob_map
                _, start, used = part["blobs"]
                part["blobs"] = [memoryview(blob_map)[start:start + used]]
            cols.absorb(part)
    finally:
        for w in workers_started:
            w.stop()
    return cols


class _BlobRegion:
    """Where a worker's args bytes go: appended in order into ``[start, start + size)`` of a
    shared map (takes the place of the ``blobs`` list of its ``Columns``)."""

    def __init__(self, mm: mmap.mmap, start: int, size: int) -> None:
        self.mm, self.start, self.end, self.at = mm, start, start + size, start

    def append(self, data: bytes) -> None:
        n = len(data)
        if self.at + n > self.end:  # pragma: no cover - args are a part of the raw events
            raise ValueError("args bytes exceed the raw events they come from")
        self.mm[self.at:self.at + n] = data
        self.at += n

    def describe(self) -> tuple[str, int, int]:
        return ("region", self.start, self.at - self.start)


class _Worker:
    """A forked decode worker: its pid, the read end of its pipe, and its rows."""

    def __init__(self, pid: int, fd: int, lo: int, hi: int) -> None:
        self.pid, self.fd, self.lo, self.hi = pid, fd, lo, hi

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


def _fork_worker(raws: list[msgspec.Raw], lo: int, hi: int, columns: dict,
                 region: _BlobRegion) -> tuple[int, int]:
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
                cols = Columns(columns, None, Tally(), base=lo, blobs=region)
                cols.add_raw(raws[lo:hi])
                part = cols.export()
                part["blobs"] = region.describe()
                msg: object = ("ok", part)
            except (msgspec.DecodeError, UnicodeDecodeError):
                msg = ("refused",)
            pickle.dump(msg, out, protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    finally:
        os._exit(status)  # skip interpreter teardown: the parent owns everything else
