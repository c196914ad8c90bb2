"""pandas DataFrames built from a loaded :class:`~tracetui.kineto.trace.KinetoTrace`.

Everything downstream (tables, timeline, gaps, launches, exports) starts from two frames:

- :func:`gpu_events_frame`: one row per GPU work event (kernel, memcpy, memset) with its
  ``kernel_category``, device/stream, times, its launch (runtime/driver event), the
  innermost and the outermost cpu_op above that launch, and the launch configuration
  read from the event's args (grid, block, registers, shared memory, occupancy, bytes).
- :func:`cpu_ops_frame`: one row per cpu_op with its host duration, input shapes and the
  GPU time it launched directly and in its whole subtree.

Units: every time column is **microseconds** (``ts``/``end`` relative to the trace's
``origin_us``, like the model); a column ending in ``_ms`` is milliseconds.
Node ids in the frames are the model's event indices (``-1`` means none).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from ..kineto import schema
from ..kineto.kinds import GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.launch_facts import blocks_texts, external_ids_are_correlations
from ..kineto.rollup import subtree_gpu_totals
from ..kineto.trace import KinetoTrace
from ..tree.propagate import fill_down
from .categories import KernelCategorizer, get_categorizer

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd

_GPU_WORK = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.uint8)
_KIND_WORD = {int(Kind.KERNEL): "kernel", int(Kind.MEMCPY): "memcpy", int(Kind.MEMSET): "memset"}

#: Columns of :func:`gpu_events_frame`, in order.
GPU_COLUMNS = (
    "event", "kind", "name", "kernel_category", "device", "stream", "ts", "dur", "end", "correlation",
    "external_id", "launch", "launch_name", "launch_ts", "launch_dur", "op", "op_name", "top_op",
    "top_op_name", "grid", "block", "grid_unit", "blocks", "external_id_is_correlation", "registers",
    "shared_mem", "blocks_per_sm", "warps_per_sm", "occupancy", "bytes",
)


class _GpuArgs(msgspec.Struct, gc=False):
    """The args of a kernel/memcpy/memset that the tables show (all optional).  grid and
    block stay JSON text: kernels repeat a few distinct shapes (see :class:`_DimTexts`)."""

    grid: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b""), name=schema.GRID)
    block: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b""), name=schema.BLOCK)
    registers: Any = msgspec.field(default=None, name=schema.REGISTERS_PER_THREAD)
    shared_mem: Any = msgspec.field(default=None, name=schema.SHARED_MEMORY)
    blocks_per_sm: Any = msgspec.field(default=None, name=schema.BLOCKS_PER_SM)
    warps_per_sm: Any = msgspec.field(default=None, name=schema.WARPS_PER_SM)
    occupancy: Any = msgspec.field(default=None, name=schema.EST_OCCUPANCY)
    nbytes: Any = msgspec.field(default=None, name=schema.BYTES)


class _OpArgs(msgspec.Struct, gc=False):
    """Shapes and types of a cpu_op, kept as JSON text: ops repeat a few distinct shapes,
    so each distinct text is decoded once (:func:`_op_shape_texts`)."""

    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name=schema.INPUT_DIMS)
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name=schema.INPUT_TYPE)


_GPU_ARG_FIELDS = ("grid", "block", "registers", "shared_mem", "blocks_per_sm", "warps_per_sm", "occupancy",
                   "nbytes")


_CACHE: dict[int, tuple[weakref.ref, dict[str, Any]]] = {}


def per_trace(trace: KinetoTrace, key: str, compute: Callable[[KinetoTrace], Any]) -> Any:
    """``compute(trace)``, computed once per loaded trace (the model does not change after
    loading); dropped with the trace.  Callers must not modify the returned arrays."""
    entry = _CACHE.get(id(trace))
    if entry is None or entry[0]() is not trace:
        tid = id(trace)
        # the callback holds the dict itself: at interpreter exit the module's globals are
        # already None when the last traces are collected
        entry = (weakref.ref(trace, lambda _ref, tid=tid, cache=_CACHE: cache.pop(tid, None)), {})
        _CACHE[tid] = entry
    values = entry[1]
    if key not in values:
        values[key] = compute(trace)
    return values[key]


def resolve_categorizer(categorizer: KernelCategorizer | None) -> KernelCategorizer:
    """The given categorizer, or the default one (user rules file if configured, then defaults)."""
    return categorizer if categorizer is not None else get_categorizer()


def gpu_work_events(trace: KinetoTrace) -> np.ndarray:
    """Event indices of every kernel, memcpy and memset, in file order."""
    return np.flatnonzero(np.isin(trace.kind, _GPU_WORK))


def decode_args_batch(trace: KinetoTrace, events: np.ndarray, struct: type) -> list[Any]:
    """The args of many events decoded into ``struct`` (see :meth:`KinetoTrace.args_batch`)."""
    return trace.args_batch(events, struct)


def _dims_texts(values: list[Any]) -> list[str | None]:
    """``[564, 1, 1]`` -> ``"564,1,1"`` for each value (cached per distinct list); None stays None."""
    cache: dict[Any, str | None] = {}
    out: list[str | None] = []
    for v in values:
        key = tuple(v) if isinstance(v, list) else v
        try:
            text = cache[key]
        except KeyError:
            if v is None:
                text = None
            elif isinstance(v, (list, tuple)):
                text = ",".join(str(x) for x in v)
            else:
                text = str(v)
            cache[key] = text
        except TypeError:  # unhashable (nested lists): no cache
            text = ",".join(str(x) for x in v)
        out.append(text)
    return out


_PLAIN_NUMBER_TYPES = {int, float, type(None)}


#: a grid/block text that cannot be decoded (its event's args count as absent)
_UNDECODABLE = object()


class _DimTexts(dict):
    """raw JSON bytes of a grid/block -> its :func:`_dims_texts` text; decoded once per distinct text."""

    def __missing__(self, raw: bytes) -> Any:
        try:
            text = _dims_texts([msgspec.json.decode(raw)])[0] if raw else None
        except msgspec.DecodeError:
            text = _UNDECODABLE
        self[raw] = text
        return text


def nums_or_nan(values: list[Any]) -> np.ndarray:
    """Numbers as float64; anything else (None, text, lists, booleans) NaN.

    Numeric text is read as its number (``"12"`` -> 12.0), as ``pandas.to_numeric`` does."""
    import pandas as pd

    if set(map(type, values)) <= _PLAIN_NUMBER_TYPES:  # ints, floats, None: numpy converts directly
        try:
            return np.array(values, dtype=np.float64).reshape(len(values))
        except (OverflowError, ValueError, TypeError):
            pass
    arr = np.array([np.nan if v is None or isinstance(v, bool) else v for v in values], dtype=object)
    return pd.to_numeric(pd.Series(arr, dtype=object), errors="coerce").to_numpy(dtype=np.float64)


#: rows of :func:`host_event_at` looked up together (bounds its temporaries: ~10 arrays of this
#: many int64 values, whatever the number of rows: a snapshot's history has tens of millions)
HOST_CHUNK = 1 << 20


def host_event_at(trace: KinetoTrace, lanes: np.ndarray, t: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Innermost host event on lane ``lanes[i]`` open at time ``t[i]`` (-1: none; -1 lanes too),
    as ``dtype``.

    An event open at ``t`` includes its start and end instants.  Per lane: the last event that
    started at or before ``t`` (the deepest of those starting together), then up its parents
    while they ended before ``t``.  Rows are looked up :data:`HOST_CHUNK` at a time."""
    out = np.full(t.shape, -1, dtype=dtype)
    if not t.size:
        return out
    n = trace.n_events
    host = np.flatnonzero((trace.lane_of >= 0) & (trace.parent[:n] >= 0)
                          & ~np.isin(trace.kind, [int(k) for k in GPU_KINDS]) & (trace.kind != int(Kind.INSTANT)))
    end = trace.ts + trace.dur
    parent = trace.parent.astype(np.int64)
    depth_max = int(trace.depth.max()) + 1 if trace.depth.size else 1
    per_lane: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # lane -> (its host events by start, their starts)
    for lo in range(0, t.size, HOST_CHUNK):
        ln_part, t_part = lanes[lo:lo + HOST_CHUNK], t[lo:lo + HOST_CHUNK]
        for ln in np.unique(ln_part[ln_part >= 0]).tolist():
            got = per_lane.get(ln)
            if got is None:
                evs = host[trace.lane_of[host] == ln]
                evs = evs[np.lexsort((trace.depth[evs], trace.ts[evs]))]  # a child starting with its parent after it
                got = per_lane[ln] = (evs, trace.ts[evs])
            evs, starts = got
            if not evs.size:
                continue
            sel = np.flatnonzero(ln_part == ln)
            ts_sel = t_part[sel]
            pos = np.searchsorted(starts, ts_sel, side="right") - 1
            cand = np.where(pos >= 0, evs[np.maximum(pos, 0)], -1)
            del pos
            for _ in range(depth_max):
                is_ev = (cand >= 0) & (cand < n)
                bad = is_ev & (end[np.clip(cand, 0, n - 1)] < ts_sel)
                if not bad.any():
                    break
                cand = np.where(bad, parent[np.maximum(cand, 0)], cand)
            out[lo + sel] = np.where((cand >= 0) & (cand < n), cand, -1)
    return out


