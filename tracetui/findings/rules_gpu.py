"""Rules about how the GPU's time is spent: launch-bound stretches of short kernels,
communication left exposed, heavy kernels with low occupancy.  Methods and thresholds:
``default_findings.toml``."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..analysis.gpu_breakdown import COMMUNICATION, timeline_from_arrays
from ..analysis.occupancy import occupancy_of_rows
from ..analysis.tables import name_codes
from ..job.nccl import collective_kind, parse_kernel_name
from . import fmt
from .base import finding
from .context import CheckContext
from .spec import Finding, RuleConfig

#: kernel names shown per repeating sequence
_SEQ_NAMES = 4


_WORDS = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|sendrecv", re.IGNORECASE)


def _gap_before(ctx: CheckContext, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(idle gap before each GPU event on its stream µs, whether that gap is a host wait),
    from :func:`~tracetui.analysis.gaps.idle_gaps` (0 / False where the stream was not idle)."""
    gaps = ctx.gaps
    gap = np.zeros(events.size)
    wait = np.zeros(events.size, dtype=bool)
    if gaps.empty or not events.size:
        return gap, wait
    nxt = gaps["next_event"].to_numpy(dtype=np.int64)
    order = np.argsort(events)
    pos = np.searchsorted(events[order], nxt)
    ok = (pos < events.size) & (events[order][np.minimum(pos, events.size - 1)] == nxt)
    at = order[pos[ok]]
    gap[at] = gaps["dur"].to_numpy()[ok]
    wait[at] = (gaps["idle_class"].to_numpy() == "host_wait")[ok]
    return gap, wait


