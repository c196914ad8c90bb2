"""rocprofv3 records (:mod:`.records`) as the decoded columns Kineto's build takes
(:class:`~tracetui.kineto.decode.DecodedTrace`), then the trace: the same
:func:`~tracetui.kineto.build.build_trace` that builds a PyTorch trace nests the host events
per thread (HIP calls inside roctx ranges) and hangs every kernel and copy under the HIP call
with its correlation id, so the tree, the links and every analysis have Kineto's definitions.

What each record becomes (docs/formats.md, "AMD rocprofv3"):

* ``kernel_dispatch``: a ``kernel`` on the lane of its GPU (the agent's GPU index) and HSA
  queue, named by its kernel symbol, with Kineto's ``device``, ``stream`` (the queue),
  ``correlation``, ``grid`` (workgroups: the work-item grid divided by the workgroup, rounded
  up; in work-items, as Kineto writes it, for a kernel launched by ``hipExtModuleLaunchKernel``)
  and ``block`` (the workgroup), and the AMD facts (:data:`~.schema.KERNEL_EXTRAS`);
* ``memory_copy``: a ``gpu_memcpy`` on its GPU's copy lane (the destination GPU, else the
  source), ``bytes``;
* ``hip_api``/``rccl_api``: ``cuda_runtime`` calls, ``hsa_api``: ``cuda_driver`` calls, on
  their thread; ``marker_api``: roctx ranges as ``user_annotation`` (marks as instants),
  named by their message; ``memory_allocation``/``scratch_memory``: plain spans;
* ``agents``: Kineto's ``deviceProperties`` (:func:`device_properties`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.formats import Progress
from ..kineto import schema as ks
from ..kineto.build import build_trace
from ..kineto.columns import DecodedEvents, Interned, join_releasing
from ..kineto.decode import DecodedTrace
from ..kineto.launch_facts import WORK_ITEM_LAUNCHES
from ..kineto.schema import KEY_DEFAULTS, KEY_FIELDS
from ..kineto.trace import KinetoTrace
from . import schema as s
from .records import Agent, ProcessRecord, RecordColumns
from .sniff import FORMAT_NAME

_PROCESS_NAME, _THREAD_NAME = "process_name", "thread_name"
_NONE = -1


@dataclass(eq=False)
class EventRows:
    """Rows of events of one kind, as the columns the build takes (times in ns)."""

    ph: np.ndarray  #: uint8 phase per row ("X", "i")
    cat: str
    name: np.ndarray  #: int32 into the trace's name table
    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    corr: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    args: list[bytes]

    @property
    def n(self) -> int:
        return int(self.start.size)


class Names:
    """The event name table, grown as records are named."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.at: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        k = self.at.get(name)
        if k is None:
            k = self.at[name] = len(self.names)
            self.names.append(name)
        return k

    def codes(self, labels: list[str], index: np.ndarray) -> np.ndarray:
        """int32 codes of ``labels[index[i]]`` (``labels`` a small table)."""
        lut = np.array([self(x) for x in labels] or [0], dtype=np.int32)
        return lut[index] if index.size else np.zeros(0, np.int32)


class Agents:
    """A process's agents: handle -> GPU index, name, and the deviceProperties entries."""

    def __init__(self, agents: list[Agent]) -> None:
        self.by_handle: dict[int, Agent] = {a.id.handle: a for a in agents}
        gpus = [a for a in agents if a.type == s.AGENT_GPU]
        self.index: dict[int, int] = {}
        for k, a in enumerate(gpus):
            if a.gpu_index is not None and a.gpu_index >= 0:
                self.index[a.id.handle] = a.gpu_index
            elif a.logical_node_type_id >= 0:
                self.index[a.id.handle] = a.logical_node_type_id
            else:
                self.index[a.id.handle] = k
        self.gpus = gpus

    def devices(self, handles: np.ndarray) -> np.ndarray:
        """The GPU index of each agent handle (-1: not a GPU of the file's agents)."""
        if not handles.size:
            return np.zeros(0, np.int64)
        keys = np.array(list(self.index) or [0], dtype=np.int64)
        vals = np.array(list(self.index.values()) or [_NONE], dtype=np.int64)
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        pos = np.minimum(np.searchsorted(keys, handles), keys.size - 1)
        return np.where(keys[pos] == handles, vals[pos], _NONE) if self.index else np.full(handles.size, _NONE)

    def name(self, handle: int) -> str:
        a = self.by_handle.get(handle)
        return (a.name or a.product_name) if a is not None else f"agent {handle}"


