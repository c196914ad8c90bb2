"""HolisticTraceAnalysis's definition of a critical path (``--method hta``), computed on
tracetui's own graph of the window, so that the two tools' numbers can be compared.

tracetui's default answer (``method="elapsed"``) is the step's elapsed time: the chain of
binding edges from the window start to the end of its last event, every microsecond of it
named.  HTA 0.5.0 (``CriticalPathAnalysis.critical_path_analysis``) answers another
question: the **heaviest** chain of dependencies, where only some time weighs.  This module
reads that chain off the same graph (:mod:`tracetui.critical.graph`) with HTA's weights and
edges (docs/critical_path.md, "HTA's definition"):

- **events**: the window's own events only (carried-in GPU work and GPU work with no launch
  in the trace are not in HTA's graph);
- **host time** weighs its elapsed time only inside a cpu_op or a runtime/driver call (the
  innermost one open), and nothing inside the calls HTA treats as blocking by name
  (:data:`HTA_ZERO_WEIGHT_CALLS`) or outside every op (python functions, annotations,
  untraced time: HTA joins consecutive top-level ops by zero-weight edges);
- **GPU time**: every kernel, memcpy and memset weighs its duration; each GPU event's start
  has *one* weighted edge, as HTA chooses it: the launch (weight: launch start to GPU
  start) when the stream had finished its earlier work before the launch began and HTA's
  queue rule allows it (:func:`hta_launch_rule`: a launch call HTA knows, not a CUDA/HIP
  graph launch, and the stream's queue empty but for it), else
  the gap after the previous event on the stream (weight: the gap); when that edge comes from
  carried-in work, the event has none (HTA's graph does not hold that work);
- **waits**: recorded cross-stream waits and host syncs on recorded CUPTI sync records weigh
  zero; inferred ones, threads' forward->backward and fork/join edges are not in HTA's graph
  (it has no edge between CPU threads);
- the path may start and end at any node (HTA: ``networkx.dag_longest_path``); its length is
  the sum of its weights.

The answer's segments are the path's weighted stretches (zero-weight edges leave gaps
between them), so ``by_kind_us`` sums to ``total_us``.  There is no slack and no what-if in
this method: both are questions about elapsed time.
"""

from __future__ import annotations

import numpy as np

from ..kineto.kinds import GPU_WORK_KINDS, Kind
from .graph import Family, Graph

#: host calls whose whole span HolisticTraceAnalysis 0.5.0 weighs zero whether or not they
#: blocked (``CPGraph.BLOCKING_SYNC_CALLS``); HIP's names are not on its list
HTA_ZERO_WEIGHT_CALLS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery",
                                   "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync"})
#: launch calls whose launch-delay edge HTA 0.5.0 can add (``get_runtime_launch_events_query``:
#: its queue length, which the launch edge needs, exists only for these); a GPU event launched
#: by any other call (a CUDA/HIP graph launch: HTA issue #290, a synchronous copy) gets the gap
#: after the previous event on its stream
HTA_LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
                              "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution",
                              "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
                              "hipMemcpyWithStream"})
#: edge families HTA's graph has (the others are tracetui's: cross-thread, inferred, the source)
_HTA_FAMILIES = (Family.HOST_ORDER, Family.GPU_ORDER, Family.LAUNCH, Family.STREAM_WAIT, Family.SYNC)
#: weight of an edge HTA's graph does not have
ABSENT = -np.inf
_GPU_WORK = [int(k) for k in GPU_WORK_KINDS]


def hta_weights(g: Graph) -> np.ndarray:
    """Per edge of ``g``: its weight in HTA's definition (µs), :data:`ABSENT` for an edge
    HTA's graph does not have (see the module docstring)."""
    trace, m = g.trace, g.m
    elapsed = g.node_t[g.dst] - g.node_t[g.src]
    fam = g.family
    in_hta = np.isin(fam, [int(f) for f in _HTA_FAMILIES]) & ~((fam == int(Family.SYNC)) & g.inferred)
    # nodes of events HTA's graph does not hold: carried-in work, GPU work without a launch
    ev = g.sel.events
    gpu = np.isin(trace.kind[ev], _GPU_WORK)
    out_ev = g.sel.carried | (gpu & (trace.launch_of[ev] < 0))
    node_out = np.concatenate((out_ev, out_ev, [True])) if m else np.ones(1, dtype=bool)
    # a GPU event's start: one weighted edge, the launch (when HTA's queue rule allows one) or
    # the gap after the stream's previous event, chosen before the work HTA does not hold is
    # left out (an event whose chosen edge comes from carried-in work then has none)
    node_gpu = np.concatenate((gpu, gpu, [False])) if m else np.zeros(1, dtype=bool)
    gpu_start = node_gpu[g.dst] & ~g.node_end[g.dst]
    launch_ok = hta_launch_rule(trace)[ev[g.dst % max(m, 1)]]
    in_hta &= ~(gpu_start & (fam == int(Family.LAUNCH)) & ~launch_ok)
    # the one whose cause ends last; ties go to a stream wait, then to the stream order (HTA
    # adds a launch edge only when the stream's previous event and the event waited for ended
    # strictly before the launch, a gap edge only when the event waited for ended strictly
    # before the previous one); a recorded stream wait (weight 0) stays in any case
    pref = np.select([fam == int(Family.LAUNCH), fam == int(Family.GPU_ORDER)], [0, 1], 2)
    cand = np.flatnonzero(gpu_start & in_hta & np.isin(fam, [int(Family.LAUNCH), int(Family.GPU_ORDER),
                                                              int(Family.STREAM_WAIT)]))
    if cand.size:
        o = cand[np.lexsort((pref[cand], g.node_t[g.src[cand]], g.dst[cand]))]
        last = np.concatenate((g.dst[o][1:] != g.dst[o][:-1], [True]))
        chosen = np.zeros(g.src.size, dtype=bool)
        chosen[o[last]] = True
        in_hta[cand] &= chosen[cand] | (fam[cand] == int(Family.STREAM_WAIT))
    keep = in_hta & ~node_out[g.src] & ~node_out[g.dst]
    w = np.where(keep, 0.0, ABSENT)
    weighed = keep & np.isin(fam, [int(Family.GPU_ORDER), int(Family.LAUNCH)])
    w[weighed] = elapsed[weighed]
    host = keep & (fam == int(Family.HOST_ORDER))
    w[host] = np.where(_weighs(trace, g.attr[host]), elapsed[host], 0.0)
    return w


