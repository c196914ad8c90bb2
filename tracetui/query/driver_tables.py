"""The SQL tables of a driver-call trace (eBPF / LD_PRELOAD JSON Lines, docs/driver.md):
``calls``, ``records``, ``ioctls`` and ``phases``, from the columns of
:class:`~tracetui.driver.trace.DriverTrace` (one row per driver event of that kind).

Times are µs relative to the trace origin (on the Kineto trace's clock when linked), sizes
bytes; ``event`` is the model event id (the ``events`` table has every event).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.driver import api_of
from ..driver import DriverTrace
from ..driver.pairing import Flag
from ..driver.pipeline import CallClass, call_class
from ..driver.schema import DIRECTION_CODES, LAYOUTS, What
from ..driver.trace import NO_VALUE
from .columns import coded, frame, ids, ids_where, lane_text, parent_ids

TABLES = ("calls", "records", "ioctls", "phases")
_RECORDS = (What.LAUNCH, What.ALLOC, What.TRANSFER, What.KERNEL_MEMORY, What.SCHEDULER, What.SYSCALL, What.OTHER)
_WHAT_NAMES = [w.name.lower() for w in sorted(What, key=int)]
_CLASS_NAMES = [c.name.lower() for c in sorted(CallClass, key=int)]
_DIRECTIONS = ["none"] + [DIRECTION_CODES[k] for k in sorted(DIRECTION_CODES)]


def _base(trace: DriverTrace, local: np.ndarray) -> dict[str, object]:
    """Columns every driver table has, for driver events ``first + local``."""
    ev = trace.first + local
    lane = trace.lane_of[ev]
    return {
        "event": ev.astype(np.int64),
        "name": coded(trace.name_id[ev], trace.names),
        "pid": lane_text(trace.lanes, lane, "pid"),
        "tid": lane_text(trace.lanes, lane, "tid"),
        "ts_us": trace.ts[ev],
        "dur_us": trace.dur[ev],
        "end_us": trace.ts[ev] + trace.dur[ev],
        "parent_event": parent_ids(trace.parent[ev], trace.n_events),
        "line": trace.line_no[local],
    }


class DriverTables:
    """Builds the driver-call tables of a :class:`DriverTrace` on demand."""

    TABLES = TABLES

    def __init__(self, trace: DriverTrace) -> None:
        self.trace = trace

    def build(self, name: str) -> pd.DataFrame:
        return getattr(self, f"_{name}")()

    def _sel(self, whats: tuple[What, ...]) -> np.ndarray:
        return np.flatnonzero(np.isin(self.trace.what, [int(w) for w in whats]))

    def _calls(self) -> pd.DataFrame:
        t = self.trace
        loc = self._sel((What.CALL, What.ENTRY))
        ev = t.first + loc
        names = t.names
        cls_of = np.array([int(call_class(n)) for n in names] or [0], dtype=np.int64)
        api_texts = ["runtime", "driver", "other"]
        api_of_name = np.array([api_texts.index(api_of(n)) for n in names] or [0], dtype=np.int64)
        ret = t.retval[loc]
        flags = t.flags[loc].astype(np.int64)
        end_line = t.end_line_no[loc]
        return frame({
            **_base(t, loc),
            "api": coded(api_of_name[t.name_id[ev]], api_texts),
            "call_class": coded(cls_of[t.name_id[ev]], _CLASS_NAMES),
            "retval": ids_where(ret, ret == NO_VALUE),
            "failed": np.where(ret == NO_VALUE, False, ret != 0),
            "end_line": ids(end_line, none_below=1),
            "unfinished": (flags & int(Flag.UNFINISHED)) != 0,
            "no_begin": (flags & int(Flag.NO_BEGIN)) != 0,
            "layout": coded(t.layout[loc], list(LAYOUTS)),
        })

    def _records(self) -> pd.DataFrame:
        t = self.trace
        loc = self._sel(_RECORDS)
        size, total = t.size[loc], t.total_allocated[loc]
        cols = {**_base(t, loc), "record": coded(t.what[loc], _WHAT_NAMES),
                "size_bytes": ids(size), "total_allocated_bytes": ids(total),
                "direction": coded(np.where(t.direction[loc] > 0, t.direction[loc], -1), _DIRECTIONS)}
        for dim, arr in (("grid", t.grid), ("block", t.block)):
            for k, axis in enumerate("xyz"):
                cols[f"{dim}_{axis}"] = ids(arr[loc, k] if len(arr) else np.zeros(0, np.int64))
        return frame(cols)

    def _ioctls(self) -> pd.DataFrame:
        t = self.trace
        loc = self._sel((What.IOCTL,))
        cmd, ret = t.ioctl_cmd[loc], t.retval[loc]
        return frame({**_base(t, loc), "cmd": ids(cmd),
                      "cmd_hex": pd.Categorical([f"0x{c:08x}" if c >= 0 else None for c in cmd.tolist()]),
                      "retval": ids_where(ret, ret == NO_VALUE), "end_line": ids(t.end_line_no[loc], none_below=1)})

    def _phases(self) -> pd.DataFrame:
        t = self.trace
        loc = self._sel((What.PHASE,))
        cols = _base(t, loc)
        del cols["line"]
        return frame(cols)