def device_properties(agents: Agents) -> list[dict[str, Any]]:
    """The GPU agents as Kineto's ``deviceProperties``: ``id`` (the GPU index), ``name`` (the
    product name: AMD Instinct MI350X), ``computeMajor``/``computeMinor`` (from the gfx
    target version: 90500 is 9.5), ``numSms`` (compute units), ``warpSize`` (wavefront),
    ``maxThreadsPerBlock``, ``maxThreadsPerMultiprocessor`` (waves per CU x wavefront),
    ``sharedMemPerBlock`` and ``maxSharedMemoryPerMultiProcessor`` (LDS), ``totalGlobalMem``."""
    out = []
    for a in agents.gpus:
        gfx = a.gfx_target_version
        lds = a.lds_size_in_kb * 1024
        entry: dict[str, Any] = {
            ks.DEV_ID: agents.index[a.id.handle], ks.DEV_NAME: a.product_name or a.name,
            ks.DEV_CC_MAJOR: gfx // 10000, ks.DEV_CC_MINOR: gfx // 100 % 100, ks.DEV_NUM_SMS: a.cu_count,
            ks.DEV_WARP_SIZE: a.wave_front_size, ks.DEV_MAX_THREADS_PER_BLOCK: a.workgroup_max_size,
            ks.DEV_MAX_THREADS_PER_SM: a.max_waves_per_cu * a.wave_front_size, ks.DEV_SMEM_PER_BLOCK: lds,
            ks.DEV_SMEM_PER_SM_AMD: lds}
        mem = sum(int(b.get("size_in_bytes", 0)) for b in a.mem_banks if isinstance(b.get("size_in_bytes"), int))
        if mem:
            entry[ks.DEV_TOTAL_MEMORY] = mem
        entry[s.ARG_AGENT] = a.name
        out.append(entry)
    return sorted(out, key=lambda d: d[ks.DEV_ID])


class Operations:
    """Names of a process's operations: ``strings.buffer_records[kind].operations[op]``."""

    def __init__(self, proc: ProcessRecord) -> None:
        self.table = proc.op_names

    def labels(self, kind: np.ndarray, op: np.ndarray) -> tuple[list[str], np.ndarray]:
        """(distinct names, index of each record's name)."""
        pairs, inv = np.unique(np.stack([kind, op]) if kind.size else np.zeros((2, 0), np.int64), axis=1,
                               return_inverse=True)
        labels = []
        for k, o in zip(pairs[0].tolist(), pairs[1].tolist()):
            ops = self.table[k].operations if 0 <= k < len(self.table) else []
            kname = self.table[k].kind if 0 <= k < len(self.table) else f"kind {k}"
            labels.append(ops[o] if 0 <= o < len(ops) else f"{kname} operation {o}")
        return labels, inv.reshape(-1)


def _complete(n: int) -> np.ndarray:
    """Phase ``X`` for ``n`` rows."""
    return np.full(n, ord("X"), np.uint8)


def _args_rows(heads: list[dict[str, Any]], index: np.ndarray, tails: list[str]) -> list[bytes]:
    """Per row: the JSON object of ``heads[index[i]]`` (a few distinct ones) with the
    ``tails[i]`` members (already JSON text, ``"k":v,...``; may be empty) appended."""
    texts = [json.dumps(h, ensure_ascii=False, separators=(",", ":"))[1:-1] for h in heads]
    out = []
    for i, tail in zip(index.tolist(), tails):
        body = texts[i] + ("," + tail if tail and texts[i] else tail)
        out.append(("{" + body + "}").encode())
    return out


