"""What the memory screen of a CUDA memory snapshot shows, without Textual: per device the
allocated and reserved bytes over time (a :class:`~tracetui.ui.view.plot.PlotModel`), the blocks
live at a time (the cursor) grouped by owner, a block's stack, and, with a Kineto trace of the
same run beside the snapshot, the op open when a block was allocated.

Every number comes from :mod:`tracetui.analysis.memsnap` and :mod:`tracetui.analysis.memory`
(``tracetui memory SNAPSHOT``'s; rules in docs/memory.md).  Bytes are SI
(:mod:`tracetui.units`), times ms after the snapshot's first entry; names from the file are made
one line (:func:`~tracetui.errors.one_line`) and stay plain text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from rich.text import Text

from ... import units
from ...analysis.memory import Device, allocated_at, memory_model
from ...analysis.memory_peak import Peak, peak
from ...analysis.memsnap import GROUPINGS, Oom, SnapOwner, live_at, ooms, op_at, owners_by, row_at, stack_frames
from ...errors import one_line
from ...link.memsnap_kineto import ClockLink, link_clocks
from ...session import LinkedTrace
from .keep_text import KeepText
from .plot import PlotModel, Series
from .table_fit import Column

#: owner rows shown at most
MAX_OWNERS = 200


def at_ms(us: float) -> str:
    return units.ms_text(us / 1e3)


@dataclass
class LiveTable:
    """The blocks live at a time, by owner: the table's header, cells and the owners behind them."""

    headers: list[str]
    numeric: list[bool]
    cells: list[list[str]]
    owners: list[SnapOwner]
    live_blocks: int = 0
    live_bytes: int = 0

    def columns(self) -> list[Column]:
        """The columns as the table lays them out in its width (the owner first: :mod:`.table_fit`)."""
        return [Column(h, num) for h, num in zip(self.headers, self.numeric)]


@dataclass
class DeviceView:
    device: Device
    allocated: Series
    reserved: Series
    lo: float
    hi: float
    peak: Peak | None
    reserved_peak: Peak | None
    ooms: list[Oom] = field(default_factory=list)


