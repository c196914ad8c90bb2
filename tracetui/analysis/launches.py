"""Launch and pipeline figures: launch delays, runtime call costs, synchronisation,
allocations, copies, launches per profiler step.

Definitions (all times µs, bytes as written by the profiler):

- **launch delay** of a launch call (runtime/driver event that launched GPU work): start
  of its first GPU event minus the start of the call (queueing + launch latency; large
  values mean the GPU was busy with earlier work);
- **call duration**: the host duration of the runtime/driver call itself;
- **synchronisation**: runtime/driver calls named ``cuda|hip`` + ``DeviceSynchronize``,
  ``StreamSynchronize``, ``EventSynchronize`` (host blocking), plus ``StreamWaitEvent``
  (enqueues a wait, listed by name only) and the ``cuda_sync`` events CUPTI records;
- **allocations**: ``[memory]`` instant events (``Bytes`` > 0 allocates, < 0 frees; per
  ``Device Type``: 0 is CPU, anything else a GPU) and ``cudaMalloc``/``hipMalloc``-style
  calls (counted with their host time; their size is not in the trace);
- **copies**: memcpy GPU events by direction (HtoD, DtoH, DtoD, PtoP, HtoH, read from
  the name) with their ``bytes`` arg;
- **per step**: for each ``ProfilerStep#N`` annotation, the launch calls that started
  inside its time span (any thread) and the GPU events they launched
  (:mod:`tracetui.analysis.steps`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..kineto.kinds import (
    BLOCKING_SYNC_RE,
    LAUNCH_KINDS,
    Kind,
    LaunchClass,
    launch_class_of_name,
)
from ..kineto.trace import KinetoTrace
from .memory import memory_model
from .steps import profiler_steps

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd

_DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|PtoP|HtoH|DtoA|AtoD|AtoA|AtoH|HtoA)\b")


def has_launch_records(trace: KinetoTrace) -> bool:
    """Does the trace hold any launch call (a runtime or driver event)?"""
    return bool(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]).any())


def lacks_launch_records(trace: KinetoTrace) -> bool:
    """A trace read from another format than a PyTorch profiler trace (rocprofv3 run without
    HIP tracing, a generic Chrome trace) with GPU work and no launch call at all: its GPU work
    cannot be linked to what launched it, and the status line and ``info`` say "no launch
    records".  (A PyTorch trace says it in its warnings, as before.)"""
    from .. import formats

    return bool(trace.gpu_stats.gpu_events) and formats.other_format(trace) is not None and \
        not has_launch_records(trace)


def _stats(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"count": 0, "total_us": 0.0, "mean_us": 0.0, "median_us": 0.0, "p90_us": 0.0, "max_us": 0.0}
    return {"count": int(v.size), "total_us": float(v.sum()), "mean_us": float(v.mean()),
            "median_us": float(np.median(v)), "p90_us": float(np.percentile(v, 90)), "max_us": float(v.max())}


def launch_classes(trace: KinetoTrace, events: np.ndarray) -> np.ndarray:
    """LaunchClass value per event (by name, computed once per distinct name; events that
    are no runtime/driver call get the class of their name too: filter by kind first)."""
    ids = trace.name_id[events]
    uniq, inv = np.unique(ids, return_inverse=True)
    cls = np.array([int(launch_class_of_name(trace.names[int(u)])) for u in uniq], dtype=np.int64)
    return cls[inv] if events.size else np.zeros(0, np.int64)


def launch_frame(trace: KinetoTrace, gpu: pd.DataFrame) -> pd.DataFrame:
    """One row per launch call that launched GPU work: ``launch``, ``name``,
    ``launch_class`` (kernel_launch, graph_launch, memcpy, memset, ...), ``ts``, ``dur``
    (call duration, µs), ``n_gpu`` (GPU events it launched), ``first_gpu_ts``,
    ``delay_us`` (first GPU start - call start), ``gpu_us`` (their summed duration)."""
    import pandas as pd

    cols = ["launch", "name", "launch_class", "ts", "dur", "n_gpu", "first_gpu_ts", "delay_us", "gpu_us"]
    g = gpu[gpu["launch"] >= 0]
    if g.empty:
        return pd.DataFrame(columns=cols)
    agg = g.groupby("launch", sort=True).agg(n_gpu=("event", "size"), first_gpu_ts=("ts", "min"),
                                             gpu_us=("dur", "sum")).reset_index()
    ev = agg["launch"].to_numpy().astype(np.int64)
    cls = launch_classes(trace, ev)
    agg["name"] = np.asarray(trace.names, dtype=object)[trace.name_id[ev]]
    class_names = np.array([c.name.lower() for c in LaunchClass], dtype=object)
    agg["launch_class"] = class_names[np.asarray(cls, dtype=np.int64)]
    agg["ts"] = trace.ts[ev]
    agg["dur"] = trace.dur[ev]
    agg["delay_us"] = agg["first_gpu_ts"] - agg["ts"]
    return agg[cols]


