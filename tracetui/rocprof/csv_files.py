"""rocprofv3's CSV layout (``rocprofv3 --output-format csv``): one file per record kind in one
folder, ``<prefix>kernel_trace.csv``, ``<prefix>hip_api_trace.csv`` ... (column names:
rocprofiler-sdk's ``generateCSV.cpp``).  The user names the kernel trace; the files beside it
with the same prefix are read with it (:data:`~.schema.CSV_FILES`), and ``agent_info.csv``
gives the GPUs.  Each file becomes the same columns the JSON reader gives
(:class:`~.records.RecordColumns`), so one builder makes the trace.

What the CSV files lack beside the JSON document: a copy's byte count, a roctx mark's
operation (a range or mark whose start equals its end is a mark), the kernel's dynamic LDS
(``LDS_Block_Size`` is the kernel symbol's static LDS, rounded to the allocation block).
An ``Agent_Id`` is ``Agent <logical node id>`` (rocprofv3's default), ``GPU <n>`` /
``CPU <n>`` (``--agent-index type``) or a bare number.
"""

from __future__ import annotations

import csv
import io
import os
import re

import numpy as np

from ..errors import LoadWarning, TraceFormatError
from ..io.files import read_trace_bytes
from ..io.formats import Progress
from ..kineto.trace import KinetoTrace
from . import schema as s
from .records import Agent, Handle, KernelSymbol, Metadata, OpNames, ProcessRecord, RecordColumns

_AGENT = re.compile(r"^\s*(?:(Agent|GPU|CPU|UNK)\s+)?(\d+)\s*$")
#: ``Agent_Type`` of a GPU in ``agent_info.csv``
_GPU = "GPU"


def siblings(path: str) -> dict[str, str]:
    """The CSV files beside the kernel trace ``path`` with its prefix, by record kind (those that exist;
    the kinds the JSON layout has but the CSV reader does not read, allocations and scratch, are
    named in the warnings)."""
    folder, name = os.path.split(path)
    prefix = name[:-len(s.CSV_KERNELS)] if name.endswith(s.CSV_KERNELS) else ""
    out = {s.KERNEL_DISPATCH: path}
    for what, suffix in s.CSV_FILES.items():
        p = os.path.join(folder, prefix + suffix)
        if what != s.KERNEL_DISPATCH and os.path.isfile(p):
            out[what] = p
    agents = os.path.join(folder, prefix + s.CSV_AGENTS)
    if os.path.isfile(agents):
        out[s.AGENTS] = agents
    return out


def _rows(path: str) -> list[dict[str, str]]:
    data = read_trace_bytes(path).data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    return list(csv.DictReader(io.StringIO(text)))


def _ints(path: str, rows: list[dict[str, str]], col: str, default: int | None = None) -> np.ndarray:
    out = np.empty(len(rows), dtype=np.int64)
    for i, r in enumerate(rows):
        v = r.get(col)
        if v is None or v == "":
            if default is None:
                raise TraceFormatError(path, f"no '{col}' column (or an empty cell) in a rocprofv3 CSV file",
                                       position=f"line {i + 2}")
            out[i] = default
            continue
        try:
            out[i] = int(v)
        except ValueError:
            raise TraceFormatError(path, f"'{col}' is not an integer: {v[:40]!r}", position=f"line {i + 2}") from None
    return out


