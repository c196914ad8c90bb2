"""DriverTrace: a driver-call trace in the same columnar model as a Kineto trace.

A :class:`DriverTrace` *is* a :class:`~tracetui.kineto.trace.KinetoTrace` (so the tree,
detail, timeline, search, export and summary work on it unchanged) whose events
``first .. first + n_driver - 1`` come from a driver-call trace, with these extra columns
(indexed by ``event - first``):

* ``what``: :class:`~tracetui.driver.schema.What` (call, entry, ioctl, record kind, phase);
* ``flags``: :class:`~tracetui.driver.pairing.Flag` (no end line, no begin line, inferred name);
* ``line_no`` / ``end_line_no``: 1-based line numbers of the begin (or only) line and of the
  end line (-1: none);
* ``retval``: the call's return value (``NO_VALUE``: none), ``size`` bytes, ``total_allocated``
  bytes, ``direction`` (0 none, 1 H2D, 2 D2H, 3 D2D), ``grid``/``block`` (n x 3, -1 where
  unknown), ``ioctl_cmd`` (-1: none);
* ``layout``: index into :data:`~tracetui.driver.schema.LAYOUTS`.

Events of a standalone driver trace start at 0.  In a Kineto trace opened with ``--driver``
(``session.open_traces``), the Kineto events come first and ``link`` holds the
:class:`~tracetui.link.driver_kineto.DriverLink` between the two.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kineto.trace import KinetoTrace
from .schema import DIRECTION_CODES, LAYOUTS, What
from .sniff import FORMAT_NAME

#: ``retval`` of an event without a return value
NO_VALUE = np.iinfo(np.int64).min
#: the driver events that are calls (a sidecar's entries are calls without an end)
CALL_WHATS = (What.CALL, What.ENTRY)


@dataclass
class LineStats:
    """Counts of the file's lines: ``total`` non-blank lines = ``json`` object lines + skipped."""

    total: int = 0
    json: int = 0
    skipped: Counter = field(default_factory=Counter)  #: reason -> lines
    first_skipped: dict = field(default_factory=dict)  #: reason -> first line number
    bad_fields: int = 0  #: object lines with a field of an unexpected type (kept)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def skip(self, reason: str, line_no: int, count: int = 1) -> None:
        self.skipped[reason] += count
        self.first_skipped.setdefault(reason, line_no)


@dataclass
class DriverTrace(KinetoTrace):
    source_format: str = FORMAT_NAME
    first: int = 0
    what: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    line_no: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    end_line_no: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    retval: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    size: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    total_allocated: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    direction: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    grid: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    block: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    ioctl_cmd: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    layout: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    #: the file's lines: total, JSON objects, skipped by reason
    lines: LineStats = field(default_factory=LineStats)
    #: layout name -> events read in that layout
    layouts: dict[str, int] = field(default_factory=dict)
    #: the driver file (``path`` is the Kineto file in a linked trace)
    driver_path: str = ""
    #: the link to the Kineto trace's runtime/driver events (linked traces only)
    link: Any = None
    #: µs added to the driver file's own clock to put it on this trace's clock (0 standalone)
    clock_shift_us: float = 0.0

    @property
    def n_driver(self) -> int:
        return int(self.what.size)

    def is_driver_event(self, node: int) -> bool:
        return self.first <= node < self.first + self.n_driver

    def what_of(self, event: int) -> What | None:
        """What a driver event is (None for a Kineto event or a lane)."""
        if not self.is_driver_event(event):
            return None
        return What(int(self.what[event - self.first]))

    def driver_events(self) -> np.ndarray:
        """Event ids of every driver event."""
        return np.arange(self.first, self.first + self.n_driver, dtype=np.int64)

    def direction_name(self, event: int) -> str | None:
        return DIRECTION_CODES.get(int(self.direction[event - self.first]))

    def layout_name(self, event: int) -> str:
        return LAYOUTS[int(self.layout[event - self.first])]

    def value(self, column: np.ndarray, event: int) -> int | None:
        """``column[event]`` of a driver column, None where the file gave no value."""
        v = int(column[event - self.first])
        return None if v == (NO_VALUE if column is self.retval else -1) else v


@dataclass(frozen=True)
class EventCounts:
    """The events of a loaded trace, as every front end states them (status line, ``summary``,
    ``info``): one definition.

    ``kineto``: the Kineto trace's events (flow and metadata entries of its file are not
    events; a driver-call trace alone has 0).  ``calls`` / ``ioctls`` / ``records``: the
    driver-call trace's events, each read from a line of its file (a call from its begin and
    end lines).  ``phases``: the pipeline phase spans tracetui derives from those calls; they
    are in the tree but not in the file, so :attr:`driver` does not count them."""

    kineto: int
    calls: int = 0
    ioctls: int = 0
    records: int = 0
    phases: int = 0

    @property
    def driver(self) -> int:
        """Driver events read from the file: calls + ioctls + records (phases left out)."""
        return self.calls + self.ioctls + self.records


def event_counts(trace: KinetoTrace) -> EventCounts:
    """:class:`EventCounts` of a Kineto trace, a driver-call trace alone, or the two merged."""
    if not isinstance(trace, DriverTrace):
        return EventCounts(kineto=int(trace.n_events))
    by_what = np.bincount(trace.what, minlength=len(What))
    calls = int(sum(by_what[w] for w in CALL_WHATS))
    ioctls, phases = int(by_what[What.IOCTL]), int(by_what[What.PHASE])
    return EventCounts(kineto=int(trace.first), calls=calls, ioctls=ioctls,
                       records=trace.n_driver - calls - ioctls - phases, phases=phases)

