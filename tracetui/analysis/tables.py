"""Per-category, per-kernel, per-stream and per-op tables (pandas), all times in µs.

Inputs are the frames of :mod:`tracetui.analysis.frames`.  "GPU time" below is the *sum*
of event durations (concurrent kernels both count), as in TraceLens's kernel and op
summaries; the timeline breakdown (:mod:`.timeline`) is where overlaps are merged.

Tables by name group by the name's interned code (:func:`name_codes`), exact on the whole
name: pandas hashes a string column's every cell anew (10 ms per cell of a 10 MB name), a
dict of the interned names once per distinct name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..io.interning import intern
from .categories import DEFAULT_CATEGORIES

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd


def _pct(part: pd.Series, whole: float) -> pd.Series:
    return part * (100.0 / whole) if whole > 0 else part * 0.0


def name_codes(names: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int32 code per row, the distinct names as an object array) of a column of names:
    equal names get one code (exact on the whole name), found through a dict, so each row
    costs a cached hash and an identity check (the frames hold the trace's interned names)."""
    codes, uniq = intern(names.tolist())
    out = np.empty(len(uniq), dtype=object)
    out[:] = uniq
    return codes, out


def _by_name(frame: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, list[str], np.ndarray]:
    """``frame`` with its ``name`` column as codes (``_name``), ``keys`` with ``_name`` for
    ``name``, and the names of the codes."""
    codes, uniq = name_codes(frame["name"])
    return frame.assign(_name=codes), ["_name" if k == "name" else k for k in keys], uniq


def category_table(gpu: pd.DataFrame) -> pd.DataFrame:
    """By ``kernel_category``: ``category``, ``count``, ``total_us``, ``total_ms``, ``percent``
    (of the frame's summed GPU time), sorted by total time, largest first."""
    import pandas as pd

    if gpu.empty:
        return pd.DataFrame(columns=["category", "count", "total_us", "total_ms", "percent"])
    g = gpu.groupby("kernel_category", sort=False, observed=True)["dur"].agg(["size", "sum"]).reset_index()
    g.columns = ["category", "count", "total_us"]
    g["total_ms"] = g["total_us"] / 1000.0
    g["percent"] = _pct(g["total_us"], float(gpu["dur"].sum()))
    order = {c: i for i, c in enumerate(DEFAULT_CATEGORIES)}
    g["_o"] = g["category"].map(lambda c: order.get(c, len(order)))
    g = g.sort_values(["total_us", "_o"], ascending=[False, True]).drop(columns="_o")
    g["count"] = g["count"].astype(np.int64)
    return g.reset_index(drop=True)


def _streams_text(values: pd.Series) -> str:
    return ",".join(str(v) for v in sorted(values.dropna().unique().tolist(), key=str))


def kernel_table(gpu: pd.DataFrame, span_us: float | None = None, by_stream: bool = False) -> pd.DataFrame:
    """By GPU event name (and kind): ``name``, ``kind``, ``kernel_category``, ``streams``
    (every "device:stream" it ran on), ``count``, ``total_us``, ``mean_us``, ``min_us``,
    ``max_us``, ``percent`` (of the frame's summed GPU time) and ``percent_of_span``
    (of ``span_us``, e.g. the GPU timeline total, when given).  With ``by_stream`` one row
    per (name, device, stream).  Sorted by total time, largest first.
    """
    import pandas as pd

    cols = ["name", "kind", "kernel_category", "streams", "count", "total_us", "mean_us", "min_us", "max_us",
            "percent", "percent_of_span"]
    if gpu.empty:
        return pd.DataFrame(columns=cols)
    g = gpu.assign(_ds=gpu["device"].astype(str) + ":" + gpu["stream"].astype(str),
                   kind=gpu["kind"].astype(str))
    g, keys, names = _by_name(g, ["name", "kind", "kernel_category"] + (["_ds"] if by_stream else []))
    agg = g.groupby(keys, sort=False, dropna=False).agg(
        count=("dur", "size"), total_us=("dur", "sum"), mean_us=("dur", "mean"), min_us=("dur", "min"),
        max_us=("dur", "max"), streams=("_ds", _streams_text)).reset_index()
    agg["name"] = names[agg["_name"].to_numpy()]
    if by_stream:
        agg = agg.drop(columns="_ds")
    agg["percent"] = _pct(agg["total_us"], float(gpu["dur"].sum()))
    agg["percent_of_span"] = _pct(agg["total_us"], float(span_us)) if span_us else np.nan
    agg["count"] = agg["count"].astype(np.int64)
    return agg.sort_values("total_us", ascending=False, kind="stable")[cols].reset_index(drop=True)