class SnapshotView:
    """The memory screen's model of ``linked``'s snapshot (given alone or beside a trace)."""

    def __init__(self, linked: LinkedTrace) -> None:
        self.kt = linked.snapshot_trace
        self.m = memory_model(self.kt)
        self.trace = linked.kineto if linked.memory is not None else None
        self.clock: ClockLink | None = link_clocks(self.trace, self.kt.snapshot) if self.trace is not None else None
        self.title = os.path.basename(self.kt.path)
        m = self.m
        all_ooms = ooms(self.kt, m)
        self.devices: list[DeviceView] = []
        for d in m.devices:
            s = m.rows_of(d)
            ts = m.ts[s]
            lo, hi = (float(ts[0]), float(ts[-1])) if ts.size else (0.0, 1.0)
            base = self.kt.sums.reserved_baseline
            res_start = int(base[d.device_id]) if d.device_id < base.size else 0
            self.devices.append(DeviceView(
                d, Series("allocated", ts, m.allocated[s], d.baseline, "s0"),
                Series("reserved", ts, m.reserved[s], res_start, "s1"), lo, hi if hi > lo else lo + 1.0,
                peak(m, d, "allocated"), peak(m, d, "reserved"), [o for o in all_ooms if o.device.index == d.index]))

    # ------------------------------------------------------------------ the plot
    def plot(self, i: int, cursor: float, lo: float | None = None, hi: float | None = None) -> PlotModel:
        v = self.devices[i]
        marks = [(o.ts, "!") for o in v.ooms]
        if v.peak is not None:
            marks.append((v.peak.ts, "^"))
        return PlotModel([v.allocated, v.reserved], v.lo if lo is None else lo, v.hi if hi is None else hi,
                         cursor=cursor, marks=marks)

    def head(self, i: int, t: float, by: str) -> list[Text]:
        """What is allocated at ``t``, the peaks, and how the owners are grouped."""
        v, m = self.devices[i], self.m
        d = v.device
        row = row_at(m, d, t)
        res = int(m.reserved[row]) if row >= 0 else int(v.reserved.start)
        line = KeepText(f"{d.name} at {at_ms(t)}: ", style="bold")
        line.append(f"{units.bytes_rounded(allocated_at(m, d, t))} allocated", style="bold cyan")
        line.append(f", {units.bytes_rounded(res)} reserved")
        if row >= 0 and m.entry is not None:
            line.append(f" (entry {int(m.entry[row] - self.kt.snapshot.history.lo[d.device_id]):,})", style="dim")
        out = [line]
        second = KeepText("", style="dim")
        if v.peak is not None:
            second.append(f"peak {units.bytes_rounded(v.peak.value)} at {at_ms(v.peak.ts)} (^)")
        if v.reserved_peak is not None:
            second.append(f", reserved peak {units.bytes_rounded(v.reserved_peak.value)} (r)")
        if v.ooms:
            o = v.ooms[0]
            second.append(f"; out of memory at {at_ms(o.ts)}: {units.bytes_rounded(o.requested)} asked (o)",
                          style="bold red")
        second.append(f"; owners by {by} (b)")
        out.append(second)
        return out

    # ------------------------------------------------------------------ live blocks
    def live_table(self, i: int, t: float, by: str) -> LiveTable:
        m = self.m
        rows = live_at(m, self.devices[i].device, t)
        groups = owners_by(self.kt, m, rows, by)[:MAX_OWNERS]
        with_op = self.clock is not None
        headers = ["owner", "bytes", "blocks", "largest"] + (["op then (trace)"] if with_op else [])
        cells = []
        for o in groups:
            row = [one_line(o.label), units.bytes_rounded(o.bytes), f"{o.count:,}",
                   units.bytes_rounded(int(m.nbytes[o.rows[0]]))]
            if with_op:
                node = self.op_node(int(o.rows[0]))
                row.append(one_line(self.trace.name(node)) if node >= 0 else "")
            cells.append(row)
        return LiveTable(headers, [False, True, True, True] + ([False] if with_op else []), cells, groups,
                         int(rows.size), int(m.nbytes[rows].sum()))

    # ------------------------------------------------------------------ moving in time
    def entry_step(self, i: int, t: float, forward: bool) -> float:
        """The time of the next (previous) entry that changes the bytes allocated, from ``t``."""
        m, d = self.m, self.devices[i].device
        s = m.rows_of(d)
        change = np.flatnonzero(m.nbytes[s] != 0)
        ts = m.ts[s][change]
        if not ts.size:
            return t
        k = np.searchsorted(ts, t, side="right" if forward else "left")
        k = k if forward else k - 1
        return float(ts[min(max(k, 0), ts.size - 1)])

    # ------------------------------------------------------------------ a block
    def block_rows(self, owner: SnapOwner) -> list[list[str]]:
        """An owner's blocks (largest first): bytes, allocated at, freed at (or "live"), address."""
        m = self.m
        out = []
        for r in owner.rows[:MAX_OWNERS].tolist():
            f = int(m.pair[r])
            out.append([units.bytes_rounded(int(m.nbytes[r])), at_ms(float(m.ts[r])),
                        at_ms(float(m.ts[f])) if f >= 0 else "not freed", f"0x{int(m.addr[r]):x}"])
        return out

    def stack_lines(self, row: int) -> list[Text]:
        """The stack of the allocation at model row ``row``, innermost first (the user's frames bold)."""
        h = self.kt.snapshot.history
        frames = stack_frames(self.kt.snapshot, int(h.stack[self.m.entry[row]]))
        if not frames:
            return [Text("no frames were recorded for this allocation (C++ or another thread: the autograd "
                         "engine's)", style="dim")]
        out = []
        for f in frames:
            t = Text(no_wrap=True, overflow="ellipsis")
            t.append(one_line(f["name"]), style="bold" if f["user"] else "")
            t.append(f"  {one_line(os.path.basename(f['filename']))}:{f['line']}", style="" if f["user"] else "dim")
            t.append(f"  {one_line(os.path.dirname(f['filename']))}", style="dim")
            out.append(t)
        return out

    def op_node(self, row: int) -> int:
        """The op open in the trace beside the snapshot when the allocation at ``row`` was made
        (-1: no trace, no clock link, or no op then)."""
        if self.clock is None:
            return -1
        t = float(self.clock.to_trace(float(self.kt.origin_us + self.m.ts[row])))
        return op_at(self.trace, t)

    def op_note(self, row: int) -> str:
        """Why there is no op to go to, or "" when there is one."""
        if self.trace is None:
            return "open the snapshot beside the PyTorch profiler trace of the same run to go to the op " \
                   "(tracetui TRACE SNAPSHOT)"
        if self.clock is None:
            return "the snapshot and the trace share no profiler annotation: their clocks are not linked"
        return "" if self.op_node(row) >= 0 else "no op was open in the trace when this block was allocated"


def groupings() -> tuple[str, ...]:
    return GROUPINGS
