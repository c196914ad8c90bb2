"""``tracetui critical-path TRACE_OR_JOB``: why a step took as long as it did.

    tracetui critical-path TRACE [--step N | --annotation NAME [--instance K] | --select SEL]
                           [--json] [--shrink NAME=PCT ...] [--top N] [--segments N]

The window is a profiler step (``--step 16``: ``ProfilerStep#16``), an annotation
instance, one op (``--select``, as in ``tracetui tree``), or by default the longest
profiler step (else the whole trace).  A job (a folder, a glob, several rank files)
follows the path across ranks through its collectives (:mod:`tracetui.job.critical`).
Text is written for 80 columns; ``--json`` prints the whole answer
(:meth:`tracetui.critical.CriticalPath.to_json`).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Any

from .. import units
from ..critical import METHODS
from ..critical import numbers as fmt
from ..errors import TraceError, one_line
from ..io import jsonout
from ..names import shown
from .common import add_inputs, add_job_options, paths

NAME = "critical-path"
WIDTH = 80


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="why a step took as long as it did: its critical path across "
                                         "threads, streams and ranks (docs/critical_path.md)")
    add_inputs(p)
    add_job_options(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--step", type=int, default=None, metavar="N",
                   help="the window of step N: ProfilerStep#N, else the N-th repeated top-level annotation "
                        "(an NVTX range, a JAX step); default: the longest step")
    g.add_argument("--annotation", default=None, metavar="NAME",
                   help="the window of a user annotation (exact name, else every name starting with it)")
    g.add_argument("--whole-trace", action="store_true", help="the window: the whole trace")
    g.add_argument("--select", default=None, metavar="SELECTOR",
                   help="the window of one op: ext:<External id>, name:<op name>[#<n>], node:<id> (see tree)")
    p.add_argument("--instance", type=int, default=1, metavar="K",
                   help="with --annotation: its K-th instance in time order, from 1 (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object (every segment and every slack)")
    p.add_argument("--shrink", action="append", default=[], metavar="NAME=PCT",
                   help="what-if: events whose name contains NAME (shell pattern with * ?) run PCT %% faster "
                        "(work carried in from before the window too); prints the projected path length "
                        "(repeatable)")
    p.add_argument("--method", choices=METHODS, default="elapsed",
                   help="elapsed (default): the window's elapsed time, every microsecond named; hta: "
                        "HolisticTraceAnalysis 0.5.0's definition (the heaviest chain of dependencies, counting "
                        "only the time HTA weighs), to compare with HTA (docs/critical_path.md)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows of the by-name and slack tables")
    p.add_argument("--segments", type=int, default=24, metavar="N", help="path segments listed in the text")


def run(args: argparse.Namespace) -> int:
    """One trace (with its ET when given), or a job: the path across its ranks."""
    from ..job import looks_like_job

    files = paths(args)
    if looks_like_job(files):
        return job_critical_path_command(files, args)
    return critical_path_command(files, args)


def _shrinks(args: Any) -> list:
    from ..critical import Shrink

    out = []
    for text in args.shrink:
        try:
            out.append(Shrink.parse(text))
        except ValueError as exc:
            raise TraceError(None, str(exc)) from None
    return out


def resolve_window(linked: Any, args: Any):
    """The :class:`~tracetui.critical.Window` the options name (TraceError when it does not exist)."""
    from ..api import critical_window

    return critical_window(linked, step=args.step, annotation=args.annotation, instance=args.instance,
                           select=args.select, whole_trace=args.whole_trace)


def critical_path_command(paths: list[str], args: Any) -> int:
    """Load one trace (with its ET when given), compute the path, print it."""
    from ..critical import check_method, critical_path
    from ..store.traces import load_cached

    linked = load_cached(paths, use_cache=not args.no_cache)
    if linked.kineto is None:
        raise TraceError(paths[0], "critical-path needs a Kineto trace (GPU trace)")
    shrink = _shrinks(args)
    try:
        check_method(args.method, shrink)
    except ValueError as exc:
        raise TraceError(None, str(exc)) from None
    cp = critical_path(linked.kineto, resolve_window(linked, args), shrink=shrink, method=args.method)
    if args.json:
        sys.stdout.write(jsonout.dumps(cp.to_json(), indent=True).decode() + "\n")
    else:
        sys.stdout.write("\n".join(one_line(ln) for ln in render(cp, top=args.top, segments=args.segments)) + "\n")
    return 0


# ---------------------------------------------------------------------- text
def _clip(line: str, width: int) -> str:
    """The line cut to ``width`` columns (an ellipsis marks the cut)."""
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def _name(text: str) -> str:
    """A name from the trace on one line (names are data: runs of whitespace become one space,
    any other control character is escaped by :func:`tracetui.errors.one_line`; cut at
    :data:`~tracetui.names.NAME_WORK_CHARS` characters, ``… (+10 MB)``)."""
    return one_line(" ".join(shown(str(text)).split()))


def render(cp: Any, *, top: int = 10, segments: int = 24) -> list[str]:
    """The answer as lines of at most :data:`WIDTH` columns."""
    import os

    from ..critical.model import kind_name

    w = cp.window
    out = [_clip(f"Critical path of {_name(w.name)} ({w.kind}) in {os.path.basename(cp.trace_path)}", WIDTH),
           f"window {fmt.timestamp(w.start_us)} - {fmt.timestamp(w.end_us)} ({fmt.duration(w.end_us - w.start_us)})"]
    if cp.method == "hta":
        out += _hta_head(cp)
    else:
        out[-1] += f"; last event ends at {fmt.timestamp(cp.end_us)}"
        out.append(f"path {fmt.duration(cp.total_us)}: from the window start to the end of its last event")
    if cp.carried_in_us > 0:
        out.append(f"  the first {fmt.duration(cp.carried_in_us)} ran work queued before the window (carried in)")
    st = cp.stats
    if "ranks" in st:
        out.append(f"ranks: {st['ranks']}; on the path: {', '.join(str(r) for r in st['ranks_on_path'])}")
    else:
        out.append(f"graph: {fmt.count(st.get('events', 0))} events, {fmt.count(st.get('edges', 0))} edges "
                   f"({fmt.count(st.get('inferred_edges', 0))} inferred)")
    out += _crossings(cp)
    out += ["", "Time on the path by kind"]
    for k, us, frac in cp.breakdown():
        out.append(f"  {k:<14}{fmt.duration(us):>14}  {fmt.share(frac)}")
    out += _by_name(cp, top)
    out += _segments(cp, segments, kind_name)
    out += _slack(cp, top)
    out += _what_if(cp)
    return [ln.rstrip() for ln in out]


def _hta_head(cp: Any) -> list[str]:
    """The head of a path by HTA's definition: what its length counts and where it runs."""
    out = [f"path {fmt.duration(cp.total_us)} by HTA's definition (--method hta): the heaviest chain",
           "  of dependencies, counting only time inside ops and runtime calls (but not",
           "  blocking ones), on the GPU, launch delays and GPU gaps, of the window's own",
           "  events"]
    if cp.span_us is not None:
        a, b = cp.span_us
        out.append(f"  it runs from {fmt.timestamp(a)} to {fmt.timestamp(b)} ({fmt.duration(b - a)})")
    out.append("  (without --method hta: the window's elapsed time, every microsecond named)")
    return out