class _Agents:
    """Agent_Id texts -> agent handles, and the agents (from agent_info.csv when it is there)."""

    def __init__(self, rows: list[dict[str, str]]) -> None:
        self.agents: list[Agent] = []
        self.by_type: dict[tuple[str, int], int] = {}
        seen: dict[str, int] = {}
        for r in sorted(rows, key=lambda r: int(r.get("Node_Id") or 0)):
            kind = r.get("Agent_Type", "")
            handle = int(r.get("Logical_Node_Id") or r.get("Node_Id") or 0)
            k = seen[kind] = seen.get(kind, -1) + 1
            self.by_type[(kind, k)] = handle
            self.agents.append(Agent(
                id=Handle(handle), type=s.AGENT_GPU if kind == _GPU else 1, name=r.get("Name", ""),
                product_name=r.get("Product_Name", ""), cu_count=_int(r, "Cu_Count"),
                wave_front_size=_int(r, "Wave_Front_Size"), lds_size_in_kb=_int(r, "Lds_Size_In_Kb"),
                max_waves_per_cu=_int(r, "Max_Waves_Per_Cu"), workgroup_max_size=_int(r, "Workgroup_Max_Size"),
                gfx_target_version=_int(r, "Gfx_Target_Version"), node_id=_int(r, "Node_Id"),
                logical_node_type_id=k, gpu_index=k if kind == _GPU else None))
        self.unknown: set[str] = set()

    def handles(self, texts: list[str]) -> np.ndarray:
        out = np.empty(len(texts), dtype=np.int64)
        cache: dict[str, int] = {}
        for i, t in enumerate(texts):
            h = cache.get(t)
            if h is None:
                h = cache[t] = self._handle(t)
            out[i] = h
        return out

    def _handle(self, text: str) -> int:
        m = _AGENT.match(text or "")
        if m is None:
            self.unknown.add(text)
            return -1
        label, n = m.group(1) or "Agent", int(m.group(2))
        if label in ("GPU", "CPU"):
            h = self.by_type.get((label, n))
            if h is None:  # no agent_info.csv: a GPU of that index
                h = (1 << 32) + n
                if label == "GPU" and all(a.id.handle != h for a in self.agents):
                    self.agents.append(Agent(id=Handle(h), type=s.AGENT_GPU, name=f"GPU {n}", gpu_index=n))
            return h
        if not any(a.id.handle == n for a in self.agents):  # no agent_info.csv: agent n read as GPU n
            self.agents.append(Agent(id=Handle(n), type=s.AGENT_GPU, name=f"Agent {n}", gpu_index=n))
            self.unknown.add(text)
        return n


def _int(r: dict[str, str], col: str) -> int:
    try:
        return int(r.get(col) or 0)
    except ValueError:
        return 0


