"""Text of a CUDA memory snapshot's answers: ``tracetui memory SNAPSHOT`` (from
:func:`~tracetui.analysis.memsnap_doc.snapshot_document`) and ``tracetui diff A.pickle
B.pickle`` (:func:`~tracetui.analysis.memsnap_doc.snapshot_diff`).

Byte counts are written by :mod:`tracetui.units` (SI: rounded in table cells, exact then rounded
in sentences); times are ms after the snapshot's first entry; names from the file (frames,
files, annotations) stay :class:`rich.text.Text` in tables and are made one line everywhere.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .. import units
from ..io import jsonout
from .fit_table import Col
from .memory_render import _at_ms, _b, _blocks, _bx, _n, _t


def _owners(out: Any, title: str, owners: list[dict[str, Any]], with_op: bool) -> None:
    cols = [Col("owner", False), Col("bytes"), Col("blocks"), Col("largest")]
    rows = []
    for o in owners:
        big = o["largest"][0] if o["largest"] else None
        row = [_t(o["owner"]), _b(o["bytes"]), _n(o["count"]), _b(big["bytes"] if big else None)]
        if with_op:
            op = big.get("op") if big else None
            row.append(_t(op["name"] if op else ""))
        rows.append(row)
    out.table(title, cols + ([Col("op open then (trace)", False)] if with_op else []), rows)


def _segments(out: Any, name: str, s: dict[str, Any]) -> None:
    if not s["count"]:
        out.line(f"{name}: no segments in the snapshot")
        return
    frag = units.pct_text(100.0 * s["fragmentation"])
    out.line(f"{name} at the snapshot: {s['count']:,} segments hold {_bx(s['reserved_bytes'])} reserved = "
             f"{_bx(s['allocated_bytes'])} allocated + {_bx(s['free_bytes'])} free inside them; largest free block "
             f"{_bx(s['largest_free_block_bytes'])} (fragmentation {frag}: free bytes outside the largest free block)")
    rows = [[_t(pool), _n(p["segments"]), _b(p["reserved_bytes"]), _b(p["allocated_bytes"]), _b(p["free_bytes"]),
             _b(p["largest_free_block_bytes"])] for pool, p in s["by_pool"].items()]
    out.table(f"Segments by pool ({name})", [Col("pool", False), Col("segments"), Col("reserved"), Col("allocated"),
                                             Col("free"), Col("largest free")], rows)


def _oom(out: Any, name: str, o: dict[str, Any], with_op: bool) -> None:
    free = "not recorded" if o["device_free_bytes"] is None else _bx(o["device_free_bytes"])
    out.line(f"{name}: OUT OF MEMORY at {_at_ms(o['ts_us'])} {units.MS} (entry {o['entry']:,}): asked for "
             f"{_bx(o['requested_bytes'])}, free on the device {free}; allocated {_bx(o['allocated_bytes'])}, "
             f"reserved {_bx(o['reserved_bytes'])} then, {_bx(o['live_bytes'])} in "
             f"{_blocks(o['live_blocks'])} live", "bold red")
    user = [f for f in o["frames"] if f["user"]][:3]
    if user:
        out.line("  asked from: " + " < ".join(f"{f['name']} ({os.path.basename(f['filename'])}:{f['line']})"
                                                for f in user))
    if with_op and o.get("op"):
        out.line(f"  op open then in the trace: {o['op']['name']}")
    _owners(out, f"What held the memory then ({name})", o["owners"], with_op)


def _timeline(out: Any, name: str, points: list[dict[str, Any]]) -> None:
    out.table(f"Over time ({name}; the highest in each span)",
              [Col(f"from {units.MS}"), Col("allocated"), Col("reserved"), Col("unused (reserved - allocated)")],
              [[_at_ms(p["ts_us"]), _b(p["allocated_bytes"]), _b(p["reserved_bytes"]),
                _b(p["reserved_bytes"] - p["allocated_bytes"])] for p in points])


def _device(out: Any, d: dict[str, Any], by: str, with_op: bool) -> None:
    name = d["device"]
    if d["peak_allocated_bytes"] is not None:
        out.line(f"{name}: peak {_bx(d['peak_allocated_bytes'])} allocated at {_at_ms(d['peak_ts_us'])} {units.MS} "
                 f"(entry {d['peak_entry']:,}) = {_bx(d['live_at_peak_bytes'])} in "
                 f"{_blocks(d['live_at_peak_blocks'])} allocated in the history + {_bx(d['before_trace_bytes'])} "
                 "allocated before it", "bold")
        _owners(out, f"Owners at the peak ({name}, by {by})", d["owners_at_peak"], with_op)
    if d["peak_reserved_bytes"] is not None:
        out.line(f"{name}: peak {_bx(d['peak_reserved_bytes'])} reserved at {_at_ms(d['peak_reserved_ts_us'])} "
                 f"{units.MS}, {_bx(d['allocated_at_reserved_peak_bytes'])} allocated then", "bold")
    _timeline(out, name, d["timeline"])
    _segments(out, name, d["segments"])
    for o in d["ooms"]:
        _oom(out, name, o, with_op)
    if "at" in d:
        a = d["at"]
        out.line(f"{name} at {_at_ms(a['ts_us'])} {units.MS}: {_bx(a['allocated_bytes'])} allocated "
                 f"({_bx(a['live_bytes'])} in {_blocks(a['live_blocks'])} allocated in the history), "
                 f"{_bx(a['reserved_bytes'])} reserved", "bold")
        _owners(out, f"Live at {_at_ms(a['ts_us'])} {units.MS} ({name}, by {by})", a["owners"], with_op)
    fb, nf = d["frees_before_trace"], d["never_freed"]
    snap = "" if d["snapshot_entry_bytes"] is None else \
        f"; the snapshot entry says {_bx(d['snapshot_entry_bytes'])} allocated"
    out.line(f"{name} counted apart: {fb['count']:,} frees of blocks allocated before the history "
             f"({_bx(fb['bytes'])}), {_blocks(nf['count'])} never freed in it ({_bx(nf['bytes'])}), "
             f"{d['free_requested']:,} frees requested; allocated {_bx(d['start_allocated_bytes'])} when the history "
             f"begins, {_bx(d['end_allocated_bytes'])} at the snapshot{snap}")


def print_snapshot(out: Any, doc: dict[str, Any]) -> None:
    """All of ``tracetui memory SNAPSHOT`` (a :func:`~tracetui.analysis.memsnap_doc.snapshot_document`)."""
    out.line(f"{doc['source']} (CUDA memory snapshot, pickle protocol {doc['protocol']}, "
             f"{doc['file_size']:,} bytes)", "bold")
    devs = doc["devices"]
    acts = ", ".join(f"{k} {v:,}" for k, v in doc["actions"].items())
    out.line(f"{doc['entries']:,} history entries on {len(devs)} device(s): {', '.join(d['device'] for d in devs)} "
             f"({acts}); times in {units.MS} after the first entry")
    beside = doc.get("beside")
    with_op = bool(beside and beside.get("linked"))
    if beside:
        if beside["linked"]:
            diff = beside["clock_difference_us"]
            base = "" if diff is None else f"; {diff:+,.1f} {units.US} from the trace's baseTimeNanoseconds clock"
            out.line(f"Beside {os.path.basename(beside['trace'])}: clocks linked by {beside['pairs']:,} profiler "
                     f"annotation marks ({beside['names']:,} names), the farthest {beside['spread_us']:,.1f} "
                     f"{units.US} off{base}")
        else:
            out.line(f"Beside {os.path.basename(beside['trace'])}: {beside['why']}", "yellow")
    out.table("Devices (live at peak: allocated in the history; from before: before it)",
              [Col("device", False), Col("allocs"), Col("frees"), Col("peak allocated"),
               Col(f"at {units.MS}"), Col("live at peak"), Col("from before"), Col("peak reserved")],
              [[_t(d["device"]), _n(d["allocations"]), _n(d["frees"]),
                _b(d["peak_allocated_bytes"]), _at_ms(d["peak_ts_us"]), _b(d["live_at_peak_bytes"]),
                _b(d["before_trace_bytes"]), _b(d["peak_reserved_bytes"])] for d in devs])
    for d in devs:
        _device(out, d, doc["group_by"], with_op)
    odd = doc["irregular"]
    if any(odd.values()):
        out.line(f"Irregular: {odd['reallocated_live']:,} allocations at a live address, {odd['unmatched_frees']:,} "
                 f"second frees, {odd['size_mismatches']:,} frees of another size than their allocation", "yellow")
    for w in doc["warnings"]:
        out.line("warning: " + w, "yellow")


def print_snapshot_diff(out: Any, doc: dict[str, Any]) -> None:
    """``tracetui diff A.pickle B.pickle`` as text."""
    out.line(f"A: {doc['a']}   B: {doc['b']}   (live bytes at each side's allocated peak, by {doc['group_by']})",
             "bold")
    for d in doc["devices"]:
        pa, pb = d["a_peak_allocated_bytes"], d["b_peak_allocated_bytes"]
        out.line(f"{d['device']}: peak {_bx(pa)} (A) -> {_bx(pb)} (B), "
                 f"{units.bytes_text(d['delta_peak_bytes'])} change", "bold")
        out.table(f"Owners at the peak ({d['device']}; {d['owners_total']:,} in all, largest change first)",
                  [Col("owner", False), Col("A"), Col("B"), Col("Δ")],
                  [[_t(r["owner"]), _b(r["a_bytes"]), _b(r["b_bytes"]), units.bytes_rounded(r["delta_bytes"])]
                   for r in d["owners"]])


def snapshot_diff_command(args: argparse.Namespace) -> int:
    """``tracetui diff A.pickle B.pickle [--json] [--by ...]``; raises TraceError for bad input."""
    from ..analysis.memsnap_doc import snapshot_diff
    from ..session import open_traces
    from .summary_render import console_out

    doc = snapshot_diff(open_traces([args.a]), open_traces([args.b]), by=getattr(args, "by", None) or "frame",
                        top=max(args.top, 0))
    if args.json:
        sys.stdout.write(jsonout.dumps(doc, indent=True).decode() + "\n")
    else:
        print_snapshot_diff(console_out(), doc)
    return 0
