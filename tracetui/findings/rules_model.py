"""Rules about the training loop: forward ops recomputed in backward, steps far above the
median step.  Methods and thresholds: ``default_findings.toml``."""

from __future__ import annotations

import re

import numpy as np

from ..analysis.gpu_breakdown import gpu_timeline
from ..analysis.launches import launch_frame, step_table
from ..analysis.steps import profiler_steps
from ..kineto.kinds import Kind
from ..tree.propagate import fill_down
from . import fmt
from .base import finding, group_rows
from .context import BACKWARD_NODE, CheckContext
from .spec import Finding, RuleConfig

_BACKWARD_NAME = re.compile(r"Backward\d*$|^autograd::")


def recomputed_ops(ctx: CheckContext) -> np.ndarray:
    """Outermost forward ops run during backward (see the rule's method), in time order."""
    kt = ctx.kt
    n = kt.n_events
    is_op = kt.kind == int(Kind.CPU_OP)
    uniq = np.unique(kt.name_id[is_op])
    bwd_ids = [int(u) for u in uniq.tolist() if kt.names[int(u)].startswith(BACKWARD_NODE)]
    if not bwd_ids:
        return np.zeros(0, np.int64)
    bwd_name_ids = [int(u) for u in uniq.tolist() if _BACKWARD_NAME.search(kt.names[int(u)])]
    own = np.full(kt.n_nodes, -1, dtype=np.int64)
    bwd = np.flatnonzero(is_op & np.isin(kt.name_id, bwd_ids))
    own[bwd] = bwd
    under = fill_down(kt.parent, kt.depth, own, outermost=False)  # nearest backward node at or above
    par = kt.parent[:n].astype(np.int64)
    in_bwd = np.where(par >= 0, under[np.maximum(par, 0)], -1) >= 0
    cand = is_op & in_bwd & (kt.seq >= 0) & (kt.fwd_tid <= 0) & ~np.isin(kt.name_id, bwd_name_ids)
    own = np.full(kt.n_nodes, -1, dtype=np.int64)
    own[:n][cand] = np.flatnonzero(cand)
    top = fill_down(kt.parent, kt.depth, own, outermost=True)
    ops = np.flatnonzero(cand)
    ops = ops[top[ops] == ops]
    return ops[np.argsort(kt.ts[ops], kind="stable")]


def recompute(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    ops = recomputed_ops(ctx)
    if not ops.size:
        return []
    gpu_us = ctx.subtree_gpu_us[ops]
    total = float(gpu_us.sum())
    if total < cfg["min_gpu_us"]:
        return []
    host = np.maximum(ctx.kt.dur[ops], 0.0)
    rows = group_rows([(s,) for s in ctx.names_of(ops).tolist()], {"gpu_us": gpu_us, "host_us": host}, ("op",),
                      "gpu_us")
    top = ", ".join(f"{r['op']} {r['count']:,}" for r in rows[:3])
    verdict = (f"{fmt.plural(ops.size, 'forward op')} recomputed in backward ({top}): {fmt.dur(total)} of GPU time, "
               f"{fmt.dur(host.sum())} of host time")
    return [finding(cfg, verdict=verdict, count=ops.size, value=total, unit=f"{fmt.US} GPU", stake_us=total,
                    stake_label="estimate: the recomputed ops' GPU time", evidence=ops, evidence_us=gpu_us,
                    details=rows)]


def _step_metrics(ctx: CheckContext, steps: list[int]) -> dict[str, np.ndarray]:
    kt = ctx.kt
    g = ctx.gpu
    n = len(steps)
    busy, idle = np.zeros(n), np.zeros(n)
    if not g.empty:
        ts = g["ts"].to_numpy()
        longest = float(g["dur"].max())
        for i, s in enumerate(steps):
            a, b = float(kt.ts[s]), float(kt.ts[s] + kt.dur[s])
            lo, hi = np.searchsorted(ts, a - longest, "left"), np.searchsorted(ts, b, "right")
            tl = gpu_timeline(g.iloc[lo:hi], window=(a, b))
            busy[i], idle[i] = tl["busy"], tl["idle"]
    table = step_table(kt, launch_frame(kt, g))
    return {"dur_us": kt.dur[steps].astype(np.float64), "gpu_busy_us": busy, "gpu_idle_us": idle,
            "kernel_launches": table["kernel_launches"].to_numpy(dtype=np.float64),
            "gpu_events": table["gpu_events"].to_numpy(dtype=np.float64)}


_TIMES = (("gpu_idle_us", "GPU idle"), ("gpu_busy_us", "GPU busy"))
_COUNTS = (("kernel_launches", "kernel launches"), ("gpu_events", "GPU events"))


def _differs(m: dict[str, np.ndarray], med: dict[str, float], i: int) -> str:
    """What differs most in step ``i`` from the median step, in words."""
    parts = []
    d_time = [(m[k][i] - med[k], label) for k, label in _TIMES]
    d, label = max(d_time, key=lambda x: abs(x[0]))
    parts.append(f"{label} {'+' if d >= 0 else '-'}{fmt.dur(abs(d))}")
    for k, label in _COUNTS:
        dc = m[k][i] - med[k]
        if med[k] > 0 and abs(dc) >= 0.1 * med[k]:
            parts.append(f"{label} {'+' if dc >= 0 else '-'}{fmt.count(abs(dc))}")
            break
    return ", ".join(parts)


def slow_step(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    kt = ctx.kt
    steps = profiler_steps(kt)
    if len(steps) < cfg["min_steps"]:
        return []
    dur = kt.dur[steps].astype(np.float64)
    med_dur = float(np.median(dur))
    slow = np.flatnonzero((dur > cfg["factor"] * med_dur) & (dur - med_dur >= cfg["min_excess_us"]))
    if not slow.size:
        return []
    m = _step_metrics(ctx, steps)
    med = {k: float(np.median(v)) for k, v in m.items()}
    rows = []
    for i in slow.tolist():
        row = {"step": ctx.name(steps[i]), "event": int(steps[i]), "excess_us": round(float(dur[i] - med_dur), 3),
               "what_differs": _differs(m, med, i)}
        for k, v in m.items():
            row[k] = round(float(v[i]), 3)
            row[f"median_{k}"] = round(med[k], 3)
        rows.append(row)
    rows.sort(key=lambda r: -r["excess_us"])
    excess = dur[slow] - med_dur
    stake = float(excess.sum())
    w = rows[0]
    verdict = (f"{len(slow)} of {fmt.plural(len(steps), 'step')} take over {fmt.ratio(cfg['factor'])} the median "
               f"{fmt.dur(med_dur)}: worst {w['step']} +{fmt.dur(w['excess_us'])} ({w['what_differs']})")
    ev = np.asarray(steps, dtype=np.int64)[slow]
    return [finding(cfg, verdict=verdict, count=slow.size, value=float(dur[slow].max() / med_dur) if med_dur > 0
                    else None, unit="x median", stake_us=stake,
                    stake_label="estimate: the slow steps' time above the median step", evidence=ev,
                    evidence_us=excess, details=rows)]