class _Ops:
    """(Domain, Function) texts as the JSON layout's kind and operation indexes."""

    def __init__(self) -> None:
        self.table: list[OpNames] = []
        self.kinds: dict[str, int] = {}
        self.ops: dict[tuple[int, str], int] = {}

    def codes(self, domains: list[str], names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        kind = np.empty(len(names), np.int64)
        op = np.empty(len(names), np.int64)
        for i, (d, nm) in enumerate(zip(domains, names)):
            k = self.kinds.get(d)
            if k is None:
                k = self.kinds[d] = len(self.table)
                self.table.append(OpNames(kind=d))
            o = self.ops.get((k, nm))
            if o is None:
                o = self.ops[(k, nm)] = len(self.table[k].operations)
                self.table[k].operations.append(nm)
            kind[i], op[i] = k, o
        return kind, op


def _kernels(path: str, rows: list[dict[str, str]], agents: _Agents,
             symbols: dict[int, KernelSymbol]) -> RecordColumns:
    n = len(rows)
    kid = _ints(path, rows, "Kernel_Id")
    vg, ag, sg = (_ints(path, rows, c, 0) for c in ("VGPR_Count", "Accum_VGPR_Count", "SGPR_Count"))
    for i, r in enumerate(rows):
        k = int(kid[i])
        if k not in symbols:
            symbols[k] = KernelSymbol(kernel_id=k, formatted_kernel_name=r.get("Kernel_Name", ""),
                                      sgpr_count=int(sg[i]), arch_vgpr_count=int(vg[i]), accum_vgpr_count=int(ag[i]))
    cols = {"tid": _ints(path, rows, "Thread_Id", 0), "corr": _ints(path, rows, "Correlation_Id"),
            "ext": np.zeros(n, np.int64), "start": _ints(path, rows, "Start_Timestamp"),
            "end": _ints(path, rows, "End_Timestamp"), "agent": agents.handles([r.get("Agent_Id", "") for r in rows]),
            "queue": _ints(path, rows, "Queue_Id", 0), "kernel": kid, "dispatch": _ints(path, rows, "Dispatch_Id", -1),
            "scratch": _ints(path, rows, "Scratch_Size", 0), "lds": _ints(path, rows, "LDS_Block_Size", 0)}
    for c, col in (("wx", "Workgroup_Size_X"), ("wy", "Workgroup_Size_Y"), ("wz", "Workgroup_Size_Z"),
                   ("gx", "Grid_Size_X"), ("gy", "Grid_Size_Y"), ("gz", "Grid_Size_Z")):
        cols[c] = _ints(path, rows, col, 1)
    return RecordColumns(s.KERNEL_DISPATCH, n, cols)


def _api(path: str, what: str, rows: list[dict[str, str]], ops: _Ops) -> tuple[RecordColumns, int | None]:
    kind, op = ops.codes([r.get("Domain", what) for r in rows], [r.get("Function", "") for r in rows])
    cols = {"kind": kind, "op": op, "tid": _ints(path, rows, "Thread_Id", 0),
            "corr": _ints(path, rows, "Correlation_Id"), "ext": np.zeros(len(rows), np.int64),
            "start": _ints(path, rows, "Start_Timestamp"), "end": _ints(path, rows, "End_Timestamp")}
    pids = {r.get("Process_Id") for r in rows if r.get("Process_Id")}
    return RecordColumns(what, len(rows), cols), int(pids.pop()) if len(pids) == 1 else None


def _copies(path: str, rows: list[dict[str, str]], ops: _Ops, agents: _Agents) -> RecordColumns:
    kind, op = ops.codes([r.get("Kind", "") for r in rows], [r.get("Direction", "") for r in rows])
    cols = {"kind": kind, "op": op, "tid": np.zeros(len(rows), np.int64),
            "corr": _ints(path, rows, "Correlation_Id"), "ext": np.zeros(len(rows), np.int64),
            "start": _ints(path, rows, "Start_Timestamp"), "end": _ints(path, rows, "End_Timestamp"),
            "dst": agents.handles([r.get("Destination_Agent_Id", "") for r in rows]),
            "src": agents.handles([r.get("Source_Agent_Id", "") for r in rows]),
            "bytes": np.full(len(rows), -1, np.int64)}  # not in the CSV layout
    return RecordColumns(s.MEMORY_COPY, len(rows), cols)


def read_csv_files(path: str) -> tuple[ProcessRecord, list[LoadWarning]]:
    """The kernel trace ``path`` and its siblings as one process record."""
    files = siblings(path)
    agents = _Agents(_rows(files[s.AGENTS]) if s.AGENTS in files else [])
    symbols: dict[int, KernelSymbol] = {}
    ops = _Ops()
    records = {s.KERNEL_DISPATCH: _kernels(path, _rows(path), agents, symbols)}
    pid = 0
    for what in (s.HIP_API, s.HSA_API, s.RCCL_API, s.MARKER_API):
        if what in files:
            records[what], p = _api(files[what], what, _rows(files[what]), ops)
            pid = p if p is not None and not pid else pid
    if s.MEMORY_COPY in files:
        records[s.MEMORY_COPY] = _copies(files[s.MEMORY_COPY], _rows(files[s.MEMORY_COPY]), ops, agents)
    warnings = []
    read = [os.path.basename(files[w]) for w in (*records, s.AGENTS) if w in files]
    if agents.unknown:
        warnings.append(LoadWarning("rocprof_csv_agents", f"agents named in the CSV files are not in "
                                    f"{s.CSV_AGENTS} ({', '.join(sorted(agents.unknown)[:4])}): each is read as the "
                                    "GPU of that number", len(agents.unknown)))
    unread = sorted(f for f in os.listdir(os.path.dirname(path) or ".")
                    if f.endswith("_trace.csv") and f not in read and os.path.join(os.path.dirname(path), f) != path
                    and f.startswith(os.path.basename(path)[:-len(s.CSV_KERNELS)]))
    if unread:
        warnings.append(LoadWarning("rocprof_not_read", f"{len(unread)} CSV files beside the kernel trace are not read "
                                    f"({', '.join(unread[:6])})", len(unread)))
    proc = ProcessRecord(0, Metadata(pid=pid), agents.agents, symbols, ops.table, {}, records, {})
    return proc, warnings


def load_csv(path: str, report: Progress) -> KinetoTrace:
    """The trace of a rocprofv3 CSV kernel trace and the files beside it."""
    from .builder import build

    report("reading CSV files", 0.1)
    proc, warnings = read_csv_files(path)
    return build(path, [proc], report, warnings)