def launch_class_stats(lf: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per launch class of a :func:`launch_frame` (sorted by class name): ``delay`` and
    ``call`` (count, total, mean, median, p90, max of the launch delays and of the call
    durations, µs) and ``gpu_us`` (summed duration of the GPU events launched)."""
    return {c: {"delay": _stats(sub["delay_us"].to_numpy()), "call": _stats(sub["dur"].to_numpy()),
                "gpu_us": float(sub["gpu_us"].sum())}
            for c, sub in lf.groupby("launch_class", sort=True)}


def _sync_figures(trace: KinetoTrace) -> dict[str, Any]:
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]))
    cls = launch_classes(trace, calls)
    sync = calls[cls == int(LaunchClass.SYNC)]
    by_name: dict[str, dict[str, float]] = {}
    blocking_us = 0.0
    blocking_n = 0
    for nid in np.unique(trace.name_id[sync]).tolist():
        sel = sync[trace.name_id[sync] == nid]
        name = trace.names[nid]
        by_name[name] = {"count": int(sel.size), "total_us": float(trace.dur[sel].sum())}
        if BLOCKING_SYNC_RE.search(name):
            blocking_us += float(trace.dur[sel].sum())
            blocking_n += int(sel.size)
    cupti = np.flatnonzero(trace.kind == int(Kind.SYNC))
    return {"blocking_calls": blocking_n, "blocking_us": blocking_us, "by_name": by_name,
            "cuda_sync_events": int(cupti.size), "cuda_sync_us": float(trace.dur[cupti].sum())}


def _runtime_by_class(trace: KinetoTrace) -> dict[str, dict[str, float]]:
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]))
    cls = launch_classes(trace, calls)
    out = {}
    for c in LaunchClass:
        sel = calls[cls == int(c)]
        if sel.size:
            out[c.name.lower()] = {"count": int(sel.size), "total_us": float(trace.dur[sel].sum()),
                                   "mean_us": float(trace.dur[sel].mean())}
    return out


def _allocation_figures(trace: KinetoTrace) -> dict[str, Any]:
    """``[memory]`` events per device from the allocation model (``analysis/memory.py``; keys
    "gpu N" / "cpu" as before ``tracetui memory`` existed), and the malloc/free calls."""
    m = memory_model(trace)
    per: dict[str, dict[str, float]] = {}
    for d in m.devices:
        b = m.nbytes[m.rows_of(d)]
        per["cpu" if d.device_type == 0 else f"gpu {d.device_id}"] = {
            "allocs": int((b > 0).sum()), "alloc_bytes": int(b[b > 0].sum()), "frees": int((b < 0).sum()),
            "freed_bytes": int(-b[b < 0].sum()), "peak_allocated_bytes": int(m.allocated[m.rows_of(d)].max())}
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]))
    cls = launch_classes(trace, calls)
    mal = calls[cls == int(LaunchClass.MALLOC)]
    fre = calls[cls == int(LaunchClass.FREE)]
    return {"memory_events": m.n_rows + m.unreadable, "by_device": per,
            "malloc_calls": int(mal.size), "malloc_us": float(trace.dur[mal].sum()),
            "free_calls": int(fre.size), "free_us": float(trace.dur[fre].sum())}


def copy_direction(name: str) -> str:
    """Direction of a memcpy GPU event from its name ("Memcpy HtoD (Pageable -> Device)" ->
    "HtoD"); "other" when the name gives none."""
    m = _DIRECTION.search(name)
    return m.group(1) if m else "other"


def copy_table(gpu: pd.DataFrame) -> pd.DataFrame:
    """Memcpy events by direction: ``direction``, ``count``, ``bytes``, ``total_us``, ``gb_per_s``
    (bytes / summed time).  Memsets are one more row (``direction`` "memset")."""
    import pandas as pd

    rows = []
    kinds = gpu["kind"].astype(str)
    mc = gpu[kinds == "memcpy"]
    dirs = mc["name"].map(copy_direction)
    for d, sub in mc.groupby(dirs, sort=True):
        rows.append((d, sub))
    ms = gpu[kinds == "memset"]
    if not ms.empty:
        rows.append(("memset", ms))
    out = []
    for d, sub in rows:
        nbytes = float(np.nansum(sub["bytes"].to_numpy()))
        t = float(sub["dur"].sum())
        out.append({"direction": d, "count": int(len(sub)), "bytes": int(nbytes), "total_us": t,
                    "gb_per_s": nbytes / (t * 1e3) if t > 0 else 0.0})
    return pd.DataFrame(out, columns=["direction", "count", "bytes", "total_us", "gb_per_s"])


def step_table(trace: KinetoTrace, launches: pd.DataFrame, steps: np.ndarray | None = None) -> pd.DataFrame:
    """Per step annotation (host side; default every ``ProfilerStep#N``, else the event ids
    ``steps``, see :mod:`tracetui.analysis.steps`): ``step``, ``ts``, ``dur`` (µs),
    ``kernel_launches`` (kernel launch calls started inside it, any thread),
    ``graph_launches``, ``gpu_events`` (launched by calls inside it), ``gpu_us``."""
    import pandas as pd

    cols = ["step", "ts", "dur", "kernel_launches", "graph_launches", "gpu_events", "gpu_us"]
    steps = profiler_steps(trace).tolist() if steps is None else [int(i) for i in steps]
    if not steps:
        return pd.DataFrame(columns=cols)
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]))
    cls = launch_classes(trace, calls)
    k_ts = np.sort(trace.ts[calls[cls == int(LaunchClass.KERNEL_LAUNCH)]])
    g_ts = np.sort(trace.ts[calls[cls == int(LaunchClass.GRAPH_LAUNCH)]])
    lo = launches.sort_values("ts")
    l_ts = lo["ts"].to_numpy()
    l_n = np.concatenate(([0], np.cumsum(lo["n_gpu"].to_numpy())))
    l_us = np.concatenate(([0.0], np.cumsum(lo["gpu_us"].to_numpy())))
    rows = []
    for s in steps:
        a, b = float(trace.ts[s]), float(trace.ts[s] + trace.dur[s])
        i0, i1 = np.searchsorted(l_ts, a, "left"), np.searchsorted(l_ts, b, "left")
        rows.append({"step": trace.names[trace.name_id[s]], "ts": a, "dur": b - a,
                     "kernel_launches": int(np.searchsorted(k_ts, b, "left") - np.searchsorted(k_ts, a, "left")),
                     "graph_launches": int(np.searchsorted(g_ts, b, "left") - np.searchsorted(g_ts, a, "left")),
                     "gpu_events": int(l_n[i1] - l_n[i0]), "gpu_us": float(l_us[i1] - l_us[i0])})
    return pd.DataFrame(rows, columns=cols)


def launch_summary(trace: KinetoTrace, gpu: pd.DataFrame, timeline_us: dict[str, float] | None = None
                   ) -> dict[str, Any]:
    """Every launch/pipeline figure as one JSON-ready dict (µs, bytes; see module docstring).

    Keys: ``launch_delay`` and ``call_duration`` (stats per launch class: count, total,
    mean, median, p90, max), ``runtime_calls`` (count/total/mean per class, every call),
    ``sync``, ``allocations``, ``copies`` (rows of :func:`copy_table`), ``steps`` (rows of
    :func:`step_table`), ``compute_memcpy_ratio`` (timeline computation / memcpy time,
    None without memcpy) and ``kernel_memcpy_ratio`` (summed kernel / memcpy durations).
    """
    lf = launch_frame(trace, gpu)
    per_class = launch_class_stats(lf)
    delay = {c: st["delay"] for c, st in per_class.items()}
    calldur = {c: st["call"] for c, st in per_class.items()}
    kinds = gpu["kind"].astype(str)
    kernel_us = float(gpu.loc[kinds == "kernel", "dur"].sum())
    memcpy_us = float(gpu.loc[kinds == "memcpy", "dur"].sum())
    out: dict[str, Any] = {
        "launch_delay": delay,
        "call_duration": calldur,
        "runtime_calls": _runtime_by_class(trace),
        "sync": _sync_figures(trace),
        "allocations": _allocation_figures(trace),
        "copies": copy_table(gpu).to_dict("records"),
        "steps": step_table(trace, lf).to_dict("records"),
        "kernel_memcpy_ratio": kernel_us / memcpy_us if memcpy_us > 0 else None,
        "compute_memcpy_ratio": None,
    }
    if timeline_us is not None and timeline_us.get("total_memcpy", 0.0) > 0:
        out["compute_memcpy_ratio"] = timeline_us["computation"] / timeline_us["total_memcpy"]
    return out