def hta_launch_rule(trace) -> np.ndarray:
    """bool per event: a GPU event HTA 0.5.0 may give a launch-delay edge by its queue rule
    (``TraceCounters`` queue length per stream over the whole trace: +1 at each launch by
    one of :data:`HTA_LAUNCH_CALLS`, -1 at each GPU event's start): launched by such a call,
    the only work outstanding on its stream just after its launch, and none launched there
    after it by the time it starts.  (A GPU running far behind its launches, or a graph
    launch, gets the gap after the stream's previous event instead, or no edge.)"""
    n = trace.n_events
    ok = np.zeros(n, dtype=bool)
    lo = trace.launch_of[:n].astype(np.int64)
    gpu = np.isin(trace.kind[:n], _GPU_WORK) & (lo >= 0)
    named = np.array([str(x) in HTA_LAUNCH_CALLS for x in trace.names] or [False], dtype=bool)
    k = np.flatnonzero(gpu)
    k = k[named[trace.name_id[lo[k]]]]
    if not k.size:
        return ok
    lane, launched, started = trace.lane_of[k], trace.ts[lo[k]], trace.ts[k]
    for ln in np.unique(lane).tolist():
        i = lane == ln
        a, b = np.sort(launched[i]), np.sort(started[i])
        at_launch = np.searchsorted(a, launched[i], "right") - np.searchsorted(b, launched[i], "right")
        at_start = np.searchsorted(a, started[i], "right") - np.searchsorted(b, started[i], "right")
        ok[k[i]] = (at_launch == 1) & (at_start == 0)
    return ok


def _weighs(trace, attr: np.ndarray) -> np.ndarray:
    """bool per host edge (by the innermost event open there): HTA weighs its time (an op or
    a call is open, the innermost of them not one of :data:`HTA_ZERO_WEIGHT_CALLS`).  Runtime
    and driver calls hold no op, so the innermost is the call itself, else the trace's
    innermost cpu_op (``cpu_op_of``)."""
    zero_name = np.array([str(x) in HTA_ZERO_WEIGHT_CALLS for x in trace.names] or [False], dtype=bool)
    a = np.maximum(attr, 0)
    call = np.isin(trace.kind[a], [int(Kind.RUNTIME), int(Kind.DRIVER)])
    op = np.where(attr < 0, -1, np.where(call, a, trace.cpu_op_of[a]))
    return (op >= 0) & ~zero_name[trace.name_id[np.maximum(op, 0)]]


def heaviest_path(g: Graph, weight: np.ndarray) -> tuple[np.ndarray, float]:
    """The edges (in time order) of the heaviest path of ``g`` under ``weight``, starting
    and ending at any node, and its weight (µs).  One forward pass in topological order."""
    ok = np.flatnonzero(np.isfinite(weight))
    if not ok.size:
        return np.zeros(0, dtype=np.int64), 0.0
    order = ok[np.argsort(g.node_pos[g.dst[ok]], kind="stable")]
    dist = [0.0] * g.node_t.size
    pred = [-1] * g.node_t.size
    src, dst, w = g.src.tolist(), g.dst.tolist(), weight.tolist()
    for e in order.tolist():
        y = dist[src[e]] + w[e]
        v = dst[e]
        if y > dist[v]:
            dist[v], pred[v] = y, e
    d = np.asarray(dist)
    total = float(d.max())
    top = np.flatnonzero(d >= total)
    v = int(top[np.argmin(g.node_pos[top])])  # the earliest node with the heaviest path: no zero-weight tail
    out = []
    while pred[v] >= 0:
        e = pred[v]
        out.append(e)
        v = src[e]
    out.reverse()
    return np.asarray(out, dtype=np.int64), total


__all__ = ["ABSENT", "HTA_LAUNCH_CALLS", "HTA_ZERO_WEIGHT_CALLS", "heaviest_path", "hta_launch_rule",
           "hta_weights"]
