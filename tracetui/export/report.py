"""The data of a subtree report (or a whole-trace report), shared by every export format.

A :class:`SubtreeReport` holds, for a root node of the Kineto op tree:

- the parent chain of the root (lane root first) and the root's input shapes (Kineto args
  ``Input Dims``/``Input type``/``Input Strides``/``Concrete Inputs``; plus the linked ET
  node's inputs and outputs when an Execution Trace is loaded);
- ``op_ranking``: the ops ranked by the GPU time they launched (:mod:`.ranking`), what
  the Markdown and HTML reports lead with;
- ``ops``: every host event of the subtree (annotations, cpu_ops, runtime calls; python
  function frames only when asked: ``python_frames``) with its host duration and GPU time
  (direct and subtree);
- ``kernels``: every GPU event of the subtree (:func:`~tracetui.analysis.frames.gpu_events_frame`
  columns: category, grid, block, registers, shared memory, occupancy ...);
- aggregates: kernel categories, per-kernel-name and per-op-name tables, the GPU timeline
  breakdown of the subtree's own GPU events, and the idle gaps of the streams they ran on
  inside the subtree's GPU window;
- ``memory``: the blocks the subtree allocated (and the frees in it of blocks allocated
  elsewhere), with per device totals: allocated, freed, net and transient bytes.

The *GPU window* of a subtree is from the start of its first GPU event to the end of its
last one (the root's host span when it launched nothing): the GPU timeline's ``total`` is
its length, as the whole-trace total is the whole GPU span.  Host and GPU times differ a
lot when launches queue behind earlier work (a cudaGraphLaunch call of 0.6 ms whose kernels
run 40 ms later), which is why the window follows the GPU work.  With no root, the report
covers the whole trace (window None: timeline over the whole GPU span, every gap).  Times
are µs relative to the trace origin unless a column says ``_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.categories import KernelCategorizer
from ..analysis.frames import (
    cpu_ops_frame,
    gpu_events_frame,
    gpu_time_per_node,
    gpu_totals,
    resolve_categorizer,
)
from ..analysis.gaps import idle_gaps, idle_summary
from ..analysis.gpu_breakdown import gpu_timeline
from ..analysis.memory_doc import subtree_memory
from ..analysis.occupancy import occupancy_columns
from ..analysis.tables import category_table, kernel_table, op_table
from ..errors import TraceError
from ..kineto import schema
from ..kineto.kinds import GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.trace import KinetoTrace
from ..session import LinkedTrace
from .ranking import ops_by_gpu_time

_NOT_HOST = [int(k) for k in GPU_KINDS] + [int(Kind.INSTANT)]
_KIND_NAMES = np.array([Kind(k).name.lower() if k in Kind._value2member_map_ else "other" for k in range(256)],
                       dtype=object)
OPS_COLUMNS = ("node", "parent", "level", "kind", "name", "ts", "dur", "gpu_direct_us", "gpu_subtree_us", "n_gpu",
               "external_id", "input_dims", "input_types")


@dataclass
class SubtreeReport:
    """Everything an export shows about one subtree; see the module docstring."""

    source: str  #: file name(s)
    trace: KinetoTrace
    root: int | None  #: node id, None for the whole trace
    title: str
    window: tuple[float, float] | None  #: the GPU window, µs relative to origin (see module docstring)
    parent_chain: list[dict[str, Any]]
    inputs: list[dict[str, Any]]  #: the root's Kineto input shapes
    et_node: dict[str, Any] | None  #: linked ET node: id, name, heuristic, inputs, outputs
    timeline_us: dict[str, float]
    categories: pd.DataFrame
    ops: pd.DataFrame  #: host events of the subtree (:data:`OPS_COLUMNS`)
    kernels: pd.DataFrame  #: GPU events of the subtree
    op_summary: pd.DataFrame
    kernel_summary: pd.DataFrame
    gaps: pd.DataFrame
    gap_summary: pd.DataFrame
    op_ranking: pd.DataFrame  #: ops by the GPU time they launched (:mod:`.ranking`)
    nodes: np.ndarray  #: every node of the subtree, preorder (whole trace: lane by lane)
    notes: list[str] = field(default_factory=list)
    #: what the subtree allocated and freed (:func:`tracetui.analysis.memory_doc.subtree_memory`);
    #: None when the trace has no [memory] events
    memory: dict[str, Any] | None = None

    @property
    def origin_us(self) -> int:
        return self.trace.origin_us


def kind_word(trace: KinetoTrace, node: int) -> str:
    """"cpu_op", "kernel", "lane" ... for a node."""
    if node >= trace.n_events:
        return "lane"
    return Kind(int(trace.kind[node])).name.lower()


def subtree_window(trace: KinetoTrace, root: int, gpu: np.ndarray) -> tuple[float, float]:
    """(start, end) µs: first GPU event start to last GPU event end of the subtree, or the
    root's host span when the subtree launched no GPU work."""
    if gpu.size:
        return float(trace.ts[gpu].min()), float((trace.ts[gpu] + trace.dur[gpu]).max())
    return trace.node_span(root)


