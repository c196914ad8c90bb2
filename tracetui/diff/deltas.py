"""Summary deltas of a diff (A, B, B - A) and the HTA-compatible tables, from the analysis
functions ``tracetui summary`` uses, applied to the compared steps' events.

Per-step means (every number divided by the side's number of compared steps):

* ``gpu_timeline``: :func:`~tracetui.analysis.gpu_breakdown.gpu_timeline` of each step's GPU
  events (those whose launch is in the step, :mod:`tracetui.analysis.steps`), averaged;
* ``kernel_categories``: :func:`~tracetui.analysis.tables.category_table`;
* ``kernels``: :func:`~tracetui.analysis.tables.kernel_table` (by name and kind);
* ``top_ops``: :func:`~tracetui.analysis.tables.op_table` of the cpu_ops that start in the steps;
* ``launches``: :func:`~tracetui.analysis.launches.launch_class_stats` (delays and call
  durations per launch class; counts per step, the statistics over every launch);
* ``idle``: :func:`~tracetui.analysis.gaps.idle_gaps` between the steps' GPU events on each
  stream (a gap between two steps is not counted), by class.

Totals over the compared steps (HolisticTraceAnalysis's ``TraceDiff.compare_traces``):
``by_name.cpu`` (every host event that starts in a step), ``by_name.gpu`` (kernels, memcpys
and memsets launched in a step) and ``ops`` (the ``op_table`` of the cpu_ops that start in a
step).  Times are µs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..analysis.frames import cpu_ops_frame, per_trace
from ..analysis.gaps import IDLE_CLASSES, idle_gaps, idle_summary
from ..analysis.gpu_breakdown import TIMELINE_KEYS, gpu_timeline
from ..analysis.launches import launch_class_stats, launch_frame
from ..analysis.tables import category_table, kernel_table, op_table
from .compare import SideData, TraceDiff


def _gpu_rows(sd: SideData) -> pd.DataFrame:
    """The side's GPU event frame restricted to its compared steps, with a ``_step`` column."""
    gpu = sd.gpu
    step = np.full(sd.side.forest.trace.n_events, -1, dtype=np.int64)
    step[sd.gpu_events] = sd.gpu_step
    s = step[gpu["event"].to_numpy(dtype=np.int64)]
    return gpu[s >= 0].assign(_step=s[s >= 0])


def _ops_in_steps(sd: SideData) -> pd.DataFrame:
    kt = sd.side.forest.trace
    frame = per_trace(kt, "cpu_ops_frame", cpu_ops_frame)
    in_step = np.zeros(kt.n_events, dtype=bool)
    in_step[sd.host_events] = True
    return frame[in_step[frame["event"].to_numpy(dtype=np.int64)]]


def _timeline(g: pd.DataFrame, n: int) -> dict[str, float]:
    out = dict.fromkeys(TIMELINE_KEYS, 0.0)
    for _, sub in g.groupby("_step", sort=True):
        for k, v in gpu_timeline(sub).items():
            out[k] += v
    return {k: v / max(n, 1) for k, v in out.items()}


def _idle(sd: SideData, g: pd.DataFrame, n: int) -> pd.DataFrame:
    kt = sd.side.forest.trace
    gaps = idle_gaps(kt, g.drop(columns="_step"))
    if not gaps.empty:
        step = np.full(kt.n_events, -1, dtype=np.int64)
        step[g["event"].to_numpy(dtype=np.int64)] = g["_step"].to_numpy()
        same = step[gaps["prev_event"].to_numpy(dtype=np.int64)] == step[gaps["next_event"].to_numpy(dtype=np.int64)]
        gaps = gaps[same]
    out = idle_summary(gaps)[["idle_class", "count", "total_us"]]
    return out.assign(count=out["count"] / max(n, 1), total_us=out["total_us"] / max(n, 1))


def _launches(sd: SideData, g: pd.DataFrame, n: int) -> dict[str, dict[str, float]]:
    kt = sd.side.forest.trace
    stats = launch_class_stats(launch_frame(kt, g))
    out = {}
    for cls, st in stats.items():
        d, c = st["delay"], st["call"]
        out[cls] = {"count": d["count"] / max(n, 1), "delay_mean_us": d["mean_us"], "delay_median_us": d["median_us"],
                    "delay_p90_us": d["p90_us"], "call_mean_us": c["mean_us"], "gpu_us": st["gpu_us"] / max(n, 1)}
    return out


def side_numbers(sd: SideData) -> dict[str, Any]:
    """Every per-step-mean table of one side (module docstring), as frames and dicts."""
    n = sd.side.n_steps
    g = _gpu_rows(sd)
    cats = category_table(g)[["category", "count", "total_us"]]
    kern = kernel_table(g)[["name", "kind", "kernel_category", "count", "total_us"]]
    ops = op_table(_ops_in_steps(sd))[["name", "count", "host_us", "direct_gpu_us", "subtree_gpu_us"]]
    per = max(n, 1)
    return {
        "gpu_timeline": _timeline(g, n),
        "kernel_categories": cats.assign(count=cats["count"] / per, total_us=cats["total_us"] / per),
        "kernels": kern.assign(count=kern["count"] / per, total_us=kern["total_us"] / per),
        "top_ops": ops.assign(count=ops["count"] / per, host_us=ops["host_us"] / per,
                              direct_gpu_us=ops["direct_gpu_us"] / per, subtree_gpu_us=ops["subtree_gpu_us"] / per),
        "launches": _launches(sd, g, n),
        "idle": _idle(sd, g, n),
    }


