"""Text of the memory answers: the ``Memory`` table of ``tracetui summary`` and the whole of
``tracetui memory`` (from the dicts of :mod:`tracetui.analysis.memory_doc`).

``out`` is the summary's printer (``table(title, cols, rows)``, ``line(text)``): tables fit
the terminal, names from the trace stay :class:`rich.text.Text`.  Byte counts are written by
:mod:`tracetui.units` (SI: rounded in table cells, exact in the sentences); times are ms after the
trace start.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from .. import units
from ..errors import one_line
from .fit_table import Col


def _t(s: Any) -> Text:
    """A name from the trace in a table cell: one line, control characters escaped."""
    return Text(one_line(str(s)))


def _n(v: Any) -> str:
    return "" if v is None else f"{v:,}"


def _b(n: int | None) -> str:
    """A byte count in a table cell (SI, rounded); "" for None."""
    return "" if n is None else units.bytes_rounded(n)


def _bx(n: int | None) -> str:
    """A byte count in a sentence: exact, then rounded."""
    return "" if n is None else units.bytes_text(n)


def _blocks(n: int) -> str:
    return units.plural(n, "block")


def _at_ms(us: float | None) -> str:
    return "" if us is None else f"{us / 1e3:,.3f}"


def device_table(out: Any, title: str, devices: list[dict[str, Any]]) -> None:
    """One row per device: counts, the allocated peak (value, time, its two parts), reserved peak."""
    out.table(title, [Col("device", False), Col("allocs"), Col("frees"), Col("peak allocated"), Col(f"at {units.MS}"),
                      Col("live at peak"), Col("from before"), Col("peak reserved")],
              [[_t(d["device"]), _n(d["allocations"]), _n(d["frees"]), _b(d["peak_allocated_bytes"]),
                _at_ms(d["peak_ts_us"]), _b(d["live_at_peak_bytes"]), _b(d["before_trace_bytes"]),
                _b(d["peak_reserved_bytes"])] for d in devices])


def print_memory_summary(out: Any, mem: dict[str, Any] | None) -> None:
    """The ``memory`` key of a summary: the device table and the owners at each peak."""
    if not mem or not mem["devices"]:
        return
    snapshot = mem.get("format") == "memsnap"
    device_table(out, "Memory (CUDA memory snapshot; live at peak: allocated in its history)" if snapshot else
                 "Memory ([memory] events; live at peak: allocated in the trace)", mem["devices"])
    for d in mem["devices"]:
        owners = ", ".join(f"{o.get('op') or o.get('owner')} {_b(o['bytes'])} ({o['count']:,})"
                           for o in d["owners_at_peak"])
        if owners:
            out.line(f"{d['device']} owners at the peak: {owners}")
        seg = d.get("segments")
        if seg and seg["count"]:
            out.line(f"{d['device']} segments at the snapshot: {seg['count']:,}, {_b(seg['reserved_bytes'])} reserved, "
                     f"{_b(seg['free_bytes'])} free inside them (largest free block "
                     f"{_b(seg['largest_free_block_bytes'])}); {d['ooms']:,} out-of-memory entries")


def _owners(out: Any, title: str, owners: list[dict[str, Any]]) -> None:
    out.table(title, [Col("op", False), Col("bytes"), Col("blocks"), Col("called from", False), Col("shapes", False)],
              [[_t(o["op"]), _b(o["bytes"]), _n(o["count"]),
                _t(o["callers"][0]["op"] if o["callers"] else ""),
                _t(o["shapes"][0]["shapes"] if o["shapes"] else "")] for o in owners])


def _device(out: Any, d: dict[str, Any]) -> None:
    name = d["device"]
    if d["peak_allocated_bytes"] is not None:
        out.line(f"{name}: peak {_bx(d['peak_allocated_bytes'])} allocated at {_at_ms(d['peak_ts_us'])} {units.MS} = "
                 f"{_bx(d['live_at_peak_bytes'])} in {_blocks(d['live_at_peak_blocks'])} allocated in the "
                 f"trace + {_bx(d['before_trace_bytes'])} allocated before it", "bold")
        _owners(out, f"Owners at the peak ({name})", d["owners_at_peak"])
    if d["peak_reserved_bytes"] is not None:
        out.line(f"{name}: peak {_bx(d['peak_reserved_bytes'])} reserved at "
                 f"{_at_ms(d['peak_reserved_ts_us'])} {units.MS}, {_bx(d['allocated_at_reserved_peak_bytes'])} "
                 f"allocated then = {_bx(d['live_at_reserved_peak_bytes'])} in "
                 f"{_blocks(d['live_at_reserved_peak_blocks'])} + "
                 f"{_bx(d['before_trace_at_reserved_peak_bytes'])} from before the trace", "bold")
        _owners(out, f"Owners at the reserved peak ({name})", d["owners_at_reserved_peak"])
    out.table(f"Top allocating ops ({name})",
              [Col("op", False), Col("allocs"), Col("bytes"), Col("largest"), Col("never freed")],
              [[_t(r["op"]), _n(r["allocations"]), _b(r["bytes"]), _b(r["largest_bytes"]),
                _n(r["never_freed"])] for r in d["top_ops"]])
    out.table(f"By profiler step ({name})",
              [Col("step", False), Col("allocs"), Col("bytes"), Col("peak allocated"), Col("top op", False)],
              [[_t(r["step"]), _n(r["allocations"]), _b(r["bytes"]), _b(r["peak_allocated_bytes"]),
                _t(r["top_ops"][0]["op"] if r["top_ops"] else "")] for r in d["by_step"]])
    fb, nf = d["frees_before_trace"], d["never_freed"]
    out.line(f"{name} counted apart: {fb['count']:,} frees of blocks allocated before the trace "
             f"({_bx(fb['bytes'])}), {_blocks(nf['count'])} never freed in it ({_bx(nf['bytes'])}); "
             f"allocated {_bx(d['start_allocated_bytes'])} at the start, "
             f"{_bx(d['end_allocated_bytes'])} at the end")
    if d["totals_from"] != "trace":
        out.line(f"{name}: no Total Allocated in the trace; totals are running sums from 0", "yellow")
    elif d["totals_mismatches"]:
        out.line(f"{name}: {d['totals_mismatches']:,} events whose Total Allocated is not the previous one plus "
                 f"their Bytes", "yellow")


def print_memory(out: Any, doc: dict[str, Any]) -> None:
    """All of ``tracetui memory`` (a :func:`~tracetui.analysis.memory_doc.memory_document`)."""
    out.line(doc["source"], "bold")
    devs = doc["devices"]
    if not devs:
        out.line("No [memory] events in this trace: record with torch.profiler.profile(profile_memory=True) to "
                 "see allocations.")
        return
    out.line(f"{doc['memory_events']:,} [memory] events on {len(devs)} device(s): "
             f"{', '.join(d['device'] for d in devs)}; times in {units.MS} after the trace start")
    device_table(out, "Devices (live at peak: allocated in the trace; from before: allocated before it)", devs)
    for d in devs:
        _device(out, d)
    odd = doc["irregular"]
    if doc["unreadable_events"] or any(odd.values()):
        out.line(f"Irregular: {doc['unreadable_events']:,} [memory] events without address, size or device; "
                 f"{odd['reallocated_live']:,} allocations at a live address, {odd['unmatched_frees']:,} second "
                 f"frees, {odd['size_mismatches']:,} frees of another size than their allocation", "yellow")
