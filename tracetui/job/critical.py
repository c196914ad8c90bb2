"""The critical path of a step across the ranks of a job.

A collective ends on every rank only after its last rank arrives, so the path of a slow
step can run through another rank: walking back from the end of the step on the rank
that finished last, at each collective kernel on the path whose last rank started it
later than this rank (by more than :data:`CROSS_TOL_US`), the path crosses to that rank
at its arrival (the start of its kernel of that collective) and continues back there.
The part of the collective after the last arrival stays on the first rank; its wait for
the late rank is replaced by what the late rank did before it arrived.

Two rounds of per-rank work, each on the process pool or the Dask cluster
(:class:`~tracetui.job.executor.Runner`); only small results travel:

1. :func:`rank_paths`: per rank and window, the end of its path and, for the path and
   for every collective kernel in the window, the collective kernels on its chain;
2. :func:`rank_route_segments`: for the ranks the route passes, the segments of its
   stretches (and the ranks' slack).

Collectives are matched across ranks as ``tracetui summary`` matches them
(:func:`~tracetui.job.match.match_collectives`).  Rank clocks are taken as they are
(absolute µs); a skew between hosts moves the crossing times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from .discover import expand_inputs
from .executor import Runner
from .layout import group_ranks
from .match import match_collectives
from .worker import identify, rank_error

Progress = Callable[[str, float], None]

#: a rank that started a collective at most this much (µs) after another did not keep it waiting
CROSS_TOL_US = 1.0


# ---------------------------------------------------------------------- per-rank work
def _load(task: dict[str, Any]):
    from ..store.traces import load_cached

    paths = [task["kineto"]] + ([task["et"]] if task.get("et") else [])
    return load_cached(paths, use_cache=task.get("use_cache", True))


def _windows(kt, spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(key, Window) pairs named by ``spec``: one step, one annotation instance, or every step."""
    from ..critical import annotation_window, default_window, event_window, profiler_steps, step_window

    if "step" in spec:
        return [(spec["step"], step_window(kt, spec["step"]))]
    if "annotation" in spec:
        return [(spec["instance"], annotation_window(kt, spec["annotation"], spec["instance"]))]
    steps = profiler_steps(kt)
    if "nth_step" in spec:
        return [(spec["nth_step"], event_window(kt, steps[spec["nth_step"]][1], "step"))]
    if not steps:
        return [(None, default_window(kt))]
    # every step, keyed by its place in time order (a tiled trace repeats step numbers)
    return [(i, event_window(kt, ev, "step")) for i, (_n, ev) in enumerate(steps)]


def rank_paths(task: dict[str, Any]) -> dict[str, Any]:
    """Round 1 for one rank (``task``: rank, kineto, et, use_cache, window spec).

    Returns ``rank``, ``error``, ``origin_us``, ``collectives`` (this rank's, as
    :func:`~tracetui.job.comms.rank_collectives` gives them) and ``windows``: per window
    ``key``, ``name``, ``start_abs``/``end_abs``/``sink_abs`` (absolute µs) and ``chains``:
    ``{"sink" or kernel id: [collective kernel ids on its chain, in time order]}``."""
    out: dict[str, Any] = {"rank": task["rank"], "error": None, "origin_us": 0.0, "collectives": [], "windows": [],
                           "cpu_s": 0.0}
    c0 = time.process_time()
    try:
        from ..critical import build_graph
        from ..critical.solve import marked_on_chains
        from .comms import rank_collectives

        linked = _load(task)
        kt = linked.kineto
        origin = float(kt.origin_us)
        out["origin_us"] = origin
        colls = rank_collectives(kt, linked.et, linked.link)
        out["collectives"] = colls
        kernels = np.array(sorted({int(c["kernel"]) for c in colls}), dtype=np.int64)
        for key, w in _windows(kt, task["window"]):
            g = build_graph(kt, w)
            loc = np.flatnonzero(np.isin(g.sel.events, kernels) & ~g.sel.carried)
            starts = [g.sink] + loc.tolist()
            chains = marked_on_chains(g, loc, starts)
            ev = g.sel.events
            out["windows"].append({
                "key": key, "name": w.name, "start_abs": origin + w.start_us, "end_abs": origin + w.end_us,
                "sink_abs": origin + float(g.node_t[g.sink]),
                "chains": {("sink" if s == g.sink else int(ev[s])): [int(ev[k]) for k in ch]
                           for s, ch in chains.items()}})
    except Exception as exc:  # noqa: BLE001 -- one rank's failure must not stop the others; reported with the rank
        out["error"] = rank_error(task, exc)
    out["cpu_s"] = time.process_time() - c0
    return out


