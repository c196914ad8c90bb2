"""The collectives one rank ran, read from its Kineto trace (and its linked ET).

One row per collective: the NCCL/RCCL kernels launched under one collective op (the
``record_param_comms`` cpu_op or the ``nccl:*`` annotation above the kernel's launch; a
kernel with neither is a collective of its own) become one row spanning from the first
kernel's start to the last one's end.  Times are absolute microseconds on the rank's
clock (``origin_us + ts``), so rows of different ranks compare only as well as the
hosts' clocks agree.

What names the collective, in order of preference:

- group and sequence number: the ``Process Group Name`` and ``Seq`` args (newer
  PyTorch, on the kernel or on ``record_param_comms``); the ET's ``pg_name``/``seq``
  attributes of the linked ``record_param_comms`` node when the ET link is exact (by
  ``rf_id``; a name-and-order link can be off by one and would mismatch);
- kind: ``Collective name`` of ``record_param_comms``, else the ``nccl:*`` annotation,
  else the ``c10d::*`` op, else the kernel name (:mod:`tracetui.job.nccl`);
- size: ``In msg nelems``/``Out msg nelems`` x ``dtype``, else the annotation's first
  input (``Input Dims`` x ``Input type``).
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ..kineto import Kind, KinetoTrace
from ..kineto import schema as S
from .nccl import collective_kind, dtype_bytes, is_comm_kernel_name, parse_kernel_name

RPC = "record_param_comms"
#: prefixes of the annotations a process-group backend records around a collective's work
#: (gloo runs it on its own worker threads: the annotation spans the transfer and the wait)
CPU_COMM_PREFIXES = ("gloo:", "nccl:", "rccl:", "ucc:", "mpi:", "xccl:")
#: how far up from a kernel's launch the collective op is looked for
_MAX_UP = 8


def comm_kernels(kt: KinetoTrace) -> np.ndarray:
    """Event indices of the NCCL/RCCL kernels, in start order."""
    ids = [i for i, n in enumerate(kt.names) if is_comm_kernel_name(n)]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    mask = np.isin(kt.name_id, ids) & (kt.kind == int(Kind.KERNEL))
    ev = np.flatnonzero(mask)
    return ev[np.argsort(kt.ts[ev], kind="stable")]


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _size(nelems: Any, dtype: Any) -> int | None:
    n, b = _int(nelems), dtype_bytes(dtype if isinstance(dtype, str) else None)
    return n * b if n is not None and b else None


def _first_input_bytes(args: dict[str, Any]) -> int | None:
    dims, types = args.get(S.INPUT_DIMS), args.get(S.INPUT_TYPE)
    if not isinstance(dims, list) or not isinstance(types, list) or not dims or not types:
        return None
    d, t = dims[0], types[0]
    if not isinstance(d, list) or not all(isinstance(x, int) for x in d) or not isinstance(t, str):
        return None
    b = dtype_bytes(t)
    return prod(d) * b if b else None


def _from_args(row: dict[str, Any], args: dict[str, Any]) -> None:
    """Fill the row's missing fields from record_param_comms-style args."""
    name = args.get(S.COLLECTIVE_NAME)
    if isinstance(name, str) and not row["collective"]:
        row["collective"] = name
    pg = args.get(S.PG_NAME)
    if isinstance(pg, (str, int)) and row["group"] is None:
        row["group"] = str(pg)
    seq = _int(args.get(S.COMM_SEQ))
    if seq is not None and row["seq"] is None:
        row["seq"] = seq
    if row["in_bytes"] is None:
        row["in_bytes"] = _size(args.get(S.IN_MSG_NELEMS), args.get(S.COMM_DTYPE))
    if row["out_bytes"] is None:
        row["out_bytes"] = _size(args.get(S.OUT_MSG_NELEMS), args.get(S.COMM_DTYPE))
    gs = _int(args.get(S.GROUP_SIZE))
    if gs is not None and row["group_size"] is None:
        row["group_size"] = gs
    if isinstance(args.get(S.COMM_DTYPE), str) and not row["dtype"]:
        row["dtype"] = args[S.COMM_DTYPE]


def _from_et(row: dict[str, Any], et: Any, pos: int) -> None:
    """pg_name / seq of a linked ET record_param_comms node (nested layout attrs)."""
    attrs = et.attrs(pos)
    pg = attrs.get("pg_name")
    if isinstance(pg, (str, int)) and row["group"] is None:
        row["group"] = str(pg)
    seq = _int(attrs.get("seq"))
    if seq is not None and row["seq"] is None:
        row["seq"] = seq