def top_cpu_op(trace: KinetoTrace) -> np.ndarray:
    """Per node: the outermost cpu_op at or above it (GPU events: above their launch), -1 none."""
    return per_trace(trace, "top_cpu_op", _top_cpu_op)


def _top_cpu_op(trace: KinetoTrace) -> np.ndarray:
    own_op = np.full(trace.n_nodes, -1, dtype=np.int64)
    own_op[: trace.n_events] = np.where(trace.kind == int(Kind.CPU_OP), np.arange(trace.n_events), -1)
    return fill_down(trace.parent, trace.depth, own_op, outermost=True)  # the outermost cpu_op


def same_name_op_above(trace: KinetoTrace) -> np.ndarray:
    """Per event: the nearest cpu_op above a cpu_op that has its name (``aten::mm`` inside
    ``aten::mm``), -1 for none and for other events.  Such a nested call's time lies inside
    the outer call's: a total by name counts it once, in the outer call."""
    return per_trace(trace, "same_name_op_above", _same_name_op_above)


def _same_name_op_above(trace: KinetoTrace) -> np.ndarray:
    out = np.full(trace.n_events, -1, dtype=np.int64)
    ops = np.flatnonzero(trace.kind == int(Kind.CPU_OP))
    op_of = trace.cpu_op_of.astype(np.int64)

    def op_above(nodes: np.ndarray) -> np.ndarray:
        par = trace.parent[nodes].astype(np.int64)
        return np.where(par >= 0, op_of[np.maximum(par, 0)], -1)

    cur = op_above(ops)
    live = np.flatnonzero(cur >= 0)
    while live.size:
        c = cur[live]
        hit = trace.name_id[c] == trace.name_id[ops[live]]
        out[ops[live[hit]]] = c[hit]
        live = live[~hit]
        cur[live] = op_above(cur[live])
        live = live[cur[live] >= 0]
    return out