def launch_bound(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    if g.empty:
        return []
    g = g.assign(_d=g["device"].astype(str), _s=g["stream"].astype(str))
    g = g.sort_values(["_d", "_s", "ts"], kind="stable")
    ev = g["event"].to_numpy(dtype=np.int64)
    dur = g["dur"].to_numpy()
    gap, wait = _gap_before(ctx, ev)
    short = (g["kind"].astype(str).to_numpy() == "kernel") & (dur < cfg["short_kernel_us"])
    lane = (g["_d"] + "\x00" + g["_s"]).to_numpy()
    new_lane = np.ones(ev.size, dtype=bool)
    new_lane[1:] = lane[1:] != lane[:-1]
    # a run: consecutive short kernels of one stream, each within max_gap_us of the previous
    starts = short & (new_lane | ~np.roll(short, 1) | (gap > cfg["max_gap_us"]))
    run = np.cumsum(starts) - 1
    sel = np.flatnonzero(short)
    if not sel.size:
        return []
    r = run[sel]
    waited = np.where(wait[sel] & ~starts[sel], gap[sel], 0.0)  # the gap before a run's first kernel is not in it
    df = pd.DataFrame({"run": r, "event": ev[sel], "name_id": ctx.kt.name_id[ev[sel]], "ts": g["ts"].to_numpy()[sel],
                       "end": g["end"].to_numpy()[sel], "waited": waited})
    runs = df.groupby("run", sort=True).agg(first=("event", "first"), n=("event", "size"), ts=("ts", "min"),
                                            end=("end", "max"), waited=("waited", "sum"))
    span = (runs["end"] - runs["ts"]).to_numpy()
    ok = (runs["n"].to_numpy() >= cfg["min_kernels"]) & (
        100.0 * runs["waited"].to_numpy() >= cfg["min_idle_pct"] * np.maximum(span, 1e-9))
    good = runs[ok]
    stake = float(good["waited"].sum())
    if not len(good) or stake < cfg["min_idle_us"]:
        return []
    seqs = df[df["run"].isin(good.index)].groupby("run", sort=True)["name_id"].agg(tuple)
    by_seq: dict[tuple, list[int]] = {}
    for run_id, seq in seqs.items():
        by_seq.setdefault(seq, []).append(int(run_id))
    rows = []
    for seq, members in by_seq.items():
        w = float(good.loc[members, "waited"].sum())
        names = [fmt.short_name(ctx.kt.names[int(i)]) for i in seq[:_SEQ_NAMES]]
        rows.append({"kernels": len(seq), "runs": len(members), "waited_us": round(w, 3),
                     "sequence": " > ".join(names) + (" > …" if len(seq) > _SEQ_NAMES else ""),
                     "first_kernel": int(good.loc[members[0], "first"])})
    rows.sort(key=lambda x: (-x["runs"] * (x["runs"] > 1), -x["waited_us"]))
    top = rows[0]
    kernels = int(good["n"].sum())
    rep = (f"a {top['kernels']}-kernel sequence repeats {top['runs']:,} times" if top["runs"] > 1
           else "no sequence repeats")
    verdict = (f"{fmt.plural(kernels, 'short kernel')} in {fmt.plural(len(good), 'launch-bound run')}: the GPU "
               f"waited {fmt.dur(stake)} for launches; {rep}")
    order = np.argsort(good["ts"].to_numpy(), kind="stable")
    return [finding(cfg, verdict=verdict, count=kernels, value=stake, unit=f"{fmt.US} GPU idle", stake_us=stake,
                    stake_label="estimate: host-wait gaps inside launch-bound runs",
                    evidence=good["first"].to_numpy(dtype=np.int64)[order],
                    evidence_us=good["waited"].to_numpy()[order], details=rows[:20])]


def _collective(name: str) -> str:
    """The collective a communication kernel runs: from the NCCL/RCCL name, else a collective
    word in it (``multimem_all_reduce_kernel``), else the kernel's short name."""
    kind = parse_kernel_name(name)[0]
    if not kind and (m := _WORDS.search(name)):
        kind = collective_kind(m.group(0))
    return kind or fmt.short_name(name)


def exposed_comm(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    if g.empty:
        return []
    kind = g["kind"].astype(str).to_numpy()
    is_memcpy = kind == "memcpy"
    is_comm = (g["kernel_category"].to_numpy() == COMMUNICATION) & ~is_memcpy
    if not is_comm.any():
        return []
    is_comp = ~is_memcpy & ~is_comm
    names = g["name"].to_numpy()
    coll = np.full(len(g), "", dtype=object)
    cache: dict[str, str] = {}
    for i in np.flatnonzero(is_comm).tolist():
        nm = names[i]
        coll[i] = cache.get(nm) or cache.setdefault(nm, _collective(nm))
    dev = g["device"].astype(str).to_numpy()
    ts, end = g["ts"].to_numpy(), g["end"].to_numpy()
    out = []
    for c in sorted(set(coll[is_comm].tolist())):
        exposed, share, worst_dev, members = 0.0, 0.0, "", []
        for d in sorted(set(dev[coll == c].tolist())):
            on = dev == d
            mine = on & (coll == c)
            tl = timeline_from_arrays(ts[on], end[on], is_comp[on], mine[on], np.zeros(int(on.sum()), bool))
            span = tl["total"] or 1.0
            exposed += tl["exposed_comm"]
            if 100.0 * tl["exposed_comm"] / span > share:
                share, worst_dev = 100.0 * tl["exposed_comm"] / span, d
            members.append(np.flatnonzero(mine))
        if exposed < cfg["min_exposed_us"] or share < cfg["min_exposed_pct"]:
            continue
        idx = np.concatenate(members)
        idx = idx[np.argsort(ts[idx], kind="stable")]
        total = float((end[idx] - ts[idx]).sum())
        verdict = (f"{c}: {fmt.dur(exposed)} of {fmt.dur(total)} not overlapped with computation "
                   f"({fmt.plural(idx.size, 'kernel')}; {fmt.pct(share)} of device {worst_dev}'s GPU span)")
        out.append(finding(cfg, verdict=verdict, count=idx.size, value=exposed, unit=f"{fmt.US} exposed",
                           stake_us=exposed,
                           stake_label="estimate: the collective's time with no computation on its device",
                           evidence=g["event"].to_numpy(dtype=np.int64)[idx], check=c,
                           title=f"{cfg.spec.title}: {c}",
                           details=[{"collective": c, "kernels": int(idx.size), "comm_us": round(total, 3),
                                     "exposed_us": round(exposed, 3), "worst_device": worst_dev,
                                     "exposed_pct_of_span": round(share, 3)}]))
    return out


def low_occupancy(ctx: CheckContext, cfg: RuleConfig) -> list[Finding]:
    g = ctx.gpu
    k = g[g["kind"].astype(str) == "kernel"]
    total = float(k["dur"].sum())
    k = k[k["kernel_category"] != COMMUNICATION]  # collectives run few blocks by design
    if k.empty or total <= 0:
        return []
    keys = ["device", "name", "block", "registers", "shared_mem"]
    codes, names = name_codes(k["name"])  # grouped by interned code: exact, one hash per name
    kk = k[keys + ["dur", "event"]].assign(device=k["device"].astype(str), name=codes, block=k["block"].fillna(""),
                                            registers=k["registers"].fillna(-1), shared_mem=k["shared_mem"].fillna(-1))
    grp = kk.groupby(keys, sort=False).agg(gpu_us=("dur", "sum"), count=("dur", "size")).reset_index()
    grp = grp[100.0 * grp["gpu_us"] / total >= cfg["min_share_pct"]]
    if grp.empty:
        return []
    dev_of = {str(d): d for d in k["device"].unique().tolist()}
    occ = occupancy_of_rows(ctx.kt, [dev_of[d] for d in grp["device"]], list(grp["block"].replace("", None)),
                            [None if r < 0 else r for r in grp["registers"]],
                            [None if s < 0 else s for s in grp["shared_mem"]])
    rows, members = [], []
    for (_, r), o in zip(grp.iterrows(), occ):
        if o.pct is None or o.pct >= cfg["max_occupancy_pct"]:
            continue
        rows.append({"kernel": fmt.short_name(names[int(r["name"])]), "device": r["device"], "block": r["block"],
                     "registers": int(r["registers"]), "shared_mem": int(r["shared_mem"]),
                     "occupancy_pct": round(o.pct, 2), "limiter": o.limiter, "count": int(r["count"]),
                     "gpu_us": round(float(r["gpu_us"]), 3), "share_pct": round(100.0 * r["gpu_us"] / total, 2)})
        m = kk[(kk["device"] == r["device"]) & (kk["name"] == r["name"]) & (kk["block"] == r["block"])
               & (kk["registers"] == r["registers"]) & (kk["shared_mem"] == r["shared_mem"])]
        members.append(m["event"].to_numpy(dtype=np.int64))
    if not rows:
        return []
    rows.sort(key=lambda x: -x["gpu_us"])
    share = sum(x["share_pct"] for x in rows)
    ev = np.concatenate(members)
    ev = ev[np.argsort(ctx.kt.ts[ev], kind="stable")]
    t = rows[0]
    verdict = (f"{fmt.plural(len(rows), 'kernel group')} with {fmt.pct(share)} of kernel time run at a theoretical "
               f"occupancy under {fmt.pct(cfg['max_occupancy_pct'])}; top: {t['kernel']} {fmt.pct(t['share_pct'])} "
               f"at {fmt.pct(t['occupancy_pct'])} (limited by {t['limiter']})")
    return [finding(cfg, verdict=verdict, count=int(ev.size), value=share, unit=f"{fmt.PCT} of kernel time",
                    stake_us=None, stake_label="", evidence=ev, evidence_us=ctx.kt.dur[ev], details=rows)]
