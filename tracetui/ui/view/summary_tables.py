"""The tables of the summaries screen, computed without Textual (in a worker thread, once
per trace): top kernels, top ops (GPU direct and subtree time), kernel categories, the
roofline of ops with known FLOPs, the idle gaps themselves (longest first, with the host op
running during each) and launch statistics, and a driver-call trace's answers
(:mod:`.driver_tables`).  Each row carries the tree nodes Enter goes to (the browser orders
them longest first); a gap's row carries its span, which the timeline shows.  Times are
milliseconds or microseconds as the column header says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import units
from ...analysis.categories import KernelCategorizer
from ...analysis.frames import cpu_ops_frame, gpu_events_frame, resolve_categorizer
from ...analysis.gaps import IDLE_CLASSES, idle_gaps
from ...analysis.launches import launch_class_stats, launch_frame
from ...analysis.roofline import roofline_table
from ...analysis.tables import NESTED_CALLS_RULE, category_table, kernel_table, op_table
from ...driver import DriverTrace
from ...kineto.trace import KinetoTrace
from .driver_tables import driver_tables
from .summary_table import MAX_ROWS, SummaryTable


def _groups(keys: list[Any], events: np.ndarray) -> dict[Any, np.ndarray]:
    out: dict[Any, list[int]] = {}
    for k, e in zip(keys, events.tolist()):
        out.setdefault(k, []).append(e)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _kernels(gpu: Any) -> SummaryTable:
    t = SummaryTable("kernels", "Top kernels", [("name", False), ("category", False), ("count", True),
                                                (f"total {units.MS}", True), (f"mean {units.US}", True),
                                                (f"max {units.US}", True), ("%", True)], sorted_by=3,
                     drop=(f"max {units.US}", f"mean {units.US}"))
    if gpu.empty:
        return t
    occ = _groups(list(zip(gpu["name"], gpu["kind"].astype(str))), gpu["event"].to_numpy())
    for r in kernel_table(gpu).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, r.kernel_category, int(r.count), r.total_us / 1e3, r.mean_us, r.max_us, r.percent),
              f"{r.kind} {r.name}", occ[(r.name, r.kind)])
    return t


def _ops(ops: Any) -> SummaryTable:
    t = SummaryTable("ops", "Top ops", [("name", False), ("count", True), ("nested", True),
                                        (f"host {units.MS}", True), (f"GPU direct {units.MS}", True),
                                        (f"GPU subtree {units.MS}", True), ("%", True)],
                     note=f"GPU direct: its own launches; subtree: everything under it; {NESTED_CALLS_RULE}",
                     sorted_by=4, short={f"GPU direct {units.MS}": f"direct {units.MS}",
                                         f"GPU subtree {units.MS}": f"subtree {units.MS}"},
                     drop=("nested", "%", f"host {units.MS}"))
    if ops.empty:
        return t
    occ = _groups(list(ops["name"]), ops["event"].to_numpy())
    for r in op_table(ops).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, int(r.count), int(r.nested_calls), r.host_us / 1e3, r.direct_gpu_us / 1e3,
               r.subtree_gpu_us / 1e3, r.percent),
              f"op {r.name}", occ[r.name])
    return t


def _categories(gpu: Any) -> SummaryTable:
    t = SummaryTable("categories", "Categories", [("category", False), ("count", True), (f"total {units.MS}", True),
                                                  ("%", True)], sorted_by=2)
    if gpu.empty:
        return t
    occ = _groups(list(gpu["kernel_category"]), gpu["event"].to_numpy())
    for r in category_table(gpu).itertuples(index=False):
        t.add((r.category, int(r.count), r.total_ms, r.percent), f"category {r.category}", occ[r.category])
    return t


def _roofline(kt: KinetoTrace) -> SummaryTable:
    t = SummaryTable("roofline", "Roofline", [("name", False), ("shapes", False), ("count", True),
                                              (f"GPU {units.MS}", True), (units.TFLOPS, True), (units.GBPS, True),
                                              (units.FLOP_PER_B, True), ("% roof", True), ("bound", False)],
                     note=f"ops with FLOPs from their shapes (docs/roofline.md); % of the roofline at their "
                          f"{units.FLOP_PER_BYTE}", sorted_by=3, drop=(units.FLOP_PER_B, units.GBPS, "count", "bound"))
    for r in roofline_table(kt, with_events=True).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, r.input_dims, int(r.count), r.gpu_ms, r.tflops_per_s, r.gbps, r.intensity, r.pct_of_peak,
               r.bound or ""), f"op {r.name} {r.input_dims}", r.events)
    return t


def _gaps(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    """The idle gaps themselves, longest first (at most :data:`MAX_ROWS`): stream, start,
    length, class, the host op running during the gap on the thread that launched the next
    GPU event and what that thread was in; Enter selects the GPU event before the gap and
    the timeline shows the gap.  The note sums the gaps by class."""
    t = SummaryTable("gaps", "Idle gaps", [("stream", False), (f"start {units.MS}", True), (f"length {units.US}", True),
                                           ("class", False), ("host op", False), ("host was in", False),
                                           ("next GPU event", False)], sorted_by=2,
                     drop=("host was in", f"start {units.MS}"))
    gaps = idle_gaps(kt, gpu)
    if gaps.empty:
        t.note = "no idle gap on any GPU stream"
        return t
    dur = gaps["dur"].to_numpy(np.float64)
    by_class = {c: dur[(gaps["idle_class"] == c).to_numpy()] for c in IDLE_CLASSES}
    parts = [f"{c} {v.size:,} ({v.sum() / 1e3:,.3f} {units.MS})" for c, v in by_class.items() if v.size]
    shown = min(len(gaps), MAX_ROWS)
    t.note = (f"{len(gaps):,} gaps, {dur.sum() / 1e3:,.3f} {units.MS} idle: {', '.join(parts)}"
              + (f"; the {shown:,} longest listed" if shown < len(gaps) else "")
              + "; host op: the op the launching thread was in (blank: none, only python)")
    order = np.argsort(-dur, kind="stable")[:MAX_ROWS]
    word = kt.device_word()
    top = gaps.iloc[order]
    for r in top.itertuples(index=False):
        stream = f"{word}{r.device} s{r.stream}"
        prev = int(r.prev_event)
        t.add((stream, float(r.start) / 1e3, float(r.dur), str(r.idle_class), _text(r.host_op_name),
               _text(r.host_event_name), _text(r.next_name)),
              f"idle gap of {units.duration_short_us(float(r.dur))} on {stream}",
              [prev] if prev >= 0 else [], span=(float(r.start), float(r.end)))
    return t


def _text(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _launches(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    t = SummaryTable("launches", "Launches", [("class", False), ("calls", True), (f"call mean {units.US}", True),
                                              (f"delay median {units.US}", True), (f"delay p90 {units.US}", True),
                                              (f"delay max {units.US}", True), (f"GPU {units.MS}", True)],
                     note="launch calls by class; delay = first GPU start - call start",
                     short={f"call mean {units.US}": f"call {units.US}",
                            f"delay median {units.US}": f"median {units.US}",
                            f"delay p90 {units.US}": f"p90 {units.US}", f"delay max {units.US}": f"max {units.US}"},
                     drop=(f"delay max {units.US}", f"call mean {units.US}"))
    lf = launch_frame(kt, gpu)
    if lf.empty:
        return t
    occ = _groups(list(lf["launch_class"]), lf["launch"].to_numpy())
    for cls, st in launch_class_stats(lf).items():
        delay, call = st["delay"], st["call"]
        q = [delay[k] if delay["count"] else None for k in ("median_us", "p90_us", "max_us")]
        t.add((str(cls), call["count"], call["mean_us"], *q,
               st["gpu_us"] / 1e3), f"launches ({cls})", occ[cls])
    return t


def summary_tables(kt: KinetoTrace, categorizer: KernelCategorizer | None = None) -> list[SummaryTable]:
    """Every tab's table of a trace (no Textual involved: runs in a worker thread): the
    Kineto tables, and for a driver-call trace its answers (:mod:`.driver_tables`) -- alone, first
    and without the empty Kineto tables; linked, after the Kineto tables."""
    gpu = gpu_events_frame(kt, resolve_categorizer(categorizer))
    ops = cpu_ops_frame(kt)
    tables = [_kernels(gpu), _ops(ops), _categories(gpu), _roofline(kt), _gaps(kt, gpu), _launches(kt, gpu)]
    if isinstance(kt, DriverTrace):
        drv = driver_tables(kt)
        return drv if kt.first == 0 else tables + drv
    return tables
