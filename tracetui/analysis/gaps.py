"""Idle gaps per GPU stream, classified like HTA's idle-time breakdown.

On one stream (device, stream), GPU events sorted by start; a *gap* is the time between
the end of everything that ran before (cumulative max of ends) and the start of the next
event, when positive.  Each gap is classified (column ``idle_class``):

- ``host_wait``: the next event's launch call (cudaLaunchKernel ...) *started after* the
  previous work ended: the GPU waited for the host to enqueue work;
- ``kernel_to_kernel``: not host wait, and the gap is shorter than ``kernel_gap_us``
  (default 5 µs): the launch was already queued, the gap is launch/scheduling overhead
  between back-to-back kernels (HTA's "kernel wait"; HTA's threshold is 30 ns, pass
  ``kernel_gap_us=0.03`` to reproduce it);
- ``other``: everything else: gaps of at least ``kernel_gap_us`` whose launch came
  before the stream went idle (waits on events/other streams), or before GPU events whose
  launch is not in the trace (those can never be host waits).

What the host was doing: ``host_event`` is the innermost host event on the thread that
launched the next GPU event, open at the gap's midpoint (a python function, op, runtime
call such as ``cudaStreamSynchronize``), and ``host_op`` the innermost cpu_op at or above
it (-1 when the thread was outside any op); ``next_op`` is the cpu_op that launched the
next event.  All times are µs relative to the trace origin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..kineto.trace import KinetoTrace
from ..units import duration_short_us
from .categories import KernelCategorizer
from .frames import gpu_events_frame, host_event_at

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd

#: Default threshold (µs) under which a gap with an already queued launch is kernel-to-kernel.
DEFAULT_KERNEL_GAP_US = 5.0
IDLE_CLASSES = ("host_wait", "kernel_to_kernel", "other")
#: Bin edges (µs) of :func:`gap_histogram`.
HISTOGRAM_EDGES_US = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1e3, 1e4, 1e5, np.inf)

GAP_COLUMNS = ("device", "stream", "start", "end", "dur", "idle_class", "prev_event", "next_event", "next_name",
               "next_launch", "launch_ts", "next_op", "next_op_name", "host_event", "host_event_name", "host_op",
               "host_op_name")


def idle_gaps(trace: KinetoTrace, gpu: pd.DataFrame | None = None, categorizer: KernelCategorizer | None = None,
              kernel_gap_us: float = DEFAULT_KERNEL_GAP_US, min_gap_us: float = 0.0,
              window: tuple[float, float] | None = None) -> pd.DataFrame:
    """Every idle gap on every GPU stream (columns :data:`GAP_COLUMNS`), by stream then time.

    ``gpu`` is a :func:`~tracetui.analysis.frames.gpu_events_frame` (built when None).
    Gaps shorter than or equal to ``min_gap_us`` are dropped.  With ``window`` = (lo, hi)
    gaps are clipped to it and those outside dropped (``dur`` is the clipped length).
    """
    import pandas as pd

    if gpu is None:
        gpu = gpu_events_frame(trace, categorizer)
    if gpu.empty:
        return pd.DataFrame(columns=list(GAP_COLUMNS))
    g = gpu[["event", "name", "device", "stream", "ts", "end", "launch", "launch_ts", "op", "op_name"]]
    g = g.assign(_d=g["device"].astype(str), _s=g["stream"].astype(str))
    g = g.sort_values(["_d", "_s", "ts"], kind="stable").reset_index(drop=True)
    prev_end = g.groupby(["_d", "_s"], sort=False)["end"].cummax()
    prev_end = prev_end.groupby([g["_d"], g["_s"]], sort=False).shift(1)
    prev_ev = g.groupby(["_d", "_s"], sort=False)["event"].shift(1)
    gap = g["ts"] - prev_end
    keep = (gap > min_gap_us).to_numpy() & prev_end.notna().to_numpy()
    nx = g[keep]
    start = prev_end[keep].to_numpy()
    stop = nx["ts"].to_numpy()
    launch_ts = nx["launch_ts"].to_numpy()
    has_launch = nx["launch"].to_numpy() >= 0
    host_wait = has_launch & (launch_ts > start)
    short = (stop - start) < kernel_gap_us
    idle_class = np.where(host_wait, "host_wait", np.where(short, "kernel_to_kernel", "other"))
    launches = nx["launch"].to_numpy().astype(np.int64)
    lane = np.where(has_launch, trace.lane_of[np.maximum(launches, 0)], -1).astype(np.int64)
    mid = (start + stop) / 2.0
    host_ev = host_event_at(trace, lane, mid)
    host_op = np.where(host_ev >= 0, trace.cpu_op_of[np.maximum(host_ev, 0)], -1).astype(np.int64)
    names = np.asarray(trace.names, dtype=object)

    def name_of(idx: np.ndarray) -> np.ndarray:
        out = np.full(idx.shape, None, dtype=object)
        ok = idx >= 0
        out[ok] = names[trace.name_id[idx[ok]]]
        return out

    df = pd.DataFrame({
        "device": nx["device"].to_numpy(),
        "stream": nx["stream"].to_numpy(),
        "start": start,
        "end": stop,
        "dur": stop - start,
        "idle_class": idle_class,
        "prev_event": prev_ev[keep].to_numpy().astype(np.int64),
        "next_event": nx["event"].to_numpy().astype(np.int64),
        "next_name": nx["name"].to_numpy(),
        "next_launch": launches,
        "launch_ts": launch_ts,
        "next_op": nx["op"].to_numpy().astype(np.int64),
        "next_op_name": nx["op_name"].to_numpy(),
        "host_event": host_ev,
        "host_event_name": name_of(host_ev),
        "host_op": host_op,
        "host_op_name": name_of(host_op),
    }, columns=list(GAP_COLUMNS))
    if window is not None:
        lo, hi = window
        s = np.maximum(df["start"].to_numpy(), lo)
        e = np.minimum(df["end"].to_numpy(), hi)
        inside = e > s
        df = df[inside].assign(start=s[inside], end=e[inside], dur=(e - s)[inside])
    return df.reset_index(drop=True)


def idle_summary(gaps: pd.DataFrame) -> pd.DataFrame:
    """By ``idle_class``: ``count``, ``total_us``, ``mean_us``, ``max_us``, ``percent`` (of all idle)."""
    import pandas as pd

    rows = []
    total = float(gaps["dur"].sum()) if not gaps.empty else 0.0
    for cls in IDLE_CLASSES:
        d = gaps.loc[gaps["idle_class"] == cls, "dur"] if not gaps.empty else pd.Series(dtype=float)
        rows.append({"idle_class": cls, "count": int(d.size), "total_us": float(d.sum()),
                     "mean_us": float(d.mean()) if d.size else 0.0, "max_us": float(d.max()) if d.size else 0.0,
                     "percent": 100.0 * float(d.sum()) / total if total > 0 else 0.0})
    return pd.DataFrame(rows)


def gap_histogram(gaps: pd.DataFrame, edges: tuple[float, ...] = HISTOGRAM_EDGES_US) -> pd.DataFrame:
    """Gaps binned by length: ``bin`` (label like "5-10 µs"), ``lo_us``, ``hi_us``, ``count``,
    ``total_us`` and the count per idle class (``host_wait``, ``kernel_to_kernel``, ``other``)."""
    import pandas as pd

    e = np.asarray(edges, dtype=np.float64)
    d = gaps["dur"].to_numpy(dtype=np.float64) if not gaps.empty else np.zeros(0)
    cls = gaps["idle_class"].to_numpy() if not gaps.empty else np.zeros(0, dtype=object)
    b = np.clip(np.searchsorted(e, d, side="right") - 1, 0, e.size - 2)
    rows = []
    for k in range(e.size - 1):
        m = b == k
        lo, hi = e[k], e[k + 1]
        label = f"≥ {duration_short_us(lo)}" if np.isinf(hi) else f"{duration_short_us(lo)}–{duration_short_us(hi)}"
        row = {"bin": label, "lo_us": float(lo), "hi_us": float(hi), "count": int(m.sum()),
               "total_us": float(d[m].sum())}
        for c in IDLE_CLASSES:
            row[c] = int((m & (cls == c)).sum())
        rows.append(row)
    return pd.DataFrame(rows)