def gpu_frame_near_window(trace: KinetoTrace, lanes: np.ndarray, window: tuple[float, float]) -> np.ndarray:
    """GPU work events on ``lanes`` that decide the idle gaps inside ``window``: those that
    overlap it, plus per lane the earlier event that ended last before it."""
    lo, hi = window
    gpu = np.flatnonzero(np.isin(trace.kind, [int(k) for k in GPU_WORK_KINDS]) & np.isin(trace.lane_of, lanes))
    end = trace.ts[gpu] + trace.dur[gpu]
    inside = (trace.ts[gpu] <= hi) & (end >= lo)
    parts = [gpu[inside]]
    before = ~inside & (end < lo)
    for ln in np.unique(trace.lane_of[gpu[before]]).tolist():
        sel = gpu[before][trace.lane_of[gpu[before]] == ln]
        parts.append(sel[[int(np.argmax(trace.ts[sel] + trace.dur[sel]))]])
    return np.concatenate(parts)


def _parent_chain(trace: KinetoTrace, root: int) -> list[dict[str, Any]]:
    chain = list(reversed(trace.ancestors(root))) + [root]
    out = []
    for level, node in enumerate(chain):
        is_ev = node < trace.n_events
        out.append({"node": int(node), "level": level, "kind": kind_word(trace, node), "name": trace.name(node),
                    "ts": float(trace.ts[node]) if is_ev else None,
                    "dur": float(trace.dur[node]) if is_ev else None})
    return out


def _listify(v: Any, n: int) -> list[Any]:
    return list(v) + [None] * (n - len(v)) if isinstance(v, list) else [None] * n


def root_inputs(trace: KinetoTrace, root: int) -> list[dict[str, Any]]:
    """One row per input of the root op from its Kineto args (empty without record_shapes)."""
    if root >= trace.n_events:
        return []
    a = trace.args(root)
    dims, types = a.get(schema.INPUT_DIMS), a.get(schema.INPUT_TYPE)
    strides, concrete = a.get(schema.INPUT_STRIDES), a.get(schema.CONCRETE_INPUTS)
    n = max((len(x) for x in (dims, types, strides, concrete) if isinstance(x, list)), default=0)
    cols = [_listify(x, n) for x in (dims, types, strides, concrete)]
    return [{"index": i, "dims": cols[0][i], "type": cols[1][i], "strides": cols[2][i], "concrete": cols[3][i]}
            for i in range(n)]


