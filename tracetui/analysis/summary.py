"""The whole-trace summary: every analysis in one dict (``build_summary``) and the
``tracetui summary`` command (rich tables, or one JSON object with ``--json``).

JSON keys (times in ms where the key says ``_ms``, else µs; see docs/analysis.md):
``source``, ``trace`` (counts), ``gpu_timeline`` {``total_ms``, ``computation_ms``,
``exposed_comm_ms``, ``exposed_memcpy_ms``, ``busy_ms``, ``idle_ms``, ``total_comm_ms``,
``total_memcpy_ms``}, ``gpu_timeline_by_device``, ``kernel_categories`` [{``category``,
``count``, ``total_ms``, ``percent``}], ``kernels`` (top kernels by total time), ``ops``
(top ops by direct GPU time), ``ops_by_shape``, ``streams``, ``idle`` (by class and
histogram), ``launches`` (see :func:`tracetui.analysis.launches.launch_summary`),
``roofline`` (ops with known FLOPs by GPU time, see
:func:`tracetui.analysis.roofline.roofline_table`), ``warnings``, ``memory`` (only when the
trace has ``[memory]`` events: per device the peaks and their owners, see
:func:`tracetui.analysis.memory_doc.memory_summary` and docs/memory.md), and ``counters`` (only when
the trace has counter events: see :func:`tracetui.kineto.counters.counters_summary`), and
``driver`` (only for a driver-call trace: see :func:`tracetui.analysis.driver.driver_summary`
and docs/driver.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..driver.trace import DriverTrace, event_counts
from ..errors import WrongTraceKindError
from ..kineto.counters import counters_summary
from ..session import LinkedTrace
from .categories import KernelCategorizer
from .driver import driver_summary
from .et_summary import et_summary
from .frames import cpu_ops_frame, gpu_events_frame, resolve_categorizer
from .gaps import gap_histogram, idle_gaps, idle_summary
from .gpu_breakdown import gpu_timeline, per_device_timelines, timeline_ms
from .launches import launch_summary
from .memory_doc import memory_summary
from .memsnap_doc import snapshot_summary
from .roofline import roofline_table
from .tables import category_table, kernel_table, op_table, stream_table


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [_plain(r) for r in df.to_dict("records")]


def build_summary(linked: LinkedTrace, categorizer: KernelCategorizer | None = None, top: int = 15) -> dict:
    """Every analysis of the linked trace's Kineto part as one JSON-ready dict.

    ``top`` limits the ``kernels``, ``ops`` and ``ops_by_shape`` lists (the full tables are
    available from :mod:`tracetui.analysis.tables`).  An Execution Trace alone gives
    ``source``, ``et`` (:func:`~tracetui.analysis.et_summary.et_summary`) and ``warnings``.
    Raises :class:`~tracetui.errors.WrongTraceKindError` when nothing is loaded.
    """
    kt = linked.kineto
    if kt is None:
        if linked.et is None:
            raise WrongTraceKindError(None, "`summary` needs a trace")
        # an Execution Trace alone: counts, threads, ops by name and by shape (no times)
        return {"source": linked.title, "et": et_summary(linked.et, top=top),
                "warnings": [w.message for w in linked.all_warnings()]}
    cat = resolve_categorizer(categorizer)
    gpu = gpu_events_frame(kt, cat)
    tl = gpu_timeline(gpu)
    ops = cpu_ops_frame(kt)
    gaps = idle_gaps(kt, gpu)
    span = tl["total"] if tl["total"] > 0 else None
    cats = category_table(gpu)[["category", "count", "total_ms", "percent"]]
    stats = kt.gpu_stats
    out = {
        "source": linked.title,
        "trace": {
            "events": event_counts(kt).kineto, "gpu_events": stats.gpu_events, "gpu_events_unlinked": stats.unlinked,
            "device_work": kt.device_work_counts(),
            "cpu_ops": int(len(ops)), "devices": [d.get("name") for d in kt.device_properties if isinstance(d, dict)],
            "gpu_lanes": [ln.label for ln in kt.lanes if ln.is_gpu],
        },
        "gpu_timeline": timeline_ms(tl),
        "gpu_timeline_by_device": _plain(per_device_timelines(gpu)) if not gpu.empty else [],
        "kernel_categories": _records(cats),
        "kernels": _records(kernel_table(gpu, span_us=span).head(top)),
        "ops": _records(op_table(ops).head(top)),
        "ops_by_shape": _records(op_table(ops, by_shapes=True, only_gpu=True).head(top)),
        "streams": _records(stream_table(gpu, gaps)),
        "idle": {"by_class": _records(idle_summary(gaps)), "histogram": _records(gap_histogram(gaps))},
        "launches": _plain(launch_summary(kt, gpu, tl)),
        "roofline": _records(roofline_table(kt).head(top)),
        "warnings": [w.message for w in linked.all_warnings()],
    }
    memory = snapshot_summary(linked) if linked.snapshot_trace is not None else memory_summary(linked)
    if memory is not None:  # [memory] events (analysis/memory_doc.py); absent when none
        out["memory"] = memory
    counters = counters_summary(kt)
    if counters["events"]:  # counter ranges / C events (kineto/counters.py); absent when none
        out["counters"] = _plain(counters)
    if isinstance(kt, DriverTrace):  # the answers of a driver-call trace (docs/driver.md)
        out["driver"] = _plain(driver_summary(kt))
    return out
