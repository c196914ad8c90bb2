"""What the memory screen (``M``) and the peak key show, computed without Textual: per device
of a trace recorded with ``profile_memory=True`` the allocated peak (time, value, the bytes
live there that were allocated inside the trace and those allocated before it), the reserved
peak, the owners at the peak and the top allocating ops, each row with the tree nodes Enter
goes to (the ops that allocated its blocks, largest block first).

Every number comes from :mod:`tracetui.analysis.memory_peak` (the same as ``tracetui
memory``; rules in docs/memory.md); bytes are SI (:mod:`tracetui.units`), times ms after the
trace start.  Trace names stay plain text (the screen draws them as ``rich.text.Text``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from rich.text import Text

from ... import units
from ...analysis.memory import Device, MemoryModel, memory_model
from ...analysis.memory_peak import Owner, Peak, by_owner, owners, peak
from ...kineto.trace import KinetoTrace
from ...session import LinkedTrace
from .keep_text import KeepText
from .plot_views import MemoryPlot
from .summary_table import MAX_ROWS, SummaryTable

#: what the peak key and the memory screen's ``p`` say when a trace has no ``[memory]`` event
NO_MEMORY = "no [memory] events in this trace: record with torch.profiler.profile(profile_memory=True)"


def at_ms(ts_us: float) -> str:
    """``46.588 ms`` (after the trace start)."""
    return units.ms_text(ts_us / 1e3)


@dataclass
class PeakTarget:
    """Where a peak is in the tree: ``node`` (the event open on the allocating thread at the
    peak's ``[memory]`` event, else its thread's lane; -1: none) and the note that says it."""

    device: str
    what: str  #: "allocated" or "reserved"
    node: int
    ts: float  #: µs, trace clock
    note: Text


@dataclass
class DeviceMemoryView:
    """One device's tab of the memory screen."""

    device: str
    head: list[Text]
    owners: SummaryTable
    top_ops: SummaryTable
    peak: PeakTarget | None = None
    reserved_peak: PeakTarget | None = None
    counts: dict[str, int] = field(default_factory=dict)
    plot: MemoryPlot | None = None  #: allocated and reserved over time (``o``)


def _first_each(events: np.ndarray) -> np.ndarray:
    """``events`` without -1 and repeats, in their order (an op that made several blocks once)."""
    ev = events[events >= 0]
    _, first = np.unique(ev, return_index=True)
    return ev[np.sort(first)]


def _owner_table(key: str, title: str, m: MemoryModel, groups: list[Owner], note: str) -> SummaryTable:
    """Owners: op, bytes, blocks, largest block, the shapes and caller with most bytes (the
    shapes column only when the trace recorded shapes)."""
    shapes = any(o.shapes for o in groups)
    t = SummaryTable(key, title, [("op", False), ("bytes", True), ("blocks", True), ("largest", True),
                                  *([("shapes (largest)", False)] if shapes else []), ("called from", False)],
                     note=note)
    for o in groups[:MAX_ROWS]:
        t.add((o.op, units.bytes_rounded(o.bytes), o.count, units.bytes_rounded(int(m.nbytes[o.rows[0]])),
               *([o.shapes[0][0] if o.shapes else ""] if shapes else []), o.callers[0][0] if o.callers else ""),
              o.op, _first_each(o.op_events))
    return t


def _top_ops(kt: KinetoTrace, m: MemoryModel, d: Device) -> SummaryTable:
    s = m.rows_of(d)
    allocs = np.flatnonzero(m.nbytes[s] > 0) + d.lo
    allocs = allocs[np.lexsort((allocs, -m.nbytes[allocs]))]  # largest first
    never = m.never_freed()
    t = SummaryTable("top", "Top allocating ops", [("op", False), ("allocs", True), ("bytes", True),
                                                   ("largest", True), ("never freed", True)],
                     note="every allocation in the trace, by op")
    for op, rows in by_owner(kt, m, allocs)[:MAX_ROWS]:
        ev = m.owner[rows]
        ev = ev[ev >= 0]
        t.add((op, int(rows.size), units.bytes_rounded(int(m.nbytes[rows].sum())),
               units.bytes_rounded(int(m.nbytes[rows[0]])), int(never[rows].sum())), op, _first_each(ev))
    return t