def _crossings(cp: Any) -> list[str]:
    out = []
    for c in cp.crossings:
        out.append(_clip(f"crosses to rank {c['to_rank']} at {c['collective']}: it arrived last, "
                         f"{fmt.duration(c['waited_us'])} after rank {c['from_rank']}", WIDTH))
        for b in c.get("before", [])[:3]:
            out.append(_clip(f"    before: {b['kind']} {fmt.duration(b['dur_us'])} {_name(b['name'])}", WIDTH))
    return out


def _by_name(cp: Any, top: int) -> list[str]:
    from ..critical.model import kind_name

    s = cp.segments
    agg: dict[tuple[int, str], float] = defaultdict(float)
    for k, name, d in zip(s.kind.tolist(), s.name, s.dur_us.tolist()):
        agg[(k, name)] += d
    rows = sorted(agg.items(), key=lambda kv: -kv[1])
    if not rows:
        return []
    tot = cp.total_us or 1.0
    out = ["", f"Where the time went (top {min(top, len(rows))} of {fmt.count(len(rows))} names)",
           f"  {'kind':<13}{'time':>12}  {'share':>7}  name"]
    for (k, name), us in rows[:top]:
        out.append(_clip(f"  {kind_name(k):<13}{fmt.duration(us):>12}  {fmt.share(us / tot)}  {_name(name)}", WIDTH))
    return out


