"""``trace_health``: what in the trace makes some numbers untrustworthy, and which numbers.
One finding per problem (``check``); method and thresholds: ``default_findings.toml``."""

from __future__ import annotations

import numpy as np

from ..kineto.kinds import GPU_KINDS, Kind
from . import fmt
from .base import finding
from .context import CheckContext
from .spec import Finding, RuleConfig

#: load/link warning kinds -> (check, the numbers they affect)
WARNING_CHECKS: dict[str, tuple[str, str]] = {
    "truncated": ("damaged_file", "every count and total misses what was cut off"),
    "trailing_data": ("damaged_file", "bytes after the document were ignored"),
    "rejected": ("damaged_file", "rejected elements are in no count or total"),
    "invalid_utf8": ("damaged_file", "names with replaced bytes may not match other traces"),
    "repaired": ("damaged_file", "coerced fields may be wrong: links by correlation or ids can be missing"),
    "bare_constant": ("damaged_file", "values read from NaN/Infinity tokens are not numbers"),
    "negative_duration": ("bad_times", "those events count as zero length in every time"),
    "bad_duration": ("bad_times", "those events count as zero length in every time"),
    "no_timestamp": ("bad_times", "those events are outside the tree and every time window"),
    "begin_end": ("bad_times", "unmatched begin events count as zero length"),
    "outlier_timestamp": ("clock_jump", "the trace span and the origin ignore those events"),
    "duplicate_correlation": ("reused_correlation", "GPU work of the later launches is attributed to the first"),
    "mismatched_pair": ("et_link", "ET shapes and links shown for Kineto ops may belong to other ops"),
    "driver_unlinked": ("driver_link", "driver calls are not matched to Kineto calls"),
    "driver_link_outliers": ("driver_link", "some driver calls are not matched to Kineto calls"),
}
AFFECTS_GPU_SUMS = "kernel-time sums count the overlap twice; busy/idle unions once"


