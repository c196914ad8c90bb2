"""Roofline numbers of ops of a Kineto trace: FLOPs and bytes (analysis/flops.py) over the
op's GPU time, against the device's ceilings (analysis/devices.py).  Formulas in
docs/roofline.md.

Per op: ``tflops_per_s`` = FLOPs / GPU time / 1e12, ``gbps`` = bytes / GPU time / 1e9,
``intensity`` = FLOPs / byte, the ridge point = peak FLOP/s / peak bytes/s, ``bound`` =
"compute" when the intensity is at or above the ridge, else "memory", and ``pct_of_peak`` =
achieved FLOP/s / the roofline at that intensity (min(peak, intensity x bandwidth)) in %.

GPU time of an op: the summed duration of the GPU events in its subtree (µs), so an
``aten::linear`` is measured by its ``addmm``'s kernels.  Tables (:func:`roofline_table`)
take only ops that launched GPU work themselves (direct GPU time > 0), so nested ops
(linear > addmm) are not counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from .. import units
from ..kineto import schema
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from .devices import DevicePeaks, DeviceTable, get_device_table
from .flops import OpCost, op_cost
from .frames import decode_args_batch, gpu_time_per_node, gpu_work_events, per_trace, same_name_op_above

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd


class _CostArgs(msgspec.Struct, gc=False):
    dims: Any = msgspec.field(default=None, name=schema.INPUT_DIMS)
    types: Any = msgspec.field(default=None, name=schema.INPUT_TYPE)
    concrete: Any = msgspec.field(default=None, name=schema.CONCRETE_INPUTS)
    strides: Any = msgspec.field(default=None, name=schema.INPUT_STRIDES)


@dataclass(frozen=True)
class Roofline:
    """Where one op (or a group of ops) sits on its device's roofline."""

    flops: int
    bytes_moved: int
    gpu_us: float
    tflops_per_s: float | None  #: None without GPU time
    gbps: float | None
    intensity: float | None  #: FLOPs per byte
    device: str | None = None  #: the device-table entry used (None: device unknown)
    compute_type: str | None = None  #: the peak used (bf16, fp32, ...)
    peak_tflops: float | None = None
    peak_gbps: float | None = None
    pct_of_peak: float | None = None  #: of the roofline at this intensity
    bound: str | None = None  #: "compute" or "memory"


def roofline_point(flops: int, nbytes: int, gpu_us: float, compute_type: str,
                   peaks: DevicePeaks | None) -> Roofline:
    t = gpu_us * 1e-6
    tf = flops / t / 1e12 if t > 0 else None
    gb = nbytes / t / 1e9 if t > 0 else None
    ai = flops / nbytes if nbytes > 0 else None
    if peaks is None:
        return Roofline(flops, nbytes, gpu_us, tf, gb, ai)
    found = peaks.peak_tflops(compute_type)
    if found is None:
        return Roofline(flops, nbytes, gpu_us, tf, gb, ai, peaks.name)
    peak, used = found
    bound = pct = None
    if ai is not None:
        ridge = peak * 1e12 / (peaks.memory_gbps * 1e9)
        bound = "compute" if ai >= ridge else "memory"
        roof = min(peak, ai * peaks.memory_gbps / 1e3)  # TFLOP/s
        pct = 100.0 * tf / roof if tf is not None and roof > 0 else None
    return Roofline(flops, nbytes, gpu_us, tf, gb, ai, peaks.name, used, peak, peaks.memory_gbps, pct, bound)


def _op_device(trace: KinetoTrace) -> np.ndarray:
    """Per node: the device (GPU lane pid) of a GPU event the op launched, else -1."""
    def compute(kt: KinetoTrace) -> np.ndarray:
        out = np.full(kt.n_nodes, -1, dtype=np.int64)
        gpu = gpu_work_events(kt)
        dev = kt.device[gpu]
        ops = kt.cpu_op_of[gpu].astype(np.int64)
        ok = (ops >= 0) & (dev >= 0)
        out[ops[ok]] = dev[ok]
        return out
    return per_trace(trace, "roofline_op_device", compute)


