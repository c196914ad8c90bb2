"""The op <-> kernel chain users already script, over the linked model.

    meta = operation_metadata_scrape(op_id, cpu_trace)          # ET op: schema, tensors
    events = op_to_kernel_tracing(op_id, cpu_trace, gpu_trace)  # its Kineto events + GPU work
    ident = get_gpu_op_identifier(events[-1])                   # (ts, dur, stream, external_id)
    kmeta = kernel_metadata_scrape(ident, gpu_trace)            # grid, block, registers ...
    op = kernel_to_op_tracing(ident, gpu_trace, cpu_trace)      # back to the ET op
    roof = op_roofline_metrics(events[0], gpu_trace)            # FLOPs, TFLOP/s, bound of a cpu_op

``cpu_trace`` is an ETTrace (or a LinkedTrace), ``gpu_trace`` a KinetoTrace (or a
LinkedTrace).  ``op_id`` is an ET node id.  Times are microseconds: ``ts`` is absolute
(the file's clock), ``dur`` a duration.  ET and Kineto are linked by ``rf_id`` ==
``Record function id`` (see ``tracetui.link``); results of a heuristic link say so.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .analysis.frames import per_trace
from .analysis.occupancy import kernel_occupancy
from .analysis.roofline import op_roofline
from .errors import TraceError
from .kineto import schema
from .kineto.kinds import GPU_WORK_KINDS, Kind
from .kineto.launch_facts import external_id_is_correlation, kernel_launch_config
from .kineto.trace import KinetoTrace
from .link import ETLink, link_et_kineto
from .session import LinkedTrace


@dataclass(frozen=True)
class TensorMeta:
    """A tensor argument of an ET op."""

    tensor_id: int
    storage_id: int
    shape: tuple[int, ...] | None
    stride: tuple[int, ...] | None
    dtype: str
    device: str
    numel: int
    nbytes: int
    offset: int = 0
    itemsize: int = 0


@dataclass(frozen=True)
class OperationMetadata:
    """An ET op: identity, schema and tensor arguments (lists flattened, in order)."""

    id: int
    name: str
    rf_id: int
    ctrl_deps: int
    op_schema: str
    inputs: list[TensorMeta]
    outputs: list[TensorMeta]
    input_values: list[Any] = field(default_factory=list)  #: every input decoded (scalars too)
    output_values: list[Any] = field(default_factory=list)
    tid: int = 0


@dataclass(frozen=True)
class TraceEvent:
    """One event of the Kineto trace (``index`` is its node id in the KinetoTrace)."""

    index: int
    cat: str
    name: str
    ts: float  #: absolute µs
    dur: float  #: µs
    kind: str
    external_id: int
    correlation: int
    pid: Any
    tid: Any
    stream: int
    device: int
    heuristic_link: bool = False


@dataclass(frozen=True)
class KernelMetadata:
    cat: str
    name: str
    ts: float  #: absolute µs
    dur: float  #: µs
    device: int
    stream: int
    correlation: int
    external_id: int
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    registers_per_thread: int | None
    shared_memory: int | None  #: bytes
    blocks_per_sm: float | None
    warps_per_sm: float | None
    occupancy: float | None  #: est. achieved occupancy, percent
    index: int = -1
    #: theoretical occupancy of the launch configuration, percent (analysis/occupancy.py); None
    #: when not computable (AMD, no deviceProperties, no registers/shared memory args)
    theoretical_occupancy: float | None = None
    #: the factor(s) limiting it: "registers", "shared memory per SM", "warps", "max blocks per SM" (ties
    #: joined by " + "), or "not computable: <reason>"
    occupancy_limiter: str | None = None
    #: what ``grid`` counts: "blocks", or "work-items" for hipExtModuleLaunchKernel launches
    #: (kineto/launch_facts.py); ``grid`` stays as the trace wrote it
    grid_unit: str = "blocks"
    #: blocks per dimension: the grid itself, or ceil(grid / block) of a work-item grid; None when
    #: it cannot be computed
    blocks: tuple[int, ...] | None = None
    #: the External id is the event's own correlation (older traces), not the launching op's id
    external_id_is_correlation: bool = False


@dataclass(frozen=True)
class ETOpRef:
    id: int
    name: str
    heuristic: bool = False
    #: what found the link: "rf_id" (exact), "sequence number" or "order" (both heuristic)
    found_by: str = ""


GpuOpIdentifier = tuple[float, float, int, int]



def _split(cpu_trace: Any, gpu_trace: Any) -> tuple[Any, KinetoTrace | None, ETLink | None]:
    et = kt = link = None
    for t in (cpu_trace, gpu_trace):
        if isinstance(t, LinkedTrace):
            et, kt, link = t.et or et, t.kineto or kt, t.link or link
        elif isinstance(t, KinetoTrace):
            kt = t
        elif t is not None:
            et = t
    if link is None and et is not None and kt is not None:
        # linked once per pair and dropped with the Kineto trace (analysis.frames.per_trace)
        hit = per_trace(kt, f"et_link:{id(et)}", lambda k: (weakref.ref(et), link_et_kineto(et, k)))
        link = hit[1] if hit[0]() is et else link_et_kineto(et, kt)
    return et, kt, link


def _et_pos(et: Any, op_id: int) -> int:
    try:
        pos = et.pos_of_id(int(op_id))
    except KeyError:
        pos = -1
    if pos is None or pos < 0:
        raise TraceError(et.path, f"no ET node with id {op_id}")
    return int(pos)


def _tensor(t: Any) -> TensorMeta:
    return TensorMeta(tensor_id=t.tensor_id, storage_id=t.storage_id,
                      shape=tuple(t.shape) if t.shape is not None else None,
                      stride=tuple(t.stride) if t.stride is not None else None, dtype=t.dtype, device=str(t.device),
                      numel=t.numel, nbytes=t.nbytes, offset=t.offset, itemsize=t.itemsize)


def _flatten(args: list[Any]) -> tuple[list[TensorMeta], list[Any]]:
    from .et import ETTensor

    tensors: list[TensorMeta] = []
    values: list[Any] = []

    def walk(v: Any) -> Any:
        if isinstance(v, ETTensor):
            tm = _tensor(v)
            tensors.append(tm)
            return tm
        if hasattr(v, "value") and hasattr(v, "type"):  # ETArg
            return walk(v.value)
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    for a in args:
        values.append(walk(a))
    return tensors, values


def operation_metadata_scrape(op_id: int, cpu_trace: Any) -> OperationMetadata:
    """Identity, schema and tensors of the ET op ``op_id``."""
    et, _, _ = _split(cpu_trace, None)
    if et is None:
        raise TraceError(None, "operation_metadata_scrape needs an Execution Trace")
    node = et.node(_et_pos(et, op_id))
    ins, in_vals = _flatten(node.inputs)
    outs, out_vals = _flatten(node.outputs)
    return OperationMetadata(id=node.id, name=node.name, rf_id=node.rf_id, ctrl_deps=node.ctrl_deps,
                             op_schema=node.op_schema or "", inputs=ins, outputs=outs, input_values=in_vals,
                             output_values=out_vals, tid=node.tid)


def _event(kt: KinetoTrace, i: int, heuristic: bool = False) -> TraceEvent:
    return TraceEvent(index=i, cat=kt.category(i), name=kt.name(i), ts=kt.abs_ts_us(i), dur=float(kt.dur[i]),
                      kind=Kind(int(kt.kind[i])).name.lower(), external_id=int(kt.external_id[i]),
                      correlation=int(kt.correlation[i]), pid=kt.pids[i], tid=kt.tids[i],
                      stream=int(kt.stream[i]) if kt.stream[i] >= 0 else (kt.tids[i] if kt.is_gpu_event(i) else -1),
                      device=int(kt.device[i]) if kt.device[i] >= 0 else (kt.pids[i] if kt.is_gpu_event(i) else -1),
                      heuristic_link=heuristic)


def op_to_kernel_tracing(op_id: int, cpu_trace: Any, gpu_trace: Any) -> list[TraceEvent]:
    """Every Kineto event of ET op ``op_id``: its cpu_op, nested ops, runtime calls and the
    kernels/memcpy/memset they launched, in start-time order.  Empty if the op has no
    Kineto event (ET-only)."""
    et, kt, link = _split(cpu_trace, gpu_trace)
    if et is None or kt is None or link is None:
        raise TraceError(None, "op_to_kernel_tracing needs an Execution Trace and its Kineto trace")
    pos = _et_pos(et, op_id)
    k = int(link.et_to_kineto[pos])
    if k < 0:
        return []
    heur = bool(link.heuristic[pos])
    sub = kt.subtree(k)
    sub = sub[sub < kt.n_events]
    sub = sub[np.lexsort((sub, kt.ts[sub]))]
    return [_event(kt, int(i), heur) for i in sub.tolist()]


def get_gpu_op_identifier(event: TraceEvent | KernelMetadata) -> GpuOpIdentifier:
    """``(ts, dur, stream, external_id)`` of a GPU event: enough to find it again."""
    return (event.ts, event.dur, int(event.stream), int(event.external_id))


def _find_gpu_event(ident: GpuOpIdentifier, kt: KinetoTrace) -> int:
    ts, dur, stream, ext = ident
    gpu = np.flatnonzero(np.isin(kt.kind, [int(k) for k in GPU_WORK_KINDS]))
    streams = np.where(kt.stream[gpu] >= 0, kt.stream[gpu], -1)
    cand = gpu[(streams == stream) & (kt.external_id[gpu] == ext)]
    if not cand.size:
        raise TraceError(kt.path, f"no GPU event with stream {stream} and External id {ext}")
    rel = ts - kt.origin_us
    err = np.abs(kt.ts[cand] - rel) + np.abs(kt.dur[cand] - dur)
    best = int(cand[np.argmin(err)])
    if err.min() > 1.0:
        raise TraceError(kt.path, f"no GPU event at ts {ts} (stream {stream}, External id {ext})")
    return best


def _xyz(v: Any) -> tuple[int, ...] | None:
    return tuple(int(x) for x in v) if isinstance(v, list) else None


def kernel_metadata_scrape(identifier: GpuOpIdentifier, gpu_trace: Any) -> KernelMetadata:
    """Launch configuration and placement of the GPU event found by ``identifier``."""
    _, kt, _ = _split(None, gpu_trace)
    if kt is None:
        raise TraceError(None, "kernel_metadata_scrape needs a Kineto trace")
    i = _find_gpu_event(identifier, kt)
    a = kt.args(i)
    ev = _event(kt, i)
    occ = kernel_occupancy(kt, i)
    cfg = kernel_launch_config(kt, i)
    return KernelMetadata(
        cat=ev.cat, name=ev.name, ts=ev.ts, dur=ev.dur, device=ev.device, stream=ev.stream,
        correlation=ev.correlation, external_id=ev.external_id, grid=_xyz(a.get(schema.GRID)),
        block=_xyz(a.get(schema.BLOCK)),
        registers_per_thread=a.get(schema.REGISTERS_PER_THREAD), shared_memory=a.get(schema.SHARED_MEMORY),
        blocks_per_sm=a.get(schema.BLOCKS_PER_SM), warps_per_sm=a.get(schema.WARPS_PER_SM),
        occupancy=a.get(schema.EST_OCCUPANCY), index=i, theoretical_occupancy=occ.pct,
        occupancy_limiter=occ.limiter if occ.computable else f"not computable: {occ.reason}",
        grid_unit=cfg.grid_unit, blocks=_xyz(cfg.blocks), external_id_is_correlation=external_id_is_correlation(kt, i))


@dataclass(frozen=True)
class OpRooflineMetrics:
    """FLOPs, bytes and roofline position of one cpu_op (analysis/flops.py, roofline.py)."""

    index: int  #: the op's node id in the KinetoTrace
    name: str
    flops: int
    bytes_moved: int  #: tensors read + written once each
    formula: str  #: how the FLOPs were counted
    gpu_us: float  #: GPU time of its subtree (summed kernel durations)
    tflops_per_s: float | None
    gbps: float | None
    intensity: float | None  #: FLOPs per byte
    device: str | None  #: device-table entry (None: device not in the table)
    compute_type: str | None  #: the peak used: bf16, fp16, fp32, ...
    peak_tflops: float | None
    peak_gbps: float | None
    pct_of_peak: float | None  #: of the roofline at this intensity
    bound: str | None  #: "compute" or "memory"


def op_roofline_metrics(op: int | TraceEvent, gpu_trace: Any) -> OpRooflineMetrics | None:
    """Roofline numbers of the cpu_op ``op`` (node id or a :class:`TraceEvent`), from its
    ``Input Dims``/``Input type`` (or, given a LinkedTrace, the linked ET op's input shapes);
    None when it is not a cpu_op or its FLOPs are not known (an op not in docs/roofline.md,
    or no shapes recorded)."""
    et, kt, link = _split(None, gpu_trace)
    if kt is None:
        raise TraceError(None, "op_roofline_metrics needs a Kineto trace")
    i = op.index if isinstance(op, TraceEvent) else int(op)
    et_node = None  # a LinkedTrace: the linked ET op's shapes when the Kineto trace has none
    if et is not None and link is not None and 0 <= i < kt.n_events and int(link.kineto_to_et[i]) >= 0:
        et_node = et.node(int(link.kineto_to_et[i]))
    got = op_roofline(kt, i, et_node=et_node)
    if got is None:
        return None
    c, r = got
    return OpRooflineMetrics(index=i, name=kt.name(i), flops=c.flops, bytes_moved=c.bytes, formula=c.formula,
                             gpu_us=r.gpu_us, tflops_per_s=r.tflops_per_s, gbps=r.gbps, intensity=r.intensity,
                             device=r.device, compute_type=r.compute_type, peak_tflops=r.peak_tflops,
                             peak_gbps=r.peak_gbps, pct_of_peak=r.pct_of_peak, bound=r.bound)


def kernel_to_op_tracing(identifier: GpuOpIdentifier, gpu_trace: Any, cpu_trace: Any) -> ETOpRef | None:
    """The ET op that launched the GPU event: the innermost linked op above its launch."""
    et, kt, link = _split(cpu_trace, gpu_trace)
    if et is None or kt is None or link is None:
        raise TraceError(None, "kernel_to_op_tracing needs an Execution Trace and its Kineto trace")
    i = _find_gpu_event(identifier, kt)
    node = int(kt.cpu_op_of[i])
    while node >= 0:
        if node < kt.n_events and link.kineto_to_et[node] >= 0:
            pos = int(link.kineto_to_et[node])
            return ETOpRef(int(et.ids[pos]), et.name(pos), bool(link.heuristic[pos]), link.found_by_name(pos))
        node = int(kt.parent[node])
    return None


def critical_window(linked: LinkedTrace, *, step: int | None = None, annotation: str | None = None,
                    instance: int = 1, select: str | None = None, whole_trace: bool = False,
                    option: str = "--select") -> Any:
    """The window of a critical path the user names, one rule for every front end (the command
    line, the MCP server): step ``step`` (:func:`tracetui.critical.step_window`), the
    ``instance``-th ``annotation``, one op (``select``, an export selector), the whole trace,
    or by default the longest step (:func:`tracetui.critical.default_window`).  ``option``
    names the selector in the message when it is not one event."""
    from .critical import annotation_window, default_window, event_window, step_window, trace_window
    from .export.selectors import resolve_selector

    kt = linked.kineto
    if step is not None:
        return step_window(kt, step)
    if annotation is not None:
        return annotation_window(kt, annotation, instance)
    if select:
        node = resolve_selector(linked, select)
        if node is None or node >= kt.n_events:
            raise TraceError(kt.path, f"{option} {select!r}: not one event")
        return event_window(kt, node)
    return trace_window(kt) if whole_trace else default_window(kt)