def _et_arg(arg: Any) -> dict[str, Any]:
    value = arg.value
    if hasattr(value, "dtype") and hasattr(value, "numel"):
        value = f"tensor {getattr(value, 'dtype', '')} numel={getattr(value, 'numel', '')}"
    elif isinstance(value, list):
        value = f"list of {len(value)}"
    return {"type": arg.type, "shape": _plain(arg.shape), "stride": _plain(arg.stride), "value": _plain(value)}


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def et_node_info(linked: LinkedTrace, root: int) -> dict[str, Any] | None:
    """The ET node linked to ``root`` (id, name, heuristic flag, inputs, outputs), or None."""
    et, link = linked.et, linked.link
    if et is None or link is None or root >= link.kineto_to_et.size:
        return None
    pos = int(link.kineto_to_et[root])
    if pos < 0:
        return None
    node = et.node(pos)
    return {"id": int(node.id), "name": node.name, "op_schema": node.op_schema,
            "heuristic": bool(link.heuristic[pos]), "found_by": link.found_by_name(pos),
            "inputs": [dict(_et_arg(a), index=i) for i, a in enumerate(node.inputs)],
            "outputs": [dict(_et_arg(a), index=i) for i, a in enumerate(node.outputs)]}


def ops_frame(trace: KinetoTrace, nodes: np.ndarray, root: int | None, python_frames: bool = True) -> pd.DataFrame:
    """Host events among ``nodes`` (preorder), with GPU time per node (µs); python function
    frames only with ``python_frames`` (the root is kept whatever it is)."""
    ev = nodes[(nodes < trace.n_events)]
    ev = ev[~np.isin(trace.kind[ev], _NOT_HOST)]
    if not python_frames:
        ev = ev[(trace.kind[ev] != int(Kind.PYTHON)) | (ev == root)]
    direct, _ = gpu_time_per_node(trace)
    sub_us, sub_n = gpu_totals(trace)
    base = int(trace.depth[root]) if root is not None else 0
    cpu = cpu_ops_frame(trace, ev[trace.kind[ev] == int(Kind.CPU_OP)]).set_index("event")
    dims = cpu["input_dims"].astype(object).reindex(ev).fillna("").to_numpy()
    types = cpu["input_types"].astype(object).reindex(ev).fillna("").to_numpy()
    names = np.asarray(trace.names, dtype=object)
    return pd.DataFrame({
        "node": ev, "parent": trace.parent[ev].astype(np.int64), "level": trace.depth[ev].astype(np.int64) - base,
        "kind": _KIND_NAMES[trace.kind[ev]], "name": names[trace.name_id[ev]],
        "ts": trace.ts[ev], "dur": trace.dur[ev], "gpu_direct_us": direct[ev], "gpu_subtree_us": sub_us[ev],
        "n_gpu": sub_n[ev], "external_id": trace.external_id[ev], "input_dims": dims, "input_types": types,
    }, columns=list(OPS_COLUMNS))