def _kernel_part(c: RecordColumns, proc: ProcessRecord, agents: Agents, names: Names, work_item_corrs: np.ndarray,
                 warnings: list[LoadWarning]) -> EventRows:
    col = c.cols
    device = agents.devices(col["agent"])
    kernel = col["kernel"]
    uk, kinv = np.unique(kernel, return_inverse=True)
    missing = [int(k) for k in uk.tolist() if int(k) not in proc.symbols]
    if missing:
        n = int(np.isin(kernel, missing).sum())
        warnings.append(LoadWarning("rocprof_no_symbol", f"{n:,} kernel dispatches name a kernel id that is not in "
                                    f"'{s.KERNEL_SYMBOLS}' (first: {missing[0]}); named 'kernel <id>'", n))
    labels = []
    for k in uk.tolist():
        sym = proc.symbols.get(int(k))
        labels.append((sym.formatted_kernel_name or sym.demangled_kernel_name or sym.kernel_name or f"kernel {k}")
                      if sym is not None else f"kernel {k}")
    name = names.codes(labels, kinv.reshape(-1))
    wg = np.stack([col["wx"], col["wy"], col["wz"]], axis=1)
    grid = np.stack([col["gx"], col["gy"], col["gz"]], axis=1)
    blocks = -(-grid // np.maximum(wg, 1))
    as_items = np.isin(col["corr"], work_item_corrs) if work_item_corrs.size else np.zeros(c.n, bool)
    grid_arg = np.where(as_items[:, None], grid, blocks)
    key = np.concatenate([col["agent"][:, None], col["queue"][:, None], kernel[:, None], wg, grid, grid_arg,
                          col["lds"][:, None], col["scratch"][:, None], device[:, None]], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True) if c.n else (np.zeros((0, 15), np.int64),
                                                                         np.zeros(0, np.int64))
    heads = []
    for row in uniq.tolist():
        agent, queue, kid = row[0], row[1], row[2]
        sym = proc.symbols.get(kid)
        heads.append({ks.DEVICE: row[14], ks.STREAM: queue, ks.GRID: row[9:12], ks.BLOCK: row[3:6],
                      s.ARG_VGPRS: sym.arch_vgpr_count if sym else None,
                      s.ARG_AGPRS: sym.accum_vgpr_count if sym else None, s.ARG_SGPRS: sym.sgpr_count if sym else None,
                      s.ARG_LDS: row[12], s.ARG_SCRATCH: row[13], s.ARG_GRID_SIZE: row[6:9],
                      s.ARG_KERNEL_ID: kid, s.ARG_AGENT: agents.name(agent)})
    tails = [f'"{ks.CORRELATION}":{corr},"{s.ARG_DISPATCH_ID}":{disp},"{s.ARG_THREAD}":{tid}'
             + (f',"{s.ARG_EXTERNAL}":{ext}' if ext else "")
             for corr, disp, tid, ext in zip(col["corr"].tolist(), col["dispatch"].tolist(), col["tid"].tolist(),
                                             col["ext"].tolist())]
    return EventRows(_complete(c.n), s.CATEGORY[s.KERNEL_DISPATCH], name, device, col["queue"], col["start"],
                     col["end"], col["corr"], device, col["queue"], _args_rows(heads, inv.reshape(-1), tails))


def _copy_part(c: RecordColumns, proc: ProcessRecord, agents: Agents, names: Names) -> EventRows:
    col = c.cols
    dst, src = agents.devices(col["dst"]), agents.devices(col["src"])
    device = np.where(dst >= 0, dst, src)
    labels, idx = Operations(proc).labels(col["kind"], col["op"])
    stream = np.full(c.n, s.COPY_STREAM, np.int64)
    tails = [f'"{ks.DEVICE}":{d},"{ks.STREAM}":{s.COPY_STREAM},"{ks.CORRELATION}":{corr},'
             + (f'"{ks.BYTES}":{nb},' if nb >= 0 else "")  # the CSV layout has no byte count
             + f'"{s.ARG_SRC_AGENT}":{json.dumps(agents.name(sa))},"{s.ARG_DST_AGENT}":{json.dumps(agents.name(da))},'
             f'"{s.ARG_THREAD}":{tid}'
             for d, corr, nb, sa, da, tid in zip(device.tolist(), col["corr"].tolist(), col["bytes"].tolist(),
                                                 col["src"].tolist(), col["dst"].tolist(), col["tid"].tolist())]
    return EventRows(_complete(c.n), s.CATEGORY[s.MEMORY_COPY], names.codes(labels, idx), device, stream, col["start"],
                     col["end"], col["corr"], device, stream, [("{" + t + "}").encode() for t in tails])


def _host_part(c: RecordColumns, proc: ProcessRecord, agents: Agents, names: Names, pid: int) -> EventRows:
    """A list of host records (API calls, roctx ranges, allocations, scratch events)."""
    col = c.cols
    labels, idx = Operations(proc).labels(col["kind"], col["op"])
    ph = np.full(c.n, ord("X"), np.uint8)
    corr = col["corr"]
    none = np.full(c.n, _NONE, np.int64)
    start, end = col["start"], col["end"]
    if c.what == s.MARKER_API:
        # a range is named by its message (strings.marker_api, by correlation id); a mark is an instant
        # (the CSV layout writes a mark's message, not its operation: there a mark is a range of no length)
        mark = np.array([labels[i] == s.MARK_OPERATION for i in idx.tolist()], dtype=bool).reshape(-1) | (start == end)
        ph[mark] = ord("i")
        end = np.where(mark, start, end)
        code = np.array([names(proc.markers.get(int(k)) or labels[i]) for k, i in zip(corr.tolist(), idx.tolist())],
                        dtype=np.int32).reshape(-1)
        args = [f'{{"{s.ARG_OPERATION}":{json.dumps(labels[i])},"{ks.CORRELATION}":{k}}}'.encode()
                for i, k in zip(idx.tolist(), corr.tolist())]
        corr = none  # the id names the range; it launches nothing
    elif c.what == s.MEMORY_ALLOCATION:
        code = names.codes(labels, idx)
        args = [f'{{"{s.ARG_AGENT}":{json.dumps(agents.name(a))},"{s.ARG_ADDRESS}":{json.dumps(addr)},'
                f'"{s.ARG_SIZE}":{size},"{ks.CORRELATION}":{k}}}'.encode()
                for a, addr, size, k in zip(col["agent"].tolist(), c.texts["address"], col["size"].tolist(),
                                            corr.tolist())]
        corr = none
    elif c.what == s.SCRATCH_MEMORY:
        code = names.codes(labels, idx)
        args = [f'{{"{s.ARG_AGENT}":{json.dumps(agents.name(a))},"queue":{q},"{ks.CORRELATION}":{k}}}'.encode()
                for a, q, k in zip(col["agent"].tolist(), col["queue"].tolist(), corr.tolist())]
        corr = none
    else:
        code = names.codes(labels, idx)
        args = [(f'{{"{ks.CORRELATION}":{k}' + (f',"{s.ARG_EXTERNAL}":{e}}}' if e else "}")).encode()
                for k, e in zip(corr.tolist(), col["ext"].tolist())]
    return EventRows(ph, s.CATEGORY[c.what], code, np.full(c.n, pid, np.int64), col["tid"], start, end, corr, none,
                     none, args)


def _work_item_corrs(proc: ProcessRecord) -> np.ndarray:
    """Correlation ids of the HIP calls that give their grid in work-items (hipExtModuleLaunchKernel)."""
    hip = proc.records.get(s.HIP_API)
    if hip is None or not hip.n:
        return np.zeros(0, np.int64)
    labels, idx = Operations(proc).labels(hip.cols["kind"], hip.cols["op"])
    hit = np.array([x in WORK_ITEM_LAUNCHES for x in labels] or [False], dtype=bool)[idx] if idx.size else idx
    return hip.cols["corr"][hit.astype(bool)] if idx.size else np.zeros(0, np.int64)


def process_parts(proc: ProcessRecord, names: Names, warnings: list[LoadWarning]
                  ) -> tuple[list[EventRows], list[tuple[str, Any, Any, str]], list[dict[str, Any]]]:
    """One process's events (:class:`EventRows` per record list), its metadata rows ((kind, pid,
    tid, name): process and lane names) and its deviceProperties entries."""
    agents = Agents(proc.agents)
    pid = proc.metadata.pid
    parts: list[EventRows] = []
    for what in s.READ_RECORDS:
        c = proc.records.get(what)
        if c is None or not c.n:
            continue
        if what == s.KERNEL_DISPATCH:
            parts.append(_kernel_part(c, proc, agents, names, _work_item_corrs(proc), warnings))
        elif what == s.MEMORY_COPY:
            parts.append(_copy_part(c, proc, agents, names))
        else:
            parts.append(_host_part(c, proc, agents, names, pid))
    gpu = [p for p in parts if p.cat in (s.CATEGORY[s.KERNEL_DISPATCH], s.CATEGORY[s.MEMORY_COPY])]
    unknown = sum(int((p.device < 0).sum()) for p in gpu)
    if unknown:
        warnings.append(LoadWarning("rocprof_unknown_agent", f"{unknown:,} kernels or copies ran on an agent that is "
                                    f"not a GPU of '{s.AGENTS}': shown on device -1", unknown))
    meta: list[tuple[str, Any, Any, str]] = []
    if any(p.n for p in parts if all(p is not g for g in gpu)):
        cmd = proc.metadata.command
        meta.append((_PROCESS_NAME, pid, 0, os.path.basename(cmd[0]) if cmd else f"process {pid}"))
    lanes: set[tuple[int, int]] = set()
    for p in gpu:
        pairs = np.unique(np.stack([p.device, p.stream]), axis=1) if p.n else np.zeros((2, 0), np.int64)
        lanes.update(zip(pairs[0].tolist(), pairs[1].tolist()))
    for d, q in sorted(lanes):
        meta.append((_THREAD_NAME, d, q, f"GPU {d} memory copies" if q == s.COPY_STREAM else f"GPU {d} queue {q}"))
    return parts, meta, device_properties(agents)


def _meta_part(rows: list[tuple[str, Any, Any, str]], names: Names, ts: int) -> EventRows:
    """Kineto's ``process_name``/``thread_name`` metadata events."""
    n = len(rows)
    none = np.full(n, _NONE, np.int64)
    return EventRows(np.full(n, ord("M"), np.uint8), "", np.array([names(r[0]) for r in rows], dtype=np.int32),
                     np.array([r[1] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.int64),
                     np.full(n, ts, np.int64), np.full(n, ts, np.int64), none, none, none,
                     [json.dumps({ks.META_NAME: r[3]}, ensure_ascii=False).encode() for r in rows])


def _interned(values: np.ndarray) -> Interned:
    """Integer ids (pids, tids) as Kineto's interned column."""
    if not values.size:
        return Interned(np.zeros(0, dtype=np.int32), [])
    uniq, inv = np.unique(values, return_inverse=True)
    return Interned(inv.reshape(-1).astype(np.int32), [int(v) for v in uniq.tolist()])


def decoded_trace(procs: list[ProcessRecord], warnings: list[LoadWarning]) -> DecodedTrace:
    """Every process record as Kineto's decoded columns (events, then the metadata rows)."""
    names = Names()
    parts: list[EventRows] = []
    meta_rows: list[tuple[str, Any, Any, str]] = []
    props: list[dict[str, Any]] = []
    for proc in procs:
        got, meta, dev = process_parts(proc, names, warnings)
        parts += got
        meta_rows += meta
        props += [d for d in dev if d[ks.DEV_ID] not in {p[ks.DEV_ID] for p in props}]
    t0 = min((int(p.start.min()) for p in parts if p.n), default=0)
    if meta_rows:  # last: the build drops metadata rows and their args
        parts.append(_meta_part(meta_rows, names, t0))
    cats = sorted({p.cat for p in parts})
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts]) if parts else np.zeros(0, np.int64)  # noqa: E731
    ph_all = cat("ph").astype(np.uint8)
    ph_vals = sorted(set(ph_all.tolist()))
    ph_lut = np.zeros(256, np.int32)
    ph_lut[ph_vals] = np.arange(len(ph_vals), dtype=np.int32)
    start, end = cat("start").astype(np.int64), cat("end").astype(np.int64)
    args = [a for p in parts for a in p.args]
    lens = np.fromiter(map(len, args), dtype=np.int64, count=len(args))
    offsets = np.zeros(len(args) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = len(args)
    key = {"correlation": cat("corr").astype(np.int64), "stream": cat("stream").astype(np.int64),
           "device": cat("device").astype(np.int64)}
    key_args = {f: key.get(f, np.broadcast_to(np.int64(KEY_DEFAULTS[f]), (n,))) for f in KEY_FIELDS}
    cat_codes = np.concatenate([np.full(p.n, cats.index(p.cat), np.int32) for p in parts]) if parts else \
        np.zeros(0, np.int32)
    ev = DecodedEvents(
        ph=Interned(ph_lut[ph_all], [chr(c) for c in ph_vals]), cat=Interned(cat_codes, cats),
        name=Interned(cat("name").astype(np.int32), list(names.names)), pid=_interned(cat("pid")),
        tid=_interned(cat("tid")), ts_int=start // 1000, ts_frac=(start % 1000).astype(np.float64) / 1000.0,
        dur=(end - start).astype(np.float64) / 1000.0, flow_id=[None] * n,
        args_blob=join_releasing(args), args_offsets=offsets, key_args=key_args, n_elements=n)
    metadata: dict[str, Any] = {s.META_ROCPROF: [_process_facts(p) for p in procs]}
    if props:
        metadata[ks.DEVICE_PROPERTIES] = props
    return DecodedTrace(ev, metadata, warnings, "object")


def _process_facts(proc: ProcessRecord) -> dict[str, Any]:
    """What ``info`` shows of a process record: pid, command, host, record counts."""
    node = proc.metadata.node
    return {"pid": proc.metadata.pid, "command": " ".join(proc.metadata.command),
            "hostname": node.get("hostname") if isinstance(node, dict) else None,
            "records": {k: c.n for k, c in proc.records.items() if c.n}, "not_read": dict(proc.not_read)}


def no_launch_warnings(procs: list[ProcessRecord]) -> list[LoadWarning]:
    """What the file lacks for linking: GPU work but no HIP (or HSA) API records; record lists
    that are not read."""
    out = []
    gpu = sum(p.records[w].n for p in procs for w in (s.KERNEL_DISPATCH, s.MEMORY_COPY) if w in p.records)
    calls = sum(p.records[w].n for p in procs for w in (s.HIP_API, s.HSA_API) if w in p.records)
    if gpu and not calls:
        out.append(LoadWarning("no_launch_records", f"no launch records: the file has no HIP or HSA API records "
                               f"(rocprofv3 ran without --hip-trace / --runtime-trace), so none of its {gpu:,} "
                               "kernels and copies is linked to the call that launched it; each is listed under "
                               "its queue", gpu))
    skipped: dict[str, int] = {}
    for p in procs:
        for k, v in p.not_read.items():
            skipped[k] = skipped.get(k, 0) + v
    if skipped:
        total = sum(skipped.values())
        what = ", ".join(f"{k} {v:,}" for k, v in sorted(skipped.items()))
        out.append(LoadWarning("rocprof_not_read", f"{total:,} records of kinds tracetui does not read were skipped "
                               f"({what})", total))
    return out


def build(path: str, procs: list[ProcessRecord], report: Progress, warnings: list[LoadWarning]) -> KinetoTrace:
    """The trace of a decoded rocprofv3 document."""
    warnings = warnings + no_launch_warnings(procs)
    dec = decoded_trace(procs, warnings)
    report("building", 0.5)
    trace = build_trace(path, dec, progress=report, plain_categories=s.PLAIN_CATEGORIES)
    trace.source_format = FORMAT_NAME
    return trace
