"""``tracetui check JOB``: every rank of a job checked in parallel processes (or on a Dask
cluster), each through the per-file cache like ``tracetui summary JOB``; the findings come
back tagged with their rank (evidence ids are that rank's event ids).  The job-scope rules
(:data:`JOB_CHECKS`: ``straggler``) then run over the ranks joined in the parent, on the
collectives each worker read (:func:`tracetui.job.job.join_ranks`, the join of ``tracetui
summary JOB``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..job.job import JoinedRanks, join_ranks, run_per_rank
from ..job.stragglers import collective_kind_of, ranking_key
from ..job.worker import guarded
from . import fmt
from .base import finding
from .engine import FindingsReport, rules_table
from .spec import Finding, RuleConfig, default_specs, overrides_as_data, parse_overrides, rule_configs

Progress = Callable[[str, float], None]


def check_rank(task: dict[str, Any]) -> dict[str, Any]:
    """Load one rank (``task``: ``rank``, ``kineto``, ``et``, ``use_cache``, ``overrides``
    (:func:`~tracetui.findings.spec.overrides_as_data`), ``categories``, ``collectives``) and
    check it: ``{"rank", "findings": [as_json ...], "error"}``; with ``collectives`` true
    (a job-scope rule needs them) also the rank's ``collectives``
    (:func:`~tracetui.job.comms.rank_collectives` with
    :func:`~tracetui.job.before.arrival_context`), ``start_us`` and ``steps`` (its
    ProfilerStep count).  Never raises for bad input."""
    out: dict[str, Any] = {"rank": task["rank"], "findings": [], "error": None, "collectives": [],
                           "start_us": None, "steps": 0}

    def work() -> None:
        from ..analysis.categories import get_categorizer
        from ..store.traces import load_cached
        from .engine import check_findings

        paths = [task["kineto"]] + ([task["et"]] if task.get("et") else [])
        linked = load_cached(paths, use_cache=task.get("use_cache", True))
        configs = parse_overrides(task["overrides"], "<job task>", default_specs())
        found = check_findings(linked, configs, get_categorizer(task.get("categories")))
        out["findings"] = [f.as_json() for f in found]
        if task.get("collectives"):
            from ..analysis.steps import profiler_steps
            from ..job.before import arrival_context
            from ..job.comms import rank_collectives
            from ..job.worker import first_event_us

            kt = linked.kineto
            out["collectives"] = arrival_context(kt, rank_collectives(kt, linked.et, linked.link))
            out["start_us"] = first_event_us(kt)
            out["steps"] = int(profiler_steps(kt).size)

    return guarded(task, out, work)


def _failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    return {"rank": task["rank"], "findings": [], "error": message, "collectives": [], "start_us": None, "steps": 0}


#: the fields of :func:`~tracetui.job.before.arrival_context` a straggler's details row keeps
_BEFORE = ("host_before", "host_before_name", "host_before_dur_us", "host_gap_us", "host_longest",
           "host_longest_name", "host_longest_dur_us", "since_previous_us", "gpu_before", "gpu_before_name",
           "gpu_gap_us", "launch_delay_us")


@dataclass
class JobContext:
    """What the job-scope rules read: the ranks ``joined`` (matched collectives and their
    arrivals), each loaded rank's collective rows (with what it did before each: rank ->
    rows) and its profiler step count."""

    joined: JoinedRanks
    rows: dict[int, list[dict[str, Any]]]
    steps: dict[int, int]


def _worst(d: dict[str, Any], colls: list[dict[str, Any]]) -> str:
    """What the straggler did before the collective it was latest at (a details row)."""
    c = colls[d["index"]]
    which = f"{d['collective']} #{c['seq'] if c['seq'] is not None else c['index']}"
    parts = []
    if d.get("host_longest_name"):
        since = (f"in the {fmt.dur(d['since_previous_us'])} since its previous collective"
                 if d.get("since_previous_us") is not None else "before it")
        parts.append(f"{since}, its host's longest op was {d['host_longest_name']} "
                     f"({fmt.dur(d['host_longest_dur_us'])})")
    if d.get("host_before_name") and d["host_before_name"] != d.get("host_longest_name"):
        parts.append(f"just before it: {d['host_before_name']}")
    if d.get("gpu_before_name"):
        gap = d["gpu_gap_us"]
        when = f"until {fmt.dur(gap)} before" if gap >= 0 else f"still running ({fmt.dur(-gap)} left)"
        parts.append(f"its GPU ran {fmt.short_name(d['gpu_before_name'])} {when}")
    return f"Worst: {which}, {fmt.dur(d['late_by_us'])} after the next-latest rank" + (
        ": " + "; ".join(parts) if parts else "")


def straggler(ctx: JobContext, cfg: RuleConfig) -> list[Finding]:
    """Per collective kind (barriers a kind of their own), the rank that arrives last most
    often (the ranking of :func:`tracetui.job.stragglers.arrivals` over that kind's numbers),
    what the others waited for it, and what it did before its late collectives."""
    arr = ctx.joined.arrivals
    out = []
    for kind in sorted({k for s in arr["per_rank"] for k in s["by_kind"]}):
        ranked = sorted(({"rank": s["rank"], **s["by_kind"][kind]} for s in arr["per_rank"] if kind in s["by_kind"]),
                        key=ranking_key)
        if ranked and ranked[0]["times_last"]:
            out += _kind_straggler(ctx, cfg, kind, ranked)
    return out


def _kind_straggler(ctx: JobContext, cfg: RuleConfig, kind: str, ranked: list[dict[str, Any]]) -> list[Finding]:
    """The finding for the first rank of ``ranked`` (one kind's ranking), if its thresholds hold."""
    top, rank = ranked[0], ranked[0]["rank"]
    colls = ctx.joined.collectives
    # the collectives of this kind it arrived last at, as arrivals counts them (a positive skew)
    late = [a for a in ctx.joined.arrivals["per_collective"]
            if a["kind"] == kind and a["last_rank"] == rank and a["skew_us"] > 0]
    chance = sum(1.0 / c["ranks"] for c in colls
                 if collective_kind_of(c) == kind and rank in c["members"] and c["ranks"] >= 2)
    wait = float(sum(a["late_by_us"] for a in late))
    times = len(late)
    if times < cfg["min_times_last"] or times < cfg["min_times_chance"] * chance or wait < cfg["min_wait_us"]:
        return []
    row_of = {int(r["kernel"]): r for r in ctx.rows.get(rank, [])}
    details = []
    for a in late:
        m = colls[a["index"]]["members"][rank]
        r = row_of.get(int(m["kernel"]), {})
        details.append({"index": a["index"], "collective": a["name"], "kind": kind, "event": int(m["kernel"]),
                        "op": int(m["op"]), "late_by_us": round(a["late_by_us"], 3), "skew_us": round(a["skew_us"], 3),
                        **{k: r.get(k) for k in _BEFORE}})
    details.sort(key=lambda d: colls[d["index"]]["members"][rank]["start_us"])
    tied = [s["rank"] for s in ranked[1:] if s["times_last"] == times]
    also = f" (as often as rank{'s' if len(tied) > 1 else ''} {', '.join(map(str, tied))})" if tied else ""
    overall = next(s for s in ctx.joined.arrivals["per_rank"] if s["rank"] == rank)
    verdict = (f"rank {rank} arrived last at {fmt.count(times)} of {fmt.count(top['collectives'])} {kind} "
               f"collectives{also}, {fmt.ratio(times / chance)} as often as chance (all kinds: "
               f"{fmt.count(overall['times_last'])} of {fmt.count(overall['collectives'])}); median lateness "
               f"{fmt.dur(top['median_late_us'])}; the others waited {fmt.dur(wait)} for it alone. "
               + _worst(max(details, key=lambda d: d["late_by_us"]), colls))
    steps = ctx.steps.get(rank, 0)
    per_step = f"; {fmt.dur(wait / steps)} per step over {fmt.plural(steps, 'step')}" if steps else ""
    label = (f"estimate: what the other ranks waited for rank {rank} alone at the {kind} collectives it arrived "
             f"last at (its start - the next-latest start), summed{per_step}; host clocks taken as agreeing")
    f = finding(cfg, verdict=verdict, count=times, value=float(top["median_late_us"]),
                unit=f"{fmt.US} median lateness", stake_us=wait, stake_label=label,
                evidence=np.asarray([d["event"] for d in details], dtype=np.int64),
                evidence_us=np.asarray([d["late_by_us"] for d in details]), details=details, check=kind,
                title=f"{cfg.spec.title}: {kind}")
    f.rank = rank
    return [f]


#: rule id -> its function (job-scope rules); the data of each is in default_findings.toml
JOB_CHECKS: dict[str, Callable[[JobContext, RuleConfig], list[Finding]]] = {"straggler": straggler}


def check_job(inputs: list[str], configs: dict[str, RuleConfig] | None = None, *, categories: str | None = None,
              use_cache: bool = True, workers: int | None = None, scheduler: str | None = None,
              progress: Progress | None = None, follow_links: bool = False) -> FindingsReport:
    """Check every rank of the job named by ``inputs``, then the job-scope rules over the
    ranks joined; findings of all ranks, sorted by time at stake.  Ranks that fail are named
    in ``errors`` (the others are checked), with the join's warnings."""
    configs = rule_configs() if configs is None else configs
    report = progress or (lambda msg, frac: None)
    job_rules = [c for c in configs.values() if c.spec.scope == "job" and c.enabled]
    fields = {"use_cache": use_cache, "overrides": overrides_as_data(configs), "categories": categories,
              "collectives": bool(job_rules)}
    layout, outs = run_per_rank(inputs, check_rank, fields, _failed, workers=workers, scheduler=scheduler,
                                progress=report, verb="checked", follow_links=follow_links)
    findings = [Finding.from_json(f, rank=o["rank"]) for o in outs for f in o["findings"]]
    errors = list(layout.warnings) + [f"rank {o['rank']}: {o['error']}" for o in outs if o["error"]]
    if job_rules:
        ok = [o for o in outs if not o["error"]]
        joined = join_ranks({o["rank"]: o["collectives"] for o in ok}, {o["rank"]: o["start_us"] for o in ok},
                            layout.world_size)
        errors += joined.warnings
        ctx = JobContext(joined, {o["rank"]: o["collectives"] for o in ok}, {o["rank"]: o["steps"] for o in ok})
        for cfg in job_rules:
            findings += JOB_CHECKS[cfg.spec.id](ctx, cfg)
    findings.sort(key=Finding.sort_key)
    where = inputs[0] if len(inputs) == 1 else f"{len(inputs)} inputs"
    source = f"job {os.path.basename(os.path.normpath(where))} ({len(layout.ranks)} ranks)"
    return FindingsReport(source, findings, rules_table(configs, findings), ranks=[r.rank for r in layout.ranks],
                          errors=errors)