def build_report(linked: LinkedTrace, root: int | None, categorizer: KernelCategorizer | None = None,
                 kernel_gap_us: float | None = None, python_frames: bool = False) -> SubtreeReport:
    """Collect the report of the subtree under ``root`` (a node id), or of the whole trace.
    ``python_frames``: list python function frames among the host events (a note says how
    many were left out otherwise)."""
    kt = linked.kineto
    if kt is None:
        raise TraceError(linked.et.path if linked.et else None, "exporting needs a Kineto trace")
    if root is not None and not 0 <= root < kt.n_nodes:
        raise TraceError(kt.path, f"node {root} does not exist (0..{kt.n_nodes - 1})")
    cat = resolve_categorizer(categorizer)
    gap_kw = {} if kernel_gap_us is None else {"kernel_gap_us": kernel_gap_us}
    notes: list[str] = []
    if root is None:
        nodes = np.concatenate([kt.subtree(r) for r in kt.roots()]) if kt.lanes else np.zeros(0, np.int64)
        kernels = gpu_events_frame(kt, cat)
        window = None
        timeline = gpu_timeline(kernels)
        gaps = idle_gaps(kt, kernels, **gap_kw)
        chain: list[dict[str, Any]] = []
        inputs: list[dict[str, Any]] = []
        et_info = None
        title = f"whole trace {kt.name_of_file}"
    else:
        nodes = kt.subtree(root)
        gpu_ev = kt.gpu_events_of(root)
        kernels = gpu_events_frame(kt, cat, events=gpu_ev)
        window = subtree_window(kt, root, gpu_ev)
        timeline = gpu_timeline(kernels, window=window)
        near = gpu_frame_near_window(kt, np.unique(kt.lane_of[gpu_ev]), window)
        gaps = idle_gaps(kt, gpu_events_frame(kt, cat, events=near), window=window, **gap_kw)
        chain = _parent_chain(kt, root)
        inputs = root_inputs(kt, root)
        et_info = et_node_info(linked, root)
        title = f"{kt.name(root)} (node {root})"
        if kernels.empty:
            notes.append("this subtree launched no GPU work")
    ops = ops_frame(kt, nodes, root, python_frames)
    if not python_frames:
        hidden = int(np.count_nonzero((kt.kind[nodes[nodes < kt.n_events]] == int(Kind.PYTHON))))
        hidden -= int(root is not None and root < kt.n_events and kt.kind[root] == int(Kind.PYTHON))
        if hidden:
            notes.append(f"{hidden:,} python function frames are not listed among the host events "
                         "(export with --python-frames to list them)")
    cpu = cpu_ops_frame(kt, ops.loc[ops["kind"] == "cpu_op", "node"].to_numpy())
    if linked.link is not None and linked.link.stats.method in ("sequence", "order"):
        s = linked.link.stats
        notes.append(f"ET links were found without Record function ids (heuristic): {s.by_sequence:,} by sequence "
                     f"number, {s.by_order:,} by name-and-order alignment")
    unlinked = int((kernels["launch"] < 0).sum()) if not kernels.empty else 0
    if unlinked:
        notes.append(f"{unlinked} {kt.device_word()} events have no launch event in the trace (listed under their "
                     "stream)")
    span = timeline["total"] if timeline["total"] > 0 else None
    return SubtreeReport(
        source=linked.title, trace=kt, root=root, title=title, window=window, parent_chain=chain, inputs=inputs,
        et_node=et_info, timeline_us=timeline, categories=category_table(kernels), ops=ops, kernels=kernels,
        op_summary=op_table(cpu), kernel_summary=kernel_table(kernels, span_us=span), gaps=gaps,
        gap_summary=idle_summary(gaps), op_ranking=ops_by_gpu_time(kt, kernels), nodes=nodes, notes=notes,
        memory=subtree_memory(linked, root))


# ---------------------------------------------------------------- plain values for JSON/CSV
def plain(v: Any) -> Any:
    """numpy/pandas scalars -> Python; NaN -> None (JSON has no NaN)."""
    if v is None:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if v is pd.NA or v is pd.NaT:
        return None
    return v


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-ready dicts (NaN -> None, numpy -> Python)."""
    cols = [str(c) for c in df.columns]
    return [{c: plain(v) for c, v in zip(cols, row)} for row in df.itertuples(index=False, name=None)]


#: the export column of Kineto's own occupancy estimate (arg "est. achieved occupancy %"),
#: named so that it is never read as the theoretical occupancy beside it
KINETO_OCCUPANCY = "kineto_est_occupancy_pct"


def with_occupancy(rep: SubtreeReport) -> pd.DataFrame:
    """The report's GPU events with ``theoretical_occupancy_pct`` and ``occupancy_limiter``
    (analysis/occupancy.py; null for memcpy/memset and where not computable) and Kineto's
    estimate renamed :data:`KINETO_OCCUPANCY`; ``kind`` as text."""
    pct, lim = occupancy_columns(rep.trace, rep.kernels)
    return rep.kernels.assign(kind=rep.kernels["kind"].astype(str), theoretical_occupancy_pct=pct,
                              occupancy_limiter=lim).rename(columns={"occupancy": KINETO_OCCUPANCY})