def _verb(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def _health(cfg: RuleConfig, check: str, verdict: str, count: int, evidence: np.ndarray,
            evidence_us: np.ndarray | None = None, details: list | None = None) -> Finding:
    return finding(cfg, verdict=verdict, count=count, value=float(count), unit="events", stake_us=None, stake_label="",
                   evidence=evidence, evidence_us=evidence_us, check=check, details=details,
                   title=f"Trace health: {check.replace('_', ' ')}")


def _stream_overlaps(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    if g.empty:
        return []
    g = g.assign(_d=g["device"].astype(str), _s=g["stream"].astype(str)).sort_values(["_d", "_s", "ts"], kind="stable")
    prev_end = g.groupby(["_d", "_s"], sort=False)["end"].cummax().groupby([g["_d"], g["_s"]], sort=False).shift(1)
    over = (prev_end - g["ts"]).to_numpy(dtype=np.float64)
    hit = np.nan_to_num(over, nan=-1.0) > cfg["overlap_tolerance_us"]
    if not hit.any():
        return []
    ev, amount = g["event"].to_numpy(dtype=np.int64)[hit], over[hit]
    o = np.argsort(ctx.kt.ts[ev], kind="stable")
    streams = len(set(zip(g["_d"].to_numpy()[hit].tolist(), g["_s"].to_numpy()[hit].tolist())))
    verdict = (f"{fmt.plural(ev.size, 'GPU event')} on {fmt.plural(streams, 'stream')} "
               f"{_verb(ev.size, 'starts', 'start')} before the previous one ends (by up to {fmt.dur(amount.max())}): "
               f"{AFFECTS_GPU_SUMS}")
    return [_health(cfg, "stream_overlap", verdict, ev.size, ev[o], amount[o])]


def _thread_overlaps(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    kt = ctx.kt
    n = kt.n_events
    par = kt.parent[:n].astype(np.int64)
    host = ~np.isin(kt.kind, [int(k) for k in GPU_KINDS]) & (kt.kind != int(Kind.INSTANT))
    ok = host & (par >= 0) & (par < n)
    p = np.where(ok, par, 0)
    over = np.where(ok, (kt.ts + kt.dur) - (kt.ts[p] + kt.dur[p]), 0.0) if n else np.zeros(0)
    hit = over > cfg["overlap_tolerance_us"]
    if not hit.any():
        return []
    ev = np.flatnonzero(hit)
    o = np.argsort(kt.ts[ev], kind="stable")
    verdict = (f"{fmt.plural(ev.size, 'host event')} {_verb(ev.size, 'ends', 'end')} after the parent (by up to "
               f"{fmt.dur(over[hit].max())}): "
               f"not nested, so their parent's self time and the op tree around them are approximate")
    return [_health(cfg, "thread_overlap", verdict, ev.size, ev[o], over[hit][o])]


def _gpu_links(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    out: list[Finding] = []
    if g.empty:
        return out
    ev = g["event"].to_numpy(dtype=np.int64)
    skew = (g["launch_ts"] - g["ts"]).to_numpy(dtype=np.float64)
    hit = np.nan_to_num(skew, nan=-1.0) > cfg["skew_tolerance_us"]
    if hit.any():
        verdict = (f"{fmt.plural(int(hit.sum()), 'GPU event')} {_verb(int(hit.sum()), 'starts', 'start')} before "
                   f"the launch call (by up to "
                   f"{fmt.dur(skew[hit].max())}): host and GPU clocks disagree; launch delays and host-wait gaps "
                   f"are off by as much")
        out.append(_health(cfg, "clock_skew", verdict, int(hit.sum()), ev[hit], skew[hit]))
    dur = g["dur"].to_numpy()
    long = dur > cfg["absurd_duration_us"]
    if long.any():
        verdict = (f"{fmt.plural(int(long.sum()), 'GPU event')} {_verb(int(long.sum()), 'lasts', 'last')} longer than "
                   f"{fmt.dur(cfg['absurd_duration_us'])} "
                   f"(up to {fmt.dur(dur[long].max())}): every GPU time and the trace span include them")
        out.append(_health(cfg, "absurd_duration", verdict, int(long.sum()), ev[long], dur[long]))
    no_launch = g["launch"].to_numpy() < 0
    if no_launch.any():
        st = ctx.kt.gpu_stats
        verdict = (f"{fmt.plural(int(no_launch.sum()), 'GPU event')} of {fmt.count(len(g))} "
                   f"{_verb(int(no_launch.sum()), 'has', 'have')} no launch in the trace "
                   f"({fmt.count(st.launch_missing)} launch missing, {fmt.count(st.no_correlation)} no correlation): "
                   f"{fmt.dur(dur[no_launch].sum())} of GPU time belongs to no op; launch statistics leave them out")
        out.append(_health(cfg, "unlinked_gpu", verdict, int(no_launch.sum()), ev[no_launch], dur[no_launch]))
    return out


def _reported(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    """The loaders' and linkers' warnings that say numbers are affected, one finding per check."""
    by: dict[str, list[tuple[str, int, str]]] = {}
    for w in ctx.linked.all_warnings():
        if w.kind in WARNING_CHECKS:
            check, affects = WARNING_CHECKS[w.kind]
            by.setdefault(check, []).append((w.message, int(w.count), affects))
    link = ctx.linked.link
    if link is not None and link.stats.heuristic and not link.stats.suspect_mismatch:
        by.setdefault("et_link", []).append(
            (f"{fmt.count(link.stats.heuristic)} ET ops linked by name-and-order alignment (heuristic)",
             int(link.stats.heuristic), "ET shapes and links shown for those ops may belong to other ops"))
    out = []
    for check, items in by.items():
        count = sum(c for _, c, _ in items)
        msg = items[0][0] + (f" (and {len(items) - 1} more)" if len(items) > 1 else "")
        verdict = f"{msg}: {items[0][2]}"
        details = [{"message": m, "count": c, "affects": a} for m, c, a in items]
        out.append(_health(cfg, check, verdict, count, np.zeros(0, np.int64), details=details))
    return out


def trace_health(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    return [*_stream_overlaps(ctx, cfg), *_thread_overlaps(ctx, cfg), *_gpu_links(ctx, cfg), *_reported(ctx, cfg)]
