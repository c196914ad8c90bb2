"""The tables of the summaries screen, computed without Textual (in a worker thread): top
kernels, top ops (GPU direct and subtree time), kernel categories, the roofline of ops with
known FLOPs, idle gaps by class and launch statistics, and a driver-call trace's answers
(:mod:`.driver_tables`).  Each row carries the tree nodes Enter goes to.  Times are
milliseconds or microseconds as the column header says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import units
from ...analysis.categories import KernelCategorizer
from ...analysis.frames import cpu_ops_frame, gpu_events_frame, resolve_categorizer
from ...analysis.gaps import idle_gaps, idle_summary
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
                                                (f"total {units.MS}", True), (f"mean {units.US}",
                                                                              True), (f"max {units.US}", True),
                                                ("%", True)])
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
                     note=f"GPU direct: its own launches; subtree: everything under it; {NESTED_CALLS_RULE}")
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
                                                  ("%", True)])
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
                          f"{units.FLOP_PER_BYTE}")
    for r in roofline_table(kt, with_events=True).head(MAX_ROWS).itertuples(index=False):
        t.add((r.name, r.input_dims, int(r.count), r.gpu_ms, r.tflops_per_s, r.gbps, r.intensity, r.pct_of_peak,
               r.bound or ""), f"op {r.name} {r.input_dims}", r.events)
    return t


def _gaps(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    t = SummaryTable("gaps", "Idle gaps", [("class", False), ("gaps", True), (f"total {units.MS}", True),
                                           (f"mean {units.US}", True),
                                           (f"max {units.US}", True), ("% of idle", True)],
                     note="gaps on each GPU stream; Enter goes to the GPU events that end them (tree order)")
    gaps = idle_gaps(kt, gpu)
    if gaps.empty:
        return t
    nxt = gaps["next_event"].to_numpy().astype(np.int64)
    occ = _groups(list(gaps["idle_class"]), nxt)
    for r in idle_summary(gaps).itertuples(index=False):
        if r.count:
            ends = occ[r.idle_class]
            t.add((r.idle_class, int(r.count), r.total_us / 1e3, r.mean_us, r.max_us, r.percent),
                  f"idle gaps ({r.idle_class})", ends[ends >= 0])
    return t


def _launches(kt: KinetoTrace, gpu: Any) -> SummaryTable:
    t = SummaryTable("launches", "Launches", [("class", False), ("calls", True), (f"call mean {units.US}", True),
                                              (f"delay median {units.US}", True), (f"delay p90 {units.US}", True),
                                              (f"delay max {units.US}", True), (f"GPU {units.MS}", True)],
                     note="launch calls by class; delay = first GPU start - call start")
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