def device_peaks(trace: KinetoTrace, device: int, table: DeviceTable | None = None) -> DevicePeaks | None:
    """The table entry for GPU ``device`` of the trace (by its deviceProperties name)."""
    table = table or get_device_table()
    name = trace.device_name(device)
    if name is None and len(trace.device_properties) == 1:
        name = trace.device_properties[0].get(schema.DEV_NAME)
    return table.find(name)


def op_costs(trace: KinetoTrace, ops: np.ndarray) -> list[OpCost | None]:
    """:func:`~tracetui.analysis.flops.op_cost` of each event in ``ops`` (cpu_ops)."""
    ops = np.asarray(ops, dtype=np.int64)
    args = decode_args_batch(trace, ops, _CostArgs)
    memo: dict[tuple, OpCost | None] = {}
    out = []
    for i, a in zip(ops.tolist(), args):
        key = (int(trace.name_id[i]), repr(a.dims), repr(a.types), repr(a.concrete), repr(a.strides))
        if key not in memo:
            memo[key] = op_cost(trace.name(i), a.dims, a.types, a.concrete, a.strides)
        out.append(memo[key])
    return out


def et_inputs(node: Any) -> tuple[list[Any], list[str], list[Any], list[Any]]:
    """(dims, types, concrete values, strides) of an ET node's inputs, in Kineto's
    ``Input Dims``/``Input type``/``Concrete Inputs``/``Input Strides`` form, so that
    :func:`~tracetui.analysis.flops.op_cost` reads them the same way."""
    from ..et.model import ETTensor  # an ET is loaded: its package is imported already

    dims: list[Any] = []
    types: list[str] = []
    concrete: list[Any] = []
    strides: list[Any] = []
    for arg in node.inputs:
        v = arg.value
        if isinstance(v, ETTensor) and v.shape is not None:
            dims.append(list(v.shape))
            types.append(v.dtype)
            concrete.append("")
            strides.append(list(v.stride) if v.stride is not None else [])
        else:
            dims.append([])
            types.append("Scalar")
            if isinstance(v, list):  # an int list (stride, padding ...) as Kineto writes it
                vals = [getattr(x, "value", x) for x in v]
                concrete.append(str(vals) if all(isinstance(x, int) for x in vals) else "")
            else:
                concrete.append(str(v) if isinstance(v, (int, bool)) else "")
            strides.append([])
    return dims, types, concrete, strides


def op_roofline(trace: KinetoTrace, op: int, table: DeviceTable | None = None,
                et_node: Any = None) -> tuple[OpCost, Roofline] | None:
    """Cost and roofline of one cpu_op (its subtree GPU time), None when its cost is unknown.
    Without shapes in the Kineto trace, the linked ET node's input shapes (``et_node``) are used."""
    if op >= trace.n_events or int(trace.kind[op]) != int(Kind.CPU_OP):
        return None
    cost = op_costs(trace, np.array([op]))[0]
    if cost is None and et_node is not None:
        dims, types, concrete, strides = et_inputs(et_node)
        cost = op_cost(trace.name(op), dims, types, concrete, strides)
    if cost is None:
        return None
    _, subtree = gpu_time_per_node(trace)
    gpu = trace.gpu_events_of(op)
    dev = int(trace.device[gpu[0]]) if gpu.size else -1
    peaks = device_peaks(trace, dev, table) if dev >= 0 else None
    return cost, roofline_point(cost.flops, cost.bytes, float(subtree[op]), cost.compute_type, peaks)


def ops_cost_columns(trace: KinetoTrace, nodes: Any) -> pd.DataFrame:
    """``flops``, ``bytes_moved``, ``tflops_per_s`` (over the subtree GPU time) for nodes
    (cpu_ops get numbers, other nodes and uncounted ops None), index aligned with ``nodes``."""
    import pandas as pd

    nodes = np.asarray(nodes, dtype=np.int64)
    n = nodes.size
    flops: list[Any] = [None] * n
    nbytes: list[Any] = [None] * n
    tfs: list[Any] = [None] * n
    is_op = (nodes < trace.n_events) & (trace.kind[np.minimum(nodes, trace.n_events - 1)] == int(Kind.CPU_OP)) \
        if n else np.zeros(0, bool)
    pos = np.flatnonzero(is_op)
    if pos.size:
        _, subtree = gpu_time_per_node(trace)
        for p, c in zip(pos.tolist(), op_costs(trace, nodes[pos])):
            if c is None:
                continue
            us = float(subtree[nodes[p]])
            flops[p], nbytes[p] = c.flops, c.bytes
            tfs[p] = c.flops / (us * 1e-6) / 1e12 if us > 0 else None
    return pd.DataFrame({"flops": flops, "bytes_moved": nbytes, "tflops_per_s": tfs})