def _join(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    """Outer join of two tables on ``keys``: each value as ``<v>_a``, ``<v>_b`` (0 where absent)."""
    m = pd.merge(a[keys + values], b[keys + values], on=keys, how="outer", suffixes=("_a", "_b"), sort=False)
    for v in values:
        for s in ("_a", "_b"):
            m[v + s] = m[v + s].fillna(0.0)
    return m


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for r in df.to_dict("records"):
        out.append({k: (int(v) if isinstance(v, (np.integer,)) else float(v) if isinstance(v, np.floating) else v)
                    for k, v in r.items()})
    return out


def _by_abs(df: pd.DataFrame, col: str, top: int | None) -> pd.DataFrame:
    order = np.argsort(-np.abs(df[col].to_numpy(dtype=np.float64)), kind="stable")
    out = df.iloc[order]
    return out.head(top) if top is not None else out


def summary_deltas(d: TraceDiff, top: int = 15) -> dict[str, Any]:
    """A, B and delta of every summary table (per-step means; see the module docstring)."""
    na, nb = side_numbers(d.a), side_numbers(d.b)
    tl = {k: {"a_us": na["gpu_timeline"][k], "b_us": nb["gpu_timeline"][k],
              "delta_us": nb["gpu_timeline"][k] - na["gpu_timeline"][k]} for k in TIMELINE_KEYS}
    cats = _join(na["kernel_categories"], nb["kernel_categories"], ["category"], ["count", "total_us"])
    cats["delta_us"] = cats["total_us_b"] - cats["total_us_a"]
    kern = _join(na["kernels"], nb["kernels"], ["name", "kind", "kernel_category"], ["count", "total_us"])
    kern["delta_us"] = kern["total_us_b"] - kern["total_us_a"]
    ops = _join(na["top_ops"], nb["top_ops"], ["name"], ["count", "host_us", "direct_gpu_us", "subtree_gpu_us"])
    ops["delta_direct_gpu_us"] = ops["direct_gpu_us_b"] - ops["direct_gpu_us_a"]
    idle = _join(na["idle"], nb["idle"], ["idle_class"], ["count", "total_us"])
    idle["delta_us"] = idle["total_us_b"] - idle["total_us_a"]
    idle = idle.set_index("idle_class").reindex(list(IDLE_CLASSES)).reset_index()
    launches = {}
    for cls in sorted(set(na["launches"]) | set(nb["launches"])):
        la, lb = na["launches"].get(cls, {}), nb["launches"].get(cls, {})
        keys = list(la or lb)
        launches[cls] = {k: {"a": la.get(k, 0.0), "b": lb.get(k, 0.0), "delta": lb.get(k, 0.0) - la.get(k, 0.0)}
                         for k in keys}
    return {
        "gpu_timeline": tl,
        "kernel_categories": _records(_by_abs(cats, "delta_us", None)),
        "kernels": _records(_by_abs(kern, "delta_us", top)),
        "top_ops": _records(_by_abs(ops, "delta_direct_gpu_us", top)),
        "launches": launches,
        "idle": _records(idle),
    }


def _by_name(events: np.ndarray, kt, kinds_ok: np.ndarray | None = None) -> pd.DataFrame:
    if kinds_ok is not None:
        events = events[kinds_ok]
    ids = kt.name_id[events]
    cnt = np.bincount(ids, minlength=len(kt.names))
    dur = np.bincount(ids, weights=kt.dur[events], minlength=len(kt.names))
    nz = np.flatnonzero(cnt)
    return pd.DataFrame({"name": np.asarray(kt.names, dtype=object)[nz], "count": cnt[nz].astype(np.int64),
                         "dur_us": dur[nz]})


def hta_tables(d: TraceDiff) -> dict[str, Any]:
    """``by_name`` {``cpu``, ``gpu``} and ``ops``: totals over the compared steps (module docstring)."""
    out: dict[str, Any] = {"by_name": {}}
    for side_key, ev_attr in (("cpu", "host_events"), ("gpu", "gpu_events")):
        ta = _by_name(getattr(d.a, ev_attr), d.a.side.forest.trace)
        tb = _by_name(getattr(d.b, ev_attr), d.b.side.forest.trace)
        m = _join(ta, tb, ["name"], ["count", "dur_us"])
        for c in ("count_a", "count_b"):
            m[c] = m[c].astype(np.int64)
        m["delta_us"] = m["dur_us_b"] - m["dur_us_a"]
        out["by_name"][side_key] = _records(_by_abs(m, "delta_us", None)[["name", "count_a", "count_b", "dur_us_a",
                                                                           "dur_us_b", "delta_us"]])
    oa = op_table(_ops_in_steps(d.a))
    ob = op_table(_ops_in_steps(d.b))
    ops = _join(oa, ob, ["name"], ["count", "direct_gpu_us", "subtree_gpu_us"])
    for c in ("count_a", "count_b"):
        ops[c] = ops[c].astype(np.int64)
    ops["delta_direct_gpu_us"] = ops["direct_gpu_us_b"] - ops["direct_gpu_us_a"]
    out["ops"] = _records(_by_abs(ops, "delta_direct_gpu_us", None))
    return out