def _segments(cp: Any, limit: int, kind_name) -> list[str]:
    s = cp.segments
    n = len(s)
    if not n:
        return ["", "The path is empty (the window has no events)."]
    idx = list(range(n))
    head = f"Path segments in time order ({fmt.count(n)})"
    if n > limit > 0:
        idx = idx[: (limit + 1) // 2] + [-1] + idx[n - limit // 2:]
        head += f"; first {(limit + 1) // 2} and last {limit // 2} (--segments N, --json for all)"
    ranks = len(set(s.rank.tolist())) > 1
    out = ["", _clip(head, WIDTH), f"  {'start':>13}{'time':>12}  {'kind':<13}{'rank ' if ranks else ''}name"]
    for i in idx:
        if i < 0:
            out.append("  ...")
            continue
        mark = "~" if s.inferred[i] else " "
        rank = f"{int(s.rank[i]):>4} " if ranks else ""
        out.append(_clip(f"  {fmt.timestamp(s.start_us[i]):>13}{fmt.duration(s.dur_us[i]):>12} "
                         f"{mark}{kind_name(s.kind[i]):<13}{rank}{_name(s.name[i])}", WIDTH))
    if s.inferred.any():
        out.append("  ~ rests on an inferred dependency (docs/critical_path.md)")
    return out


def _slack(cp: Any, top: int) -> list[str]:
    sl = cp.slack
    if sl is None or not sl.event.size:
        return []
    import numpy as np

    off = np.flatnonzero(sl.slack_us > 0)
    if not off.size:
        return []
    best: dict[str, int] = {}
    for i in off[np.argsort(sl.slack_us[off], kind="stable")].tolist():
        best.setdefault(sl.name[i], i)
    rows = list(best.values())[:top]
    out = ["", "Nearly critical: least slack off the path (how much longer it could run)",
           f"  {'slack':>12}{'time':>12}  {'what':<10}name"]
    for i in rows:
        out.append(_clip(f"  {fmt.duration(sl.slack_us[i]):>12}{fmt.duration(sl.dur_us[i]):>12}  "
                         f"{sl.what[i][:9]:<10}{_name(sl.name[i])}", WIDTH))
    return out


def _what_if(cp: Any) -> list[str]:
    wi = cp.what_if
    if not wi:
        return []
    out = ["", "What-if"]
    for r in wi["shrink"]:
        faster = units.pct_text(r["pct"], "g", space=True)
        out.append(_clip(f"  {_name(r['pattern'])!r} {faster} faster: {fmt.count(r['matched_host'])} host and "
                         f"{fmt.count(r['matched_gpu'])} GPU events match", WIDTH))
    out.append(f"  projected path {fmt.duration(wi['projected_total_us'])} (now {fmt.duration(wi['total_us'])}, "
               f"saves {fmt.duration(wi['saved_us'])})")
    return out


def job_critical_path_command(inputs: list[str], args: Any) -> int:
    """The path of one step across a job's ranks (the slowest step by default)."""
    from ..job.critical import job_critical_paths

    if args.method != "elapsed":
        raise TraceError(None, "--method hta works on one rank's trace (HTA's critical path has no edge "
                               "between ranks)")
    if args.shrink:
        raise TraceError(None, "--shrink works on one rank's trace: a job's ranks wait on each other through "
                               "their collectives, which the what-if does not model")
    if args.select:
        raise TraceError(None, "--select names one event of one trace; for a job use --step or --annotation")
    res = job_critical_paths(inputs, step=args.step, annotation=args.annotation, instance=args.instance,
                             use_cache=not args.no_cache, workers=args.workers, scheduler=args.scheduler,
                             follow_links=args.follow_links)
    cp = res.chosen
    cp.trace_path = res.title
    if args.json:
        doc = cp.to_json()
        doc["warnings"] = res.warnings
        sys.stdout.write(jsonout.dumps(doc, indent=True).decode() + "\n")
        return 0
    lines = render(cp, top=args.top, segments=args.segments)
    lines += [f"warning: {w}" for w in res.warnings]
    sys.stdout.write("\n".join(_clip(one_line(ln), WIDTH) for ln in lines) + "\n")
    return 0
