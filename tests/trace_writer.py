"""A profiler stand-in for the follow tests: writes copies of shared traces into a folder the way
``torch.profiler.tensorboard_trace_handler`` names them (``<worker>.<time_ns>.pt.trace.json[.gz]``),
some at once, some slowly in pieces, one made slower on purpose, one deleted half written.

:func:`slowed` stretches a trace in time (every ``ts`` from the first, and every ``dur``, times a
factor): the same events, nesting and flows, each step ``factor`` times as long.  The writer
records what each file holds once complete (:attr:`TraceWriter.final`), so a test can check that
every read saw that and never a part of it.
"""

from __future__ import annotations

import gzip
import os
import threading
import time
from dataclasses import dataclass

import orjson

WORKER = "gpu-box_4242"
#: the handler's time in the first file's name; each next file one second later
T0_NS = 1_700_000_000_000_000_000


def handler_name(k: int, gz: bool = True, worker: str = WORKER) -> str:
    return f"{worker}.{T0_NS + k * 1_000_000_000}.pt.trace.json" + (".gz" if gz else "")


def slowed(data: bytes, factor: float) -> bytes:
    """The JSON trace ``data`` with every ``ts`` (from the first one) and every ``dur`` times
    ``factor``."""
    doc = orjson.loads(data)
    events = doc["traceEvents"]
    starts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float)) and e["ts"] > 0]
    t0 = min(starts)
    for e in events:
        if isinstance(e.get("ts"), (int, float)) and e["ts"] > 0:
            e["ts"] = t0 + (e["ts"] - t0) * factor
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = e["dur"] * factor
    return orjson.dumps(doc)


def cuts_after_braces(data: bytes, pieces: int) -> list[int]:
    """``pieces - 1`` cut positions spread over ``data``, each just after a ``}``: a piece that
    ends there looks closed to a rule that reads only the last byte."""
    out = []
    for k in range(1, pieces):
        pos = data.index(b"}", len(data) * k // pieces) + 1
        if not out or pos > out[-1]:
            out.append(pos)
    return out


@dataclass
class Drop:
    """One file the writer drops: its name, its bytes once complete, how it is written
    (``cuts``: positions of the pieces, ``pause``: seconds after each piece, ``delete``: stop
    half way and remove it), and the pause after it."""

    name: str
    data: bytes
    cuts: tuple[int, ...] = ()
    pause: float = 0.0
    delete: bool = False
    after: float = 0.3


class TraceWriter(threading.Thread):
    """Writes ``drops`` into ``folder`` one after the other (module docstring)."""

    def __init__(self, folder: str, drops: list[Drop]) -> None:
        super().__init__(name="trace-writer", daemon=True)
        self.folder = folder
        self.drops = drops
        #: name -> bytes of every file left complete in the folder
        self.final: dict[str, bytes] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for d in self.drops:
                self._write(d)
                time.sleep(d.after)
        except BaseException as exc:  # noqa: BLE001 -- the test reads it
            self.error = exc

    def _write(self, d: Drop) -> None:
        path = os.path.join(self.folder, d.name)
        bounds = [0, *d.cuts, len(d.data)]
        with open(path, "wb") as f:
            for k in range(len(bounds) - 1):
                f.write(d.data[bounds[k]:bounds[k + 1]])
                f.flush()
                if d.delete and k == (len(bounds) - 1) // 2:
                    time.sleep(d.pause)
                    os.remove(path)
                    return
                if k < len(bounds) - 2:
                    time.sleep(d.pause)
        self.final[d.name] = d.data


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6)