def peak_target(kt: KinetoTrace, m: MemoryModel, p: Peak) -> PeakTarget:
    """The node to select for peak ``p`` and the note naming it."""
    node = int(m.node[p.row])
    what = "allocated" if p.what == "allocated" else "reserved"
    note = KeepText(f"peak of {p.device.name}: {units.bytes_text(p.value)} {what} at {at_ms(p.ts)}", style="bold")
    if node >= 0:
        note.append(", in ")
        note.append(kt.name(node), style="cyan")
    owner = int(m.owner[p.row])
    if m.nbytes[p.row] > 0 and owner >= 0 and owner != node:
        note.append(" (allocated by ")
        note.append(kt.name(owner), style="cyan")
        note.append(")")
    note.append(f"\n  {units.bytes_rounded(p.live_bytes)} in {units.plural(int(p.live.size), 'block')} allocated in "
                f"the trace + {units.bytes_rounded(p.before_trace_bytes)} allocated before it", style="dim")
    return PeakTarget(p.device.name, p.what, node, p.ts, note)


def peak_targets(kt: KinetoTrace) -> list[PeakTarget]:
    """The allocated peak of every device with ``[memory]`` events (GPUs first, the CPU last)."""
    m = memory_model(kt)
    out = []
    for d in m.devices:
        p = peak(m, d, "allocated")
        if p is not None:
            out.append(peak_target(kt, m, p))
    return out


def _peak_line(p: Peak, style: str, tail: str) -> Text:
    """``Peak allocated 101,305,344 B (101.3 MB) at 4.776 ms`` and what follows."""
    line = KeepText(f"Peak {p.what} ", style="bold")
    line.append(f"{units.bytes_text(p.value)} at {at_ms(p.ts)}", style=style)
    line.append(tail)
    return line


def _head(d: Device, m: MemoryModel, p: Peak | None, r: Peak | None) -> list[Text]:
    s = m.rows_of(d)
    b = m.nbytes[s]
    lines = [KeepText(f"{units.plural(int((b > 0).sum()), 'allocation')}, {units.plural(int((b < 0).sum()), 'free')}; "
                  f"allocated {units.bytes_rounded(d.baseline)} when the trace began, "
                  f"{units.bytes_rounded(int(m.allocated[d.hi - 1]))} at its end", style="dim")]
    if p is not None:
        lines.append(_peak_line(p, "bold yellow", f" = {units.bytes_rounded(p.live_bytes)} in "
                                f"{units.plural(int(p.live.size), 'block')} allocated in the trace + "
                                f"{units.bytes_rounded(p.before_trace_bytes)} allocated before it"))
    if r is not None:
        lines.append(_peak_line(r, "bold", f": {units.bytes_rounded(r.allocated)} allocated then, "
                                f"{units.bytes_rounded(r.value - r.allocated)} cached by the allocator and unused"))
    else:
        why = " (the CPU allocator caches nothing)" if d.device_type == 0 else ""
        lines.append(KeepText(f"No reserved bytes in the trace for this device{why}", style="dim"))
    return lines


def memory_views(linked: LinkedTrace) -> list[DeviceMemoryView]:
    """One :class:`DeviceMemoryView` per device with ``[memory]`` events; [] without any."""
    kt = linked.kineto
    m = memory_model(kt)
    out = []
    for d in m.devices:
        p, r = peak(m, d, "allocated"), peak(m, d, "reserved")
        live = owners(kt, m, p.live, linked) if p is not None else []
        note = "the blocks live there, allocated in the trace, by op"
        view = DeviceMemoryView(d.name, _head(d, m, p, r), _owner_table("owners", "Owners at the peak", m, live, note),
                                _top_ops(kt, m, d))
        view.peak = peak_target(kt, m, p) if p is not None else None
        view.reserved_peak = peak_target(kt, m, r) if r is not None else None
        view.plot = MemoryPlot(m, d, p)
        out.append(view)
    return out