def shapes_text(dims: Any) -> str:
    """The non-empty tensor shapes of an ``Input Dims`` list: ``512, 141×512, 512×512``."""
    if not isinstance(dims, list):
        return ""
    return ", ".join("×".join(map(str, d)) if isinstance(d, list) else str(d)
                     for d in dims if d not in ([], None, ""))


ROOFLINE_COLUMNS = ("name", "input_dims", "count", "gpu_ms", "gflops", "tflops_per_s", "gbps", "intensity",
                    "pct_of_peak", "bound", "device", "peak")


def roofline_table(trace: KinetoTrace, table: DeviceTable | None = None, with_events: bool = False) -> pd.DataFrame:
    """One row per (op name, input shapes, device) of the ops whose FLOPs are known and that
    launched GPU work themselves, by GPU time (most first); an op inside an op of the same
    name that launched GPU work too is left out (its time and work are that op's already).
    Columns :data:`ROOFLINE_COLUMNS`:
    ``input_dims`` (the op's non-empty input shapes, :func:`shapes_text`),
    ``gpu_ms`` (their summed subtree GPU time), ``gflops`` (summed), ``tflops_per_s``,
    ``gbps``, ``intensity`` (FLOP/byte), ``pct_of_peak``, ``bound``, ``device`` (table entry),
    ``peak`` (e.g. "bf16 989.5 TFLOP/s, 3350 GB/s"); with ``with_events`` also ``events`` (the
    ops of each row, node ids in start order)."""
    import pandas as pd

    table = table or get_device_table()
    ops = np.flatnonzero(trace.kind == int(Kind.CPU_OP))
    direct, subtree = gpu_time_per_node(trace)
    ops = ops[direct[ops] > 0]
    ops = ops[~_inside_same_name_launcher(trace, ops, direct)]
    if not ops.size:
        return pd.DataFrame(columns=list(ROOFLINE_COLUMNS) + (["events"] if with_events else []))
    costs = op_costs(trace, ops)
    dev = _op_device(trace)
    groups: dict[tuple, list] = {}
    args = decode_args_batch(trace, ops, _CostArgs)
    for i, c, a in zip(ops.tolist(), costs, args):
        if c is None:
            continue
        key = (trace.name(i), shapes_text(a.dims), int(dev[i]), c.compute_type)
        g = groups.setdefault(key, [0, 0, 0, 0.0, []])
        g[0] += 1
        g[1] += c.flops
        g[2] += c.bytes
        g[3] += float(subtree[i])
        g[4].append(i)
    rows = []
    for (name, dims, d, ctype), (count, fl, nb, us, events) in groups.items():
        peaks = device_peaks(trace, d, table) if d >= 0 else None
        r = roofline_point(fl, nb, us, ctype, peaks)
        peak = (f"{r.compute_type} {r.peak_tflops:g} {units.TFLOPS}, {r.peak_gbps:g} {units.GBPS}"
                if r.peak_tflops else None)
        rows.append((name, dims, count, us / 1e3, fl / 1e9, r.tflops_per_s, r.gbps, r.intensity, r.pct_of_peak,
                     r.bound, r.device, peak, events))
    df = pd.DataFrame(rows, columns=[*ROOFLINE_COLUMNS, "events"])
    if not with_events:
        df = df.drop(columns="events")
    return df.sort_values(["gpu_ms", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _inside_same_name_launcher(trace: KinetoTrace, ops: np.ndarray, direct: np.ndarray) -> np.ndarray:
    """Bool per op: some op above it with its name launched GPU work itself."""
    above = same_name_op_above(trace)
    out = np.zeros(ops.size, dtype=bool)
    cur = above[ops]
    live = np.flatnonzero(cur >= 0)
    while live.size:
        hit = direct[cur[live]] > 0
        out[live[hit]] = True
        live = live[~hit]
        cur[live] = above[cur[live]]
        live = live[cur[live] >= 0]
    return out
