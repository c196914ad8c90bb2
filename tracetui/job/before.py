"""What a rank was doing just before it arrived at each of its collectives.

A rank arrives at a collective when the collective's first NCCL/RCCL kernel starts
(:mod:`tracetui.job.stragglers`); it arrives late because its host reached the collective
late, or because its GPU was still busy.  Per collective row of
:func:`tracetui.job.comms.rank_collectives`, :func:`arrival_context` adds both sides:

* host: the op that ended last before the collective op (``op``: ``record_param_comms``,
  the ``nccl:*`` annotation or the ``c10d::*`` op; else the kernel's launch call; for a
  backend annotation on its worker thread, ``gloo:all_reduce``, the ``c10d::*`` op of the
  process that issued it, the latest started before it) started, on its thread: the collective
  op's previous sibling in the op tree (python frames skipped), else its parent's, and so on
  up -- the outermost op that ran before it without enclosing it.  Only cpu_ops and
  user annotations count (a launch call is no answer to "what was it doing");
* host, since the rank's previous collective: the longest op on that thread that ran whole
  between the end of the rank's previous collective (the last moment it was in step with
  the other ranks; the first collective: the trace's start) and the collective op's start
  (outermost ops only; none when the host started the collective before the previous one
  ended);
* GPU: the kernel, memcpy or memset (communication kernels apart) on the collective
  kernel's device that started before it and ended last, with the gap between that end and
  the collective's start (negative: still running when the collective started), and how
  long the collective kernel waited after its launch call started.

Added fields (µs; -1 / None where there is none): ``host_before`` (event id),
``host_before_name``, ``host_before_dur_us``, ``host_gap_us`` (collective op start - that
op's end), ``host_longest`` (event id), ``host_longest_name``, ``host_longest_dur_us``,
``since_previous_us`` (the window's length; None for the first collective), ``gpu_before``
(event id), ``gpu_before_name``, ``gpu_gap_us``, ``launch_delay_us``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kineto import Kind, KinetoTrace
from ..kineto.kinds import GPU_WORK_KINDS
from .comms import CPU_COMM_PREFIXES, comm_kernels

#: the host events that answer "what was it doing": ops and user annotations
_HOST_OPS = np.array([int(Kind.CPU_OP), int(Kind.ANNOTATION)])
_GPU_WORK = frozenset(int(k) for k in GPU_WORK_KINDS)


class _HostTree:
    """Previous-op lookups in the op tree without python frames, one sibling list per parent."""

    def __init__(self, kt: KinetoTrace) -> None:
        self.kt = kt
        self.nopy = kt.nopy_parent is not None
        self.parent = kt.nopy_parent if self.nopy else kt.parent
        self._siblings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._lanes: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _host_children(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._siblings.get(node)
        if got is None:
            kt = self.kt
            kids = kt.nopy_children(node) if self.nopy else kt.children(node)
            kids = kids[kids < kt.n_events].astype(np.int64)
            kids = kids[np.isin(kt.kind[kids], _HOST_OPS)]
            kids = kids[np.argsort(kt.ts[kids], kind="stable")]
            got = self._siblings[node] = (kids, kt.ts[kids])
        return got

    def before(self, op: int) -> int:
        """The op that ended last before ``op`` started on its thread without enclosing it; -1."""
        node = op
        while 0 <= node < self.kt.n_events:
            par = int(self.parent[node])
            if par < 0:
                return -1
            kids, ts = self._host_children(par)
            pos = int(np.searchsorted(ts, self.kt.ts[node], side="left"))
            if pos > 0:
                return int(kids[pos - 1])
            node = par
        return -1

    def longest(self, op: int, since: float) -> int:
        """The longest outermost op on ``op``'s thread that ran whole between ``since``
        (relative µs) and ``op``'s start; -1."""
        kt = self.kt
        lane = int(kt.lane_of[op])
        got = self._lanes.get(lane)
        if got is None:
            on = np.flatnonzero((kt.lane_of == lane) & np.isin(kt.kind, _HOST_OPS))
            on = on[np.argsort(kt.ts[on], kind="stable")]
            got = self._lanes[lane] = (on, kt.ts[on])
        ev, ts = got
        cand = ev[np.searchsorted(ts, since, side="left"):np.searchsorted(ts, kt.ts[op], side="left")]
        cand = cand[kt.ts[cand] + kt.dur[cand] <= kt.ts[op]]
        cand = cand[~np.isin(self.parent[cand], cand)]
        return int(cand[np.argmax(kt.dur[cand])]) if cand.size else -1