def _segment_rows(cp_segments, origin: float, cut_abs: float | None) -> list[dict[str, Any]]:
    """Segments as rows with absolute times, the part before ``cut_abs`` left out."""
    rows = []
    s = cp_segments
    for i in range(len(s)):
        start = origin + float(s.start_us[i])
        end = start + float(s.dur_us[i])
        if cut_abs is not None and end <= cut_abs:
            continue
        if cut_abs is not None and start < cut_abs:
            start = cut_abs
        row = s.row(i)
        row["start_abs"], row["dur_us"] = start, end - start
        rows.append(row)
    return rows


def rank_route_segments(task: dict[str, Any]) -> dict[str, Any]:
    """Round 2 for one rank: ``task["requests"]``: [{``window`` spec, ``hops``: [{``start``:
    "sink" or a kernel id, ``cut_abs``: absolute µs or None}], ``slack``: bool}].

    Returns ``rank``, ``error`` and per request the ``hops`` (segment rows with absolute
    ``start_abs``), the rank's ``slack`` rows (absolute ``start_abs``) and ``path_events``."""
    out: dict[str, Any] = {"rank": task["rank"], "error": None, "requests": [], "cpu_s": 0.0}
    c0 = time.process_time()
    try:
        from ..critical import build_graph
        from ..critical.model import path_event_ids, segments_of, slack_of
        from ..critical.solve import event_slack, latest_times, path_edges

        kt = _load(task).kineto
        origin = float(kt.origin_us)
        for req in task["requests"]:
            (_key, w), = _windows(kt, req["window"])
            g = build_graph(kt, w)
            node_of = {int(e): i for i, e in enumerate(g.sel.events.tolist())}
            hops, events = [], []
            for hop in req["hops"]:
                start = g.sink if hop["start"] == "sink" else node_of[int(hop["start"])]
                edges = path_edges(g, start)
                hops.append(_segment_rows(segments_of(g, edges, task["rank"]), origin, hop["cut_abs"]))
                events.append(path_event_ids(g, edges))
            slack = []
            if req.get("slack"):
                slack = slack_of(g, event_slack(g, latest_times(g)), task["rank"]).rows()
                for r in slack:
                    r["start_abs"] = origin + r["start_us"]
            out["requests"].append({"hops": hops, "slack": slack,
                                    "path_events": np.unique(np.concatenate(events)).tolist() if events else []})
    except Exception as exc:  # noqa: BLE001 -- reported with the rank, as in round 1
        out["error"] = rank_error(task, exc)
    out["cpu_s"] = time.process_time() - c0
    return out


# ---------------------------------------------------------------------- the route
@dataclass
class Hop:
    """One stretch of the route: rank ``rank``'s chain from ``start`` ("sink" or a collective
    kernel) back to ``cut_abs`` (None: to its window start), then across to ``to_rank``."""

    rank: int
    start: Any
    cut_abs: float | None = None
    to_rank: int | None = None
    collective: dict[str, Any] | None = None


def plan_route(windows: dict[int, dict[str, Any]], coll_of: dict[tuple[int, int], dict[str, Any]]) -> list[Hop]:
    """The hops of one window's route, latest first (see the module docstring).

    ``windows``: rank -> that rank's round-1 window; ``coll_of``: (rank, kernel) -> matched collective."""
    rank = max(windows, key=lambda r: (windows[r]["sink_abs"], -r))
    start: Any = "sink"
    hops: list[Hop] = []
    for _ in range(10_000):  # each hop goes back to an earlier collective; the bound only guards bad input
        chain = windows[rank]["chains"].get(start, [])
        crossed = False
        for k in reversed(chain):
            c = coll_of.get((rank, k))
            if c is None:
                continue
            members = c["members"]
            arrive = {r: m["start_us"] for r, m in members.items() if r in windows}
            late = max(arrive, key=lambda r: (arrive[r], -r))
            k_late = int(members[late]["kernel"])
            if (late != rank and arrive[late] > arrive[rank] + CROSS_TOL_US
                    and k_late in windows[late]["chains"]):
                hops.append(Hop(rank, start, arrive[late], late, c))
                rank, start, crossed = late, k_late, True
                break
        if not crossed:
            hops.append(Hop(rank, start))
            return hops
    return hops  # pragma: no cover


@dataclass
class JobCriticalPaths:
    """Per analysed window key (a step number ...): the job's critical path; ``chosen``: the
    one asked for (the slowest step by default)."""

    paths: dict[Any, Any]
    chosen: Any
    title: str
    warnings: list[str] = field(default_factory=list)
    worker_cpu_s: float = 0.0  #: CPU seconds of the per-rank work (both rounds, all processes)