def gpu_totals(trace: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tracetui.kineto.rollup.subtree_gpu_totals` (µs, count per node), cached per trace."""
    return per_trace(trace, "subtree_gpu_totals", subtree_gpu_totals)


def gpu_time_per_node(trace: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    """(direct, subtree) GPU time per node, µs.

    *direct*: for a cpu_op, the summed duration of the GPU events its own runtime calls
    launched (``cpu_op_of[gpu_event] == op``); for any other node, of the GPU events
    that are its children (a runtime call: what it launched).
    *subtree*: every GPU event under the node (host nesting, then launch -> GPU work).
    Durations are summed, not merged: concurrent kernels both count.
    """
    return per_trace(trace, "gpu_time_per_node", _gpu_time_per_node)


def _gpu_time_per_node(trace: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    n, n_nodes = trace.n_events, trace.n_nodes
    gpu = gpu_work_events(trace)
    subtree, _ = gpu_totals(trace)
    direct = np.zeros(n_nodes, dtype=np.float64)
    par = trace.parent[gpu].astype(np.int64)
    ok = par >= 0
    np.add.at(direct, par[ok], trace.dur[gpu][ok])
    ops = trace.cpu_op_of[gpu].astype(np.int64)
    is_op = np.zeros(n_nodes, dtype=bool)
    is_op[:n] = trace.kind == int(Kind.CPU_OP)
    direct[is_op] = 0.0
    okop = ops >= 0
    np.add.at(direct, ops[okop], trace.dur[gpu][okop])
    return direct, subtree


def gpu_events_frame(trace: KinetoTrace, categorizer: KernelCategorizer | None = None,
                     events: np.ndarray | None = None, with_args: bool = True) -> pd.DataFrame:
    """One row per GPU work event (kernel, memcpy, memset), sorted by start time.

    Columns (see :data:`GPU_COLUMNS`): ``event`` (model index), ``kind`` ("kernel",
    "memcpy", "memset"), ``name``, ``kernel_category`` (from ``categorizer``, default
    :func:`~tracetui.analysis.categories.get_categorizer`), ``device``/``stream`` (the
    GPU lane), ``ts``/``end``/``dur`` (µs), ``correlation``, ``external_id``,
    ``launch`` (the runtime/driver event that launched it, -1 when not in the trace),
    ``launch_name``/``launch_ts``/``launch_dur``, ``op``/``op_name`` (innermost cpu_op
    above the launch), ``top_op``/``top_op_name`` (outermost cpu_op above it), and from
    the event's args: ``grid``/``block`` ("x,y,z" text, as written), ``grid_unit`` (what
    the grid counts: "blocks", or "work-items" for ``hipExtModuleLaunchKernel``) and
    ``blocks`` (the blocks, computed from a work-item grid) and ``external_id_is_correlation``
    (an older trace's External id that is its correlation; both from
    :mod:`tracetui.kineto.launch_facts`), ``registers`` (per thread),
    ``shared_mem`` (bytes), ``blocks_per_sm``, ``warps_per_sm``, ``occupancy``
    (est. achieved %), ``bytes`` (memcpy/memset size).  Missing values are NaN/None.

    ``events`` restricts the frame to some event indices (e.g. a subtree's GPU events).
    ``with_args=False`` leaves the columns read from the args empty (None/NaN) and skips
    decoding them (the tables that need only names and times: a third of the time).
    """
    import pandas as pd

    cat = resolve_categorizer(categorizer)
    ev = gpu_work_events(trace) if events is None else np.asarray(events, dtype=np.int64)
    if events is not None:
        ev = ev[(ev >= 0) & (ev < trace.n_events)]
        ev = ev[np.isin(trace.kind[ev], _GPU_WORK)]
    ev = ev[np.argsort(trace.ts[ev], kind="stable")]
    names = trace.names
    name_id = trace.name_id[ev]
    kinds = trace.kind[ev]
    # categories: once per distinct (name, kind)
    pair = name_id.astype(np.int64) * 16 + kinds
    uniq, inv = np.unique(pair, return_inverse=True)
    ucat = np.array([cat.categorize(names[int(u // 16)], _KIND_WORD.get(int(u % 16), "kernel")) for u in uniq],
                    dtype=object)
    lanes = trace.lanes
    lane_dev = np.array([ln.pid for ln in lanes] + [None], dtype=object)
    lane_str = np.array([ln.tid for ln in lanes] + [None], dtype=object)
    li = trace.lane_of[ev].astype(np.int64)
    li = np.where(li >= 0, li, len(lanes))
    launch = trace.launch_of[ev].astype(np.int64)
    has_l = launch >= 0
    lsafe = np.maximum(launch, 0)
    op = trace.cpu_op_of[ev].astype(np.int64)
    top = top_cpu_op(trace)[ev] if ev.size else np.zeros(0, np.int64)
    name_arr = np.asarray(names, dtype=object)

    def names_of(idx: np.ndarray) -> np.ndarray:
        out = np.full(idx.shape, None, dtype=object)
        ok = idx >= 0
        out[ok] = name_arr[trace.name_id[idx[ok]]]
        return out

    if with_args:
        args = decode_args_batch(trace, ev, _GpuArgs)
        cols: dict[str, Any] = {f: list(map(attrgetter(f), args)) for f in _GPU_ARG_FIELDS}
    else:
        cols = {f: [None] * int(ev.size) for f in _GPU_ARG_FIELDS}
        cols["grid"] = cols["block"] = [b""] * int(ev.size)
    dim_texts = _DimTexts()
    for f in ("grid", "block"):
        cols[f] = list(map(dim_texts.__getitem__, map(bytes, cols[f])))
    if _UNDECODABLE in dim_texts.values():  # as if the event had no args (like a failed decode)
        for i, (g, b) in enumerate(zip(cols["grid"], cols["block"])):
            if g is _UNDECODABLE or b is _UNDECODABLE:
                for f in _GPU_ARG_FIELDS:
                    cols[f][i] = None
    launch_names = names_of(launch)
    grid_units, blocks = blocks_texts(cols["grid"], cols["block"], list(launch_names))
    df = pd.DataFrame({
        "event": ev,
        "kind": pd.Categorical([_KIND_WORD[int(k)] for k in kinds], categories=["kernel", "memcpy", "memset"]),
        "name": name_arr[name_id] if ev.size else np.zeros(0, dtype=object),
        "kernel_category": ucat[inv] if ev.size else np.zeros(0, dtype=object),
        "device": lane_dev[li] if ev.size else np.zeros(0, dtype=object),
        "stream": lane_str[li] if ev.size else np.zeros(0, dtype=object),
        "ts": trace.ts[ev],
        "dur": trace.dur[ev],
        "end": trace.ts[ev] + trace.dur[ev],
        "correlation": trace.correlation[ev],
        "external_id": trace.external_id[ev],
        "launch": launch,
        "launch_name": launch_names,
        "launch_ts": np.where(has_l, trace.ts[lsafe], np.nan),
        "launch_dur": np.where(has_l, trace.dur[lsafe], np.nan),
        "op": op,
        "op_name": names_of(op),
        "top_op": top,
        "top_op_name": names_of(top),
        "grid": cols["grid"],
        "block": cols["block"],
        "grid_unit": grid_units,
        "blocks": blocks,
        "external_id_is_correlation": external_ids_are_correlations(trace, ev),
        "registers": nums_or_nan(cols["registers"]),
        "shared_mem": nums_or_nan(cols["shared_mem"]),
        "blocks_per_sm": nums_or_nan(cols["blocks_per_sm"]),
        "warps_per_sm": nums_or_nan(cols["warps_per_sm"]),
        "occupancy": nums_or_nan(cols["occupancy"]),
        "bytes": nums_or_nan(cols["nbytes"]),
    }, columns=list(GPU_COLUMNS))
    return df.reset_index(drop=True)


def shapes_text(v: Any) -> str:
    """Compact text of an ``Input Dims``/``Input type`` arg: ``[[2, 3], []]``; "" when absent."""
    if v is None:
        return ""
    return str(v)


class _ShapeTexts(dict):
    """raw JSON bytes -> :func:`shapes_text` of the decoded value (None: undecodable);
    a missing entry is decoded once, so only distinct texts run Python code."""

    def __missing__(self, raw: bytes) -> str | None:
        try:
            text = shapes_text(msgspec.json.decode(raw)) if raw else ""
        except msgspec.DecodeError:
            text = None
        self[raw] = text
        return text


def _op_shape_texts(args: list[_OpArgs]) -> tuple[list[str], list[str]]:
    """(input_dims texts, input_types texts) of each op, as :func:`shapes_text` of the decoded
    values; an op whose dims or types cannot be decoded gets "" for both."""
    cache = _ShapeTexts()
    dims = list(map(cache.__getitem__, map(bytes, map(attrgetter("input_dims"), args))))
    types = list(map(cache.__getitem__, map(bytes, map(attrgetter("input_type"), args))))
    if None in cache.values():
        for i, (d, t) in enumerate(zip(dims, types)):
            if d is None or t is None:
                dims[i] = types[i] = ""
    return dims, types


def input_dims_texts(trace: KinetoTrace, ops: np.ndarray) -> list[str]:
    """The ``Input Dims`` text of each cpu_op in ``ops`` ("" without shapes), as ``cpu_ops_frame``'s."""
    return _op_shape_texts(decode_args_batch(trace, ops, _OpArgs))[0]


def cpu_ops_frame(trace: KinetoTrace, events: np.ndarray | None = None) -> pd.DataFrame:
    """One row per cpu_op, in start-time order.

    Columns: ``event``, ``name``, ``lane`` (thread label), ``ts``/``dur``/``end`` (µs, host
    time), ``depth`` (tree level; lane roots are 0), ``parent_op`` (nearest cpu_op above,
    -1), ``external_id``, ``seq`` (Sequence number), ``input_dims``/``input_types`` (text
    of the ``Input Dims``/``Input type`` args, "" when the trace has no shapes),
    ``n_direct_gpu`` (GPU events its own runtime calls launched), ``direct_gpu_us``
    (their summed duration), ``subtree_gpu_us`` (every GPU event in its subtree),
    ``same_name_above`` (the nearest cpu_op above it with its name, -1 none:
    :func:`same_name_op_above`).
    ``events`` restricts the frame to some event indices.
    """
    import pandas as pd

    ops = np.flatnonzero(trace.kind == int(Kind.CPU_OP)) if events is None else np.asarray(events, np.int64)
    if events is not None:
        ops = ops[(ops >= 0) & (ops < trace.n_events)]
        ops = ops[trace.kind[ops] == int(Kind.CPU_OP)]
    ops = ops[np.argsort(trace.ts[ops], kind="stable")]
    direct, subtree = gpu_time_per_node(trace)
    gpu = gpu_work_events(trace)
    launched = trace.cpu_op_of[gpu].astype(np.int64)
    n_direct = np.bincount(launched[launched >= 0], minlength=trace.n_nodes)
    par = trace.parent[ops].astype(np.int64)
    parent_op = np.where(par >= 0, trace.cpu_op_of[np.maximum(par, 0)], -1)
    dims, types = _op_shape_texts(decode_args_batch(trace, ops, _OpArgs))
    lanes = trace.lanes
    lane_label = np.array([ln.label for ln in lanes] + [""], dtype=object)
    li = trace.lane_of[ops].astype(np.int64)
    li = np.where(li >= 0, li, len(lanes))
    name_arr = np.asarray(trace.names, dtype=object)
    return pd.DataFrame({
        "event": ops,
        "name": name_arr[trace.name_id[ops]] if ops.size else np.zeros(0, dtype=object),
        "lane": lane_label[li] if ops.size else np.zeros(0, dtype=object),
        "ts": trace.ts[ops],
        "dur": trace.dur[ops],
        "end": trace.ts[ops] + trace.dur[ops],
        "depth": trace.depth[ops].astype(np.int64),
        "parent_op": parent_op.astype(np.int64),
        "external_id": trace.external_id[ops],
        "seq": trace.seq[ops],
        "input_dims": dims,
        "input_types": types,
        "n_direct_gpu": n_direct[ops].astype(np.int64),
        "direct_gpu_us": direct[ops],
        "subtree_gpu_us": subtree[ops],
        "same_name_above": same_name_op_above(trace)[ops],
    })