def _collective_op(kt: KinetoTrace, kernel: int, et: Any, link: Any, row: dict[str, Any]) -> int:
    """Walk up from the kernel's launch, filling ``row``; returns the event that groups the
    kernels of one collective (record_param_comms, else nccl:* annotation, else the kernel)."""
    group_ev = -1
    launch = int(kt.launch_of[kernel])
    node, steps = launch, 0
    exact_link = link is not None and link.stats.method == "rf_id"
    while node >= 0 and node < kt.n_events and steps < _MAX_UP:
        name = kt.name(node)
        kind = kt.kind[node]
        if name == RPC:
            _from_args(row, kt.args(node))
            if exact_link and et is not None:
                p = int(link.kineto_to_et[node])
                if p >= 0:
                    _from_et(row, et, p)
            group_ev = node if group_ev < 0 else group_ev
            row["op"] = node
        elif kind == int(Kind.ANNOTATION) and (name.startswith(("nccl:", "rccl:"))):
            if not row["collective"]:
                row["collective"] = name.split(":", 1)[1]
            if row["in_bytes"] is None:
                row["in_bytes"] = _first_input_bytes(kt.args(node))
            group_ev = node if group_ev < 0 else group_ev
            row["op"] = node
        elif name.startswith("c10d::"):
            if not row["collective"]:
                row["collective"] = name.split("::", 1)[1].rstrip("_")
            row["op"] = node
            break
        node = int(kt.parent[node])
        steps += 1
    return group_ev if group_ev >= 0 else kernel


def cpu_collectives(kt: KinetoTrace) -> list[dict[str, Any]]:
    """Collectives of a rank without NCCL/RCCL kernels (a CPU job: gloo): one row per
    backend annotation (``gloo:all_reduce`` ...), spanning the annotation."""
    ids = [i for i, n in enumerate(kt.names) if n.startswith(CPU_COMM_PREFIXES)]
    if not ids:
        return []
    ev = np.flatnonzero(np.isin(kt.name_id, ids) & (kt.kind == int(Kind.ANNOTATION)))
    rows = []
    for k in ev[np.argsort(kt.ts[ev], kind="stable")].tolist():
        name = kt.name(k).split(":", 1)[1]
        start = float(kt.origin_us + kt.ts[k])
        rows.append({"collective": name, "kind": collective_kind(name) or name, "group": None, "seq": None,
                     "in_bytes": _first_input_bytes(kt.args(k)), "out_bytes": None, "dtype": "", "group_size": None,
                     "kernel": k, "op": k, "kernel_name": kt.name(k), "algorithm": "", "protocol": "",
                     "start_us": start, "end_us": start + float(kt.dur[k]), "dur_us": float(kt.dur[k]), "kernels": 0})
    return rows


def rank_collectives(kt: KinetoTrace, et: Any = None, link: Any = None) -> list[dict[str, Any]]:
    """The rank's collectives in start order (a rank without NCCL/RCCL kernels: its backend
    annotations, :func:`cpu_collectives`): dicts with ``collective`` (name as the trace
    spells it), ``kind`` (canonical, :func:`~tracetui.job.nccl.collective_kind`), ``group``
    and ``seq`` (None when the trace has none), ``start_us``/``end_us`` (absolute µs),
    ``dur_us``, ``in_bytes``/``out_bytes`` (None when unknown), ``dtype``, ``group_size``,
    ``algorithm``/``protocol`` (from the kernel name), ``kernel`` (first kernel's event
    index), ``op`` (the outermost collective op's event index, or the kernel) and
    ``kernels`` (how many)."""
    kernels = comm_kernels(kt)
    if not kernels.size:
        return cpu_collectives(kt)
    rows: dict[int, dict[str, Any]] = {}
    for k in kernels.tolist():
        kname = kt.name(k)
        kkind, algo, proto = parse_kernel_name(kname)
        row: dict[str, Any] = {"collective": "", "group": None, "seq": None, "in_bytes": None, "out_bytes": None,
                               "dtype": "", "group_size": None, "op": k}
        _from_args(row, kt.args(k))
        key = _collective_op(kt, k, et, link, row)
        start = float(kt.origin_us + kt.ts[k])
        end = start + float(kt.dur[k])
        have = rows.get(key)
        if have is not None:
            have["start_us"] = min(have["start_us"], start)
            have["end_us"] = max(have["end_us"], end)
            have["dur_us"] = have["end_us"] - have["start_us"]
            have["kernels"] += 1
            continue
        row.update(kernel=k, kernel_name=kname, algorithm=algo, protocol=proto, start_us=start, end_us=end,
                   dur_us=end - start, kernels=1)
        row["kind"] = collective_kind(row["collective"]) or kkind or row["collective"] or kname.split("(")[0]
        if not row["collective"]:
            row["collective"] = row["kind"]
        rows[key] = row
    return sorted(rows.values(), key=lambda r: r["start_us"])