def job_critical_paths(inputs: list[str], *, step: int | None = None, annotation: str | None = None,
                       instance: int = 1, every_step: bool = False, use_cache: bool = True,
                       workers: int | None = None, scheduler: str | None = None,
                       progress: Progress | None = None, follow_links: bool = False) -> JobCriticalPaths:
    """The critical path of one window (``step``, ``annotation``/``instance``, default: the
    slowest step of the job) or of every step (``every_step``) across the job's ranks.
    ``follow_links``: read a folder's files that lead outside it (see ``expand_inputs``)."""
    from .assemble import assemble, pick_keys

    report = progress or (lambda msg, frac: None)
    skipped: list[str] = []
    files = expand_inputs(list(inputs), skipped, follow_links)
    if not files:
        raise TraceFormatError(inputs[0] if inputs else None, "no trace files (*.json, *.json.gz) found")
    spec: dict[str, Any] = ({"step": step} if step is not None else
                            {"annotation": annotation, "instance": instance} if annotation is not None else {"all": 1})
    with Runner(workers, scheduler) as run:
        report(f"identifying {len(files)} files", 0.0)
        layout = group_ranks(run.map(identify, files, on_error=lambda p, m: {"path": p, "kind": "unknown",
                                                                            "rank": None, "error": m}))
        if not layout.ranks:
            raise TraceFormatError(inputs[0] if len(inputs) == 1 else None,
                                   "no Kineto trace with a rank among the files of this job")
        base = [{"rank": r.rank, "kineto": r.kineto, "et": r.et, "use_cache": use_cache} for r in layout.ranks]
        report("critical paths per rank", 0.1)
        firsts = run.map(rank_paths, [dict(t, window=spec) for t in base],
                         on_error=lambda t, m: {"rank": t["rank"], "error": m, "windows": [], "collectives": []})
        warnings = skipped + list(layout.warnings) + [f"rank {o['rank']}: {o['error']}" for o in firsts if o["error"]]
        ok = {o["rank"]: o for o in firsts if not o["error"]}
        if not ok:
            raise TraceFormatError(None, "no rank of this job could be followed: " + "; ".join(warnings[-3:]))
        matched = match_collectives({r: o["collectives"] for r, o in ok.items()}, layout.world_size)
        coll_of = {(r, int(m["kernel"])): c for c in matched for r, m in c["members"].items()}
        keys = pick_keys(ok, every_step or "all" not in spec, warnings)
        routes = {}
        for key in keys:
            wins = {r: w for r, o in ok.items() for w in o["windows"] if w["key"] == key}
            routes[key] = (wins, plan_route(wins, coll_of))
        report("segments of the routes", 0.6)
        tasks = _route_tasks(base, spec, routes, ok)
        seconds = run.map(rank_route_segments, tasks,
                          on_error=lambda t, m: {"rank": t["rank"], "error": m, "requests": []})
    warnings += [f"rank {o['rank']}: {o['error']}" for o in seconds if o["error"]]
    paths = assemble(routes, tasks, seconds, ok, matched)
    chosen_key = keys[0] if len(keys) == 1 else max(paths, key=lambda k: paths[k].total_us)
    title = f"job {layout.ranks[0].kineto.rsplit('/', 2)[-2] if '/' in layout.ranks[0].kineto else ''} " \
            f"({len(layout.ranks)} ranks)"
    report("ready", 1.0)
    cpu = sum(o.get("cpu_s", 0.0) for o in firsts) + sum(o.get("cpu_s", 0.0) for o in seconds)
    return JobCriticalPaths(paths, paths[chosen_key], title.strip(), warnings, cpu)


def _route_tasks(base: list[dict[str, Any]], spec: dict[str, Any], routes: dict[Any, Any],
                 ok: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Round-2 tasks: per rank on any route, its hops per window (and its slack)."""
    by_rank: dict[int, list[dict[str, Any]]] = {}
    for key, (_wins, hops) in routes.items():
        win = spec if "all" not in spec else {"nth_step": key} if key is not None else {"all": 1}
        for r in sorted({h.rank for h in hops}):
            reqs = by_rank.setdefault(r, [])
            reqs.append({"key": key, "window": win, "slack": True,
                         "hops": [{"start": h.start, "cut_abs": h.cut_abs} for h in hops if h.rank == r]})
    return [dict(t, requests=by_rank[t["rank"]]) for t in base if t["rank"] in by_rank and t["rank"] in ok]