def stream_table(gpu: pd.DataFrame, gaps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (device, stream): ``count``, ``gpu_us`` (summed durations), ``busy_us`` (union),
    ``first_us``/``last_us`` (first start, last end), and from ``gaps`` (see
    :func:`tracetui.analysis.gaps.idle_gaps`) ``gaps``, ``idle_us`` and idle µs per class."""
    import pandas as pd

    from .intervals import union_length

    rows = []
    if gpu.empty:
        return pd.DataFrame(columns=["device", "stream", "count", "gpu_us", "busy_us", "first_us", "last_us"])
    for (dev, st), sub in gpu.groupby(["device", "stream"], sort=True, dropna=False):
        row: dict[str, object] = {
            "device": dev, "stream": st, "count": int(len(sub)), "gpu_us": float(sub["dur"].sum()),
            "busy_us": union_length(sub["ts"].to_numpy(), sub["end"].to_numpy()),
            "first_us": float(sub["ts"].min()), "last_us": float(sub["end"].max()),
        }
        if gaps is not None:
            gs = gaps[(gaps["device"] == dev) & (gaps["stream"] == st)]
            row["gaps"] = int(len(gs))
            row["idle_us"] = float(gs["dur"].sum())
            for cls in ("host_wait", "kernel_to_kernel", "other"):
                row[f"{cls}_us"] = float(gs.loc[gs["idle_class"] == cls, "dur"].sum())
        rows.append(row)
    return pd.DataFrame(rows)


#: how the ops tables count a call nested in a call of the same name (said under each table)
NESTED_CALLS_RULE = ("nested: calls inside a call of the same name; their host and subtree GPU time is counted "
                     "once, in the outer call")


def op_table(ops: pd.DataFrame, by_shapes: bool = False, only_gpu: bool = False) -> pd.DataFrame:
    """By cpu_op name (and with ``by_shapes`` also by ``input_dims``/``input_types``):
    ``count`` (calls), ``nested_calls`` (of those, calls inside a call of the same name
    that the table holds),
    ``host_us`` (summed host durations), ``n_direct_gpu``, ``direct_gpu_us``,
    ``subtree_gpu_us`` (the GPU events under the name's calls), ``mean_direct_gpu_us`` and
    ``percent`` (of the summed direct GPU time of all ops, so the column adds up to 100
    over the table).

    ``ops`` is :func:`~tracetui.analysis.frames.cpu_ops_frame`.  Every time is counted
    once (:data:`NESTED_CALLS_RULE`): ``host_us`` and ``subtree_gpu_us`` sum only the calls
    not nested in a call of the same name that the table holds (``aten::mm`` inside
    ``aten::mm``: the inner call's time is inside the outer's, whose row holds it -- with
    ``by_shapes``, possibly another row); ``direct_gpu_us`` never double counts (a GPU event
    belongs to the innermost op that launched it).  ``only_gpu`` keeps ops that launched
    GPU work directly (TraceLens's ops summary).  Sorted by direct GPU time, then subtree.
    """
    import pandas as pd

    cols = ["name"] + (["input_dims", "input_types"] if by_shapes else []) + [
        "count", "nested_calls", "host_us", "n_direct_gpu", "direct_gpu_us", "subtree_gpu_us", "mean_direct_gpu_us",
        "percent"]
    if ops.empty:
        return pd.DataFrame(columns=cols)
    src = ops[ops["n_direct_gpu"] > 0] if only_gpu else ops
    nested = _inside_counted_call(ops, src)
    src = src.assign(_nested=nested, _host=np.where(nested, 0.0, src["dur"].to_numpy(np.float64)),
                     _subtree=np.where(nested, 0.0, src["subtree_gpu_us"].to_numpy(np.float64)))
    src, keys, names = _by_name(src, ["name"] + (["input_dims", "input_types"] if by_shapes else []))
    agg = src.groupby(keys, sort=False, dropna=False).agg(
        count=("event", "size"), nested_calls=("_nested", "sum"), host_us=("_host", "sum"),
        n_direct_gpu=("n_direct_gpu", "sum"), direct_gpu_us=("direct_gpu_us", "sum"),
        subtree_gpu_us=("_subtree", "sum")).reset_index()
    agg["name"] = names[agg["_name"].to_numpy()]
    agg["nested_calls"] = agg["nested_calls"].astype(np.int64)
    agg["mean_direct_gpu_us"] = agg["direct_gpu_us"] / agg["count"]
    agg["percent"] = _pct(agg["direct_gpu_us"], float(ops["direct_gpu_us"].sum()))
    agg["count"] = agg["count"].astype(np.int64)
    agg["n_direct_gpu"] = agg["n_direct_gpu"].astype(np.int64)
    agg = agg.sort_values(["direct_gpu_us", "subtree_gpu_us", "host_us"], ascending=False, kind="stable")
    return agg[cols].reset_index(drop=True)


def _inside_counted_call(ops: pd.DataFrame, src: pd.DataFrame) -> np.ndarray:
    """Bool per row of ``src``: the op runs inside a same-name op of ``ops`` that is in
    ``src`` too (the table holds that outer call's host and subtree time, this one's
    included, in its row -- another row when the shapes differ).  Walks each op's chain of
    same-name ancestors (``same_name_above``) within ``ops``."""
    import pandas as pd

    out = np.zeros(len(src), dtype=bool)
    if "same_name_above" not in ops or src.empty:
        return out
    events = ops["event"].to_numpy(np.int64)
    above = ops["same_name_above"].to_numpy(np.int64)
    row_of = pd.Index(events)
    up = np.where(above >= 0, row_of.get_indexer(above), -1)  # row in ops of the same-name op above
    mine = row_of.get_indexer(src["event"].to_numpy(np.int64))
    in_src = np.zeros(len(ops), dtype=bool)
    in_src[mine] = True
    cur = up[mine]
    live = np.flatnonzero(cur >= 0)
    while live.size:
        hit = in_src[cur[live]]
        out[live[hit]] = True
        live = live[~hit]
        cur[live] = up[cur[live]]
        live = live[cur[live] >= 0]
    return out