def _gpu_before(kt: KinetoTrace, kernels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per collective kernel: the GPU event of its device (communication kernels apart)
    that started before it and ended last (-1 when none), and the kernel's start - that end."""
    ev = np.full(kernels.size, -1, dtype=np.int64)
    gap = np.full(kernels.size, np.nan)
    work = np.flatnonzero(np.isin(kt.kind, list(_GPU_WORK)))
    work = work[~np.isin(work, comm_kernels(kt))]
    for dev in np.unique(kt.device[kernels]).tolist():
        g = work[kt.device[work] == dev]
        g = g[np.argsort(kt.ts[g], kind="stable")]
        mine = np.flatnonzero(kt.device[kernels] == dev)
        if not g.size or not mine.size:
            continue
        end = kt.ts[g] + kt.dur[g]
        latest = np.maximum.accumulate(end)
        who = np.maximum.accumulate(np.where(end >= latest, np.arange(g.size), 0))
        pos = np.searchsorted(kt.ts[g], kt.ts[kernels[mine]], side="left") - 1
        ok = pos >= 0
        ev[mine[ok]] = g[who[pos[ok]]]
        gap[mine[ok]] = kt.ts[kernels[mine[ok]]] - latest[pos[ok]]
    return ev, gap


def _c10d_ops(kt: KinetoTrace) -> np.ndarray:
    """The ``c10d::*`` ops (the calls that issue a process group's collectives), by start."""
    ids = [i for i, n in enumerate(kt.names) if n.startswith("c10d::")]
    ev = np.flatnonzero(np.isin(kt.name_id, ids) & (kt.kind == int(Kind.CPU_OP))) if ids else np.zeros(0, np.int64)
    return ev[np.argsort(kt.ts[ev], kind="stable")]


def _issued_by(kt: KinetoTrace, issuers: np.ndarray, annotation: int) -> int:
    """The c10d op that issued a backend annotation's work (``gloo:all_reduce`` on gloo's
    worker thread): the latest one of its process started at or before it; else the annotation."""
    pos = int(np.searchsorted(kt.ts[issuers], kt.ts[annotation], side="right"))
    for k in issuers[:pos][::-1].tolist():
        if kt.pids[k] == kt.pids[annotation]:
            return int(k)
    return annotation


def _us(v: float) -> float | None:
    return None if v != v else round(float(v), 3)


def arrival_context(kt: KinetoTrace, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (one rank's collectives), each with what the rank did just before it (see
    the module docstring); changed in place and returned."""
    tree = _HostTree(kt)
    on_gpu = [i for i, r in enumerate(rows) if r.get("kernels")]
    kernels = np.asarray([rows[i]["kernel"] for i in on_gpu], dtype=np.int64)
    gpu_ev, gpu_gap = _gpu_before(kt, kernels) if kernels.size else (kernels, np.zeros(0))
    gpu = {i: (int(e), float(g)) for i, e, g in zip(on_gpu, gpu_ev.tolist(), gpu_gap.tolist())}
    synced = -np.inf  # relative µs: the end of the rank's collectives so far
    issuers = _c10d_ops(kt)
    for i in sorted(range(len(rows)), key=lambda j: rows[j]["start_us"]):
        row = rows[i]
        op = int(row["op"])
        if int(kt.kind[op]) in _GPU_WORK:  # no collective op above the kernel: from its launch call
            op = int(kt.launch_of[op])
        elif kt.name(op).startswith(CPU_COMM_PREFIXES):  # a backend's worker thread: from the op that issued it
            op = _issued_by(kt, issuers, op)
        h = tree.before(op) if op >= 0 else -1
        row["host_before"] = h
        row["host_before_name"] = kt.name(h) if h >= 0 else None
        row["host_before_dur_us"] = _us(kt.dur[h]) if h >= 0 else None
        row["host_gap_us"] = _us(kt.ts[op] - kt.ts[h] - kt.dur[h]) if h >= 0 else None
        lg = tree.longest(op, synced) if op >= 0 else -1
        row["host_longest"] = lg
        row["host_longest_name"] = kt.name(lg) if lg >= 0 else None
        row["host_longest_dur_us"] = _us(kt.dur[lg]) if lg >= 0 else None
        row["since_previous_us"] = _us(kt.ts[op] - synced) if op >= 0 and synced > -np.inf else None
        synced = max(synced, row["end_us"] - kt.origin_us)
        e, g = gpu.get(i, (-1, float("nan")))
        row["gpu_before"] = e
        row["gpu_before_name"] = kt.name(e) if e >= 0 else None
        row["gpu_gap_us"] = _us(g)
        k = int(row["kernel"])
        launch = int(kt.launch_of[k]) if row.get("kernels") else -1
        row["launch_delay_us"] = _us(kt.ts[k] - kt.ts[launch]) if launch >= 0 else None
    return rows
