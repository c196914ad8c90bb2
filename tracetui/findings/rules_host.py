"""Rules about the host holding the GPU back: pageable copies, syncs to read a value, blocking
synchronize calls, data loading stalls.  Methods and thresholds: ``default_findings.toml``."""

from __future__ import annotations

import numpy as np

from ..analysis.driver import idle_after_sync_calls
from ..analysis.launches import copy_direction
from ..analysis.waits import gpu_idle_within
from ..driver import DriverTrace
from ..kineto.kinds import Kind
from ..tree.propagate import fill_down
from . import fmt
from .base import finding, group_rows
from .context import BACKWARD_NODE, CheckContext
from .spec import Finding, RuleConfig

IDLE_AFTER = "estimate (upper bound): GPU idle after the calls, until the next GPU work"
#: how many distinct example ops get a shape looked up (each may decode an ET node)
_SHAPE_LOOKUPS = 200


def pageable_copy(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    mc = g[(g["kind"].astype(str) == "memcpy").to_numpy() & g["name"].str.contains("Pageable", regex=False).to_numpy()]
    total_us = float(mc["dur"].sum())
    if len(mc) < cfg["min_copies"] or len(mc) == 0 or total_us < cfg["min_time_us"]:
        return []
    dirs = mc["name"].map(copy_direction).to_numpy()
    # the op that issued the copy: the outermost cpu_op above its launch (aten::to rather than
    # its aten::copy_), the innermost one under the autograd engine's wrapper of a backward node
    top, inner = mc["top_op"].to_numpy().astype(np.int64), mc["op"].to_numpy().astype(np.int64)
    wrapper = np.array([t >= 0 and ctx.name(t).startswith(BACKWARD_NODE) for t in top.tolist()], dtype=bool)
    op = np.where((top >= 0) & ~wrapper, top, inner)
    op_name = [ctx.name(o) if o >= 0 else "(no op)" for o in op.tolist()]
    nbytes = mc["bytes"].to_numpy(dtype=np.float64)
    rows = group_rows(list(zip(dirs.tolist(), op_name)), {"bytes": nbytes, "gpu_us": mc["dur"].to_numpy()},
                      ("direction", "op"), "gpu_us")
    first_op = {}
    for d, nm, o in zip(dirs.tolist(), op_name, op.tolist()):
        first_op.setdefault((d, nm), o)
    for r in rows[:_SHAPE_LOOKUPS]:
        o = first_op[(r["direction"], r["op"])]
        r["example_shape"] = ctx.shape_of(o) if o >= 0 else ""
        r["bytes"] = int(r["bytes"])
    by_dir = {d: int((dirs == d).sum()) for d in sorted(set(dirs.tolist()))}
    parts = " + ".join(f"{n:,} {d}" for d, n in by_dir.items())
    total_b = float(np.nansum(nbytes))
    verdict = (f"{parts} {'copy' if len(mc) == 1 else 'copies'} through pageable host memory: "
               f"{fmt.nbytes(total_b)} in {fmt.dur(total_us)} of GPU time; top op {rows[0]['op']}")
    return [finding(cfg, verdict=verdict, count=len(mc), value=total_b, unit="bytes", stake_us=total_us,
                    stake_label="estimate (upper bound): the pageable copies' GPU time",
                    evidence=mc["event"].to_numpy(), evidence_us=mc["dur"].to_numpy(), details=rows)]


def _where_rows(ctx: CheckContext, events: np.ndarray, host_us: np.ndarray, idle_us: np.ndarray) -> list[dict]:
    keys = list(zip(ctx.names_of(events).tolist(), ctx.above_names(events)))
    return group_rows(keys, {"host_us": host_us, "gpu_idle_after_us": idle_us}, ("call", "above"), "gpu_idle_after_us")


def scalar_sync(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    ops = ctx.scalar_sync_ops
    if not ops.size or not ctx.has_gpu_work:
        return []
    ia = ctx.idle_after(ops)
    stake = ia.union_us()
    if stake < cfg["min_idle_us"]:
        return []
    host = np.maximum(ctx.kt.dur[ops], 0.0)
    rows = _where_rows(ctx, ops, host, ia.idle_us)
    names, counts = np.unique(ctx.names_of(ops).astype(str), return_counts=True)
    which = ", ".join(f"{nm} {c:,}" for c, nm in sorted(zip(counts.tolist(), names.tolist()), reverse=True)[:3])
    verdict = (f"{fmt.plural(ops.size, 'call')} read a GPU value and synchronised ({which}): host time "
               f"{fmt.dur(host.sum())}, GPU idle after {fmt.dur(stake)}; worst above: {rows[0]['above']}")
    return [finding(cfg, verdict=verdict, count=ops.size, value=float(host.sum()), unit=f"{fmt.US} host",
                    stake_us=stake, stake_label=IDLE_AFTER, evidence=ops, evidence_us=ia.idle_us, details=rows)]


def blocking_sync(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    kt = ctx.kt
    calls = ctx.kineto_syncs if ctx.kineto_syncs.size else ctx.driver_syncs
    calls = calls[~ctx.in_scalar_sync(calls)]
    calls = calls[np.argsort(kt.ts[calls], kind="stable")]
    if not calls.size:
        return []
    if ctx.has_gpu_work:
        ia = ctx.idle_after(calls)
        idle, stake = ia.idle_us, ia.union_us()
        seen = "GPU idle after"
    elif isinstance(kt, DriverTrace) and kt.n_driver:
        ids, gaps = idle_after_sync_calls(kt)
        at = {c: i for i, c in enumerate(calls.tolist())}
        idle = np.zeros(calls.size)
        for c, gap in zip(ids.tolist(), gaps.tolist()):
            if c in at:
                idle[at[c]] = gap
        stake = float(idle.sum())
        seen = "GPU idle (from the host) after"
    else:
        return []
    if stake < cfg["min_idle_us"]:
        return []
    host = np.maximum(kt.dur[calls], 0.0)
    rows = _where_rows(ctx, calls, host, idle)
    nm, cnt = np.unique(ctx.names_of(calls).astype(str), return_counts=True)
    which = ", ".join(f"{n} {c:,}" for c, n in sorted(zip(cnt.tolist(), nm.tolist()), reverse=True)[:3])
    verdict = (f"{fmt.plural(calls.size, 'blocking synchronize call')} ({which}): host waited "
               f"{fmt.dur(host.sum())}, {seen} {fmt.dur(stake)}; worst above: {rows[0]['above']}")
    return [finding(cfg, verdict=verdict, count=calls.size, value=float(host.sum()), unit=f"{fmt.US} host",
                    stake_us=stake, stake_label=IDLE_AFTER, evidence=calls, evidence_us=idle, details=rows)]


def input_stall(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    if not ctx.has_gpu_work:
        return []
    kt = ctx.kt
    spans = ctx.matching(cfg["pattern"], (Kind.ANNOTATION, Kind.PYTHON))
    if not spans.size:
        return []
    own = np.full(kt.n_nodes, -1, dtype=np.int64)
    own[spans] = spans
    spans = spans[fill_down(kt.parent, kt.depth, own, outermost=True)[spans] == spans]  # outermost only
    per, total = gpu_idle_within(kt, spans)
    if total < cfg["min_idle_us"]:
        return []
    span_us = float(np.maximum(kt.dur[spans], 0.0).sum())
    rows = group_rows([(s,) for s in ctx.names_of(spans).tolist()], {"host_us": kt.dur[spans], "gpu_idle_us": per},
                      ("span",), "gpu_idle_us")
    share = 100.0 * total / span_us if span_us > 0 else 0.0
    verdict = (f"GPU idle {fmt.dur(total)} inside {fmt.plural(spans.size, 'data loading span')} "
               f"({fmt.pct(share)} of their {fmt.dur(span_us)}); worst: {fmt.dur(per.max())}")
    keep = per > 0
    return [finding(cfg, verdict=verdict, count=spans.size, value=total, unit=f"{fmt.US} GPU idle", stake_us=total,
                    stake_label="estimate: GPU idle inside the data loading spans", evidence=spans[keep],
                    evidence_us=per[keep], details=rows)]
