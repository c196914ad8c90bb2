"""``tracetui diff A B`` as text, JSON, or a CI check (docs/diff.md); the command itself, which
opens the diff browser instead on a terminal, is :mod:`tracetui.cli.diff`.

A and B are each a Kineto trace (``--et-a``/``--et-b``: its Execution Trace), a
driver-call trace, or a job folder; ``tracetui diff JOB --ranks 0,3`` compares two ranks of
one job, ``tracetui diff JOB_A JOB_B`` every rank of A with the same rank of B (in worker
processes, or on a Dask cluster with ``--scheduler``).  On a terminal, without ``--text``,
``--json`` or ``--fail-above``, two runs open in the diff browser (:func:`browse_request`
resolves their files; this module never imports the browser).  ``--fail-above PCT`` exits 1 when
the step time or the GPU time per step grew by more than PCT percent (any rank, for jobs)
and prints the largest regressions.  The text is printed from the JSON document, so a
stored document (an unchanged pair) prints without loading either trace.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.text import Text

from .. import units
from ..diff import numbers as fmt
from ..errors import TraceError, one_line
from ..io import jsonout
from .fit_table import Col

if TYPE_CHECKING:
    from ..diff.runs import DiffRequest
    from .summary_render import Out

EXIT_REGRESSED = 1
_GLOB = "*?["
_TL = (("total", "GPU span"), ("computation", "computation"), ("exposed_comm", "exposed communication"),
       ("exposed_memcpy", "exposed memcpy"), ("busy", "busy"), ("idle", "idle"))
_ABD = [Col("A"), Col("B"), Col("Δ"), Col("Δ %")]


def _is_job(path: str) -> bool:
    return os.path.isdir(path) or (not os.path.exists(path) and any(c in path for c in _GLOB))


def parse_threshold(text: str | None) -> float | None:
    """The percentage of ``--fail-above`` (``5`` or ``5%``; also ``tracetui follow``'s); None when not given."""
    if text is None:
        return None
    try:
        return float(text.strip().rstrip("%"))
    except ValueError:
        raise TraceError(None, f"--fail-above: not a percentage: {text!r} (write 5 or 5{units.PCT})") from None


def _ranks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise TraceError(None, f"--ranks: not rank numbers: {text!r} (write 0,3)") from None
    if not 1 <= len(out) <= 2:
        raise TraceError(None, f"--ranks: give one or two ranks, not {text!r}")
    return out


def _sides(args: argparse.Namespace) -> tuple[list[str], list[str], tuple[str, str]] | None:
    """The files of A and B, and their labels; None for two whole jobs (compared rank by rank)."""
    from ..diff.runs import job_rank_files

    ranks = _ranks(args.ranks)
    if _is_job(args.a):
        if args.b is None:
            if ranks is None or len(ranks) != 2:
                raise TraceError(args.a, "a job alone needs two ranks to compare: --ranks R,S")
            fa, fb = job_rank_files(args.a, ranks, args.workers, args.scheduler)
            return fa, fb, (f"rank {ranks[0]}", f"rank {ranks[1]}")
        if not _is_job(args.b):
            raise TraceError(args.b, "A is a job: give a job as B too (or one job with --ranks R,S)")
        if ranks is None:
            return None
        ra, rb = ranks[0], ranks[-1]
        (fa,) = job_rank_files(args.a, [ra], args.workers, args.scheduler)
        (fb,) = job_rank_files(args.b, [rb], args.workers, args.scheduler)
        return fa, fb, (f"A rank {ra}", f"B rank {rb}")
    if args.b is None:
        raise TraceError(args.a, "give the run to compare with: tracetui diff A B")
    if _is_job(args.b):
        raise TraceError(args.b, "B is a job: give a job as A too")
    if ranks is not None:
        raise TraceError(None, "--ranks picks ranks of a job folder; A and B are single traces")
    fa = [args.a] + ([args.et_a] if args.et_a else [])
    fb = [args.b] + ([args.et_b] if args.et_b else [])
    return fa, fb, ("A", "B")


def browse_request(args: argparse.Namespace) -> DiffRequest | None:
    """The two runs the diff browser opens on, or None when the command prints instead:
    ``--text``, ``--json``, ``--fail-above`` (a CI check), output that is not a terminal, and
    two whole jobs without ``--ranks`` (their per-rank table).  Raises TraceError for bad input."""
    from ..diff.runs import DiffRequest

    if args.text or args.json or args.fail_above is not None or not sys.stdout.isatty():
        return None
    sides = _sides(args)
    if sides is None:
        return None
    fa, fb, labels = sides
    return DiffRequest(tuple(fa), tuple(fb), labels, args.step_a, args.step_b, args.rules, not args.no_cache)


def diff_command(args: argparse.Namespace) -> int:
    """Run ``tracetui diff`` as text or JSON (the browser: :func:`browse_request`); raises
    TraceError for bad input."""
    from ..diff.numbers import regressions
    from ..diff.runs import diff_files, diff_jobs

    threshold = parse_threshold(args.fail_above)
    mode = "json" if args.json else "text"
    top = max(args.top, 0)
    sides = _sides(args)
    if sides is None:
        doc = diff_jobs(args.a, args.b, use_cache=not args.no_cache, step_a=args.step_a, step_b=args.step_b,
                        rules=args.rules, top=top, workers=args.workers, scheduler=args.scheduler)
        failed = {r["rank"]: regressions(r, threshold) for r in doc["ranks"] if not r["error"]} \
            if threshold is not None else {}
        failed = {r: why for r, why in failed.items() if why}
    else:
        fa, fb, labels = sides
        doc = diff_files(fa, fb, use_cache=not args.no_cache, step_a=args.step_a, step_b=args.step_b,
                         rules=args.rules, top=top, labels=labels)
        why = regressions(doc, threshold) if threshold is not None else []
        failed = {None: why} if why else {}
    if mode == "json":
        sys.stdout.write(jsonout.dumps(doc, indent=True).decode() + "\n")
    elif doc.get("kind") == "jobs":
        print_jobs(doc)
    else:
        print_diff(doc)
    if failed:
        print_failure(doc, failed, threshold, to=sys.stderr if mode == "json" else sys.stdout)
        return EXIT_REGRESSED
    return 0


# ---------------------------------------------------------------------- text
def _row(label: str | Text, a: float | None, b: float | None, *, time: bool = True) -> list[Any]:
    """A row of A, B, Δ and Δ %: durations in µs (``time``), else counts."""
    if time:
        return [label, fmt.us(a), fmt.us(b), fmt.delta_us((b or 0.0) - (a or 0.0)), fmt.pct(b, a)]
    return [label, fmt.count(a), fmt.count(b), fmt.delta_count((b or 0.0) - (a or 0.0)), fmt.pct(b, a)]


def _path(path: list[str], keep: int = 3) -> Text:
    shown = path[-keep:]
    return Text(("… > " if len(path) > keep else "") + " > ".join(shown))


def _steps_line(side: dict[str, Any]) -> str:
    st = side["steps_compared"]
    found = side["steps_found"]
    how = found["how"] + (f" {found['annotation']}" if found["annotation"] else "")
    if len(st) == 1:
        return f"{st[0]} ({how})"
    return f"mean of {len(st)} steps ({how}; template {side['template_step']})"


def print_diff(doc: dict[str, Any], console: Any = None) -> None:
    """Print a diff document as tables (fitted to the terminal, or as wide as the content when piped)."""
    from .summary_render import console_out

    out = console_out(console)
    for key in ("a", "b"):
        s = doc[key]
        out.line(f"{s['label']}: {s['source']}: {_steps_line(s)}", "bold")
    al = doc["alignment"]
    methods = ", ".join(f"{fmt.count(v)} {k}" for k, v in al["methods"].items()
                        if v and k not in ("step", "added", "removed"))
    out.line(f"Aligned {fmt.count(al['paired_ops'])} ops ({methods}); {fmt.count(al['added_ops'])} ops only in B, "
             f"{fmt.count(al['removed_ops'])} only in A; {fmt.count(al['shapes_changed'])} with changed input shapes")
    for key in ("a", "b"):
        u = al["unmatched_in_other_steps"][key]
        if u["ops"]:
            out.line(f"{doc[key]['label']}: {fmt.count(u['ops'])} ops of the other steps match no op of the "
                     f"template step ({fmt.us(u['gpu_us'])} of GPU time, all steps together): "
                     "left out of the tree", "yellow")
    per = "per step" if max(len(doc[k]["steps_compared"]) for k in ("a", "b")) == 1 else "per-step means"
    out.table(f"Step ({per})", [Col("", False), *_ABD], [
        _row("step time (host)", doc["step_time"]["a_us"], doc["step_time"]["b_us"]),
        _row("GPU time launched in the step", doc["gpu_time_per_step"]["a_us"], doc["gpu_time_per_step"]["b_us"]),
        _row("GPU events launched in the step", doc["gpu_events_per_step"]["a"], doc["gpu_events_per_step"]["b"],
             time=False)])
    if not (doc["gpu_events_per_step"]["a"] or doc["gpu_events_per_step"]["b"]):
        out.line("No GPU work launched in the compared steps of either trace (no kernel, memcpy or memset): "
                 "no GPU tables follow.")
        _print_tree(out, doc)
        return
    tl = doc["gpu_timeline"]
    out.table(f"GPU timeline of the step's GPU events ({per}; unions over all streams)", [Col("", False), *_ABD],
              [_row(label, tl[k]["a_us"], tl[k]["b_us"]) for k, label in _TL])
    out.table(f"Kernel categories ({per}, summed durations)", [Col("category", False), Col("count A"),
                                                               Col("count B"), *_ABD],
              [[Text(str(r["category"])), fmt.count(r["count_a"]), fmt.count(r["count_b"]),
                *_row("", r["total_us_a"], r["total_us_b"])[1:]] for r in doc["kernel_categories"]])
    out.table(f"Kernels with the largest change ({per})", [Col("kernel", False), Col("count A"), Col("count B"),
                                                          *_ABD],
              [[Text(str(r["name"])), fmt.count(r["count_a"]), fmt.count(r["count_b"]),
                *_row("", r["total_us_a"], r["total_us_b"])[1:]] for r in doc["kernels"] if r["delta_us"]])
    out.table(f"Ops with the largest change of direct GPU time ({per})",
              [Col("op", False), Col("count A"), Col("count B"), *_ABD],
              [[Text(str(r["name"])), fmt.count(r["count_a"]), fmt.count(r["count_b"]),
                *_row("", r["direct_gpu_us_a"], r["direct_gpu_us_b"])[1:]] for r in doc["top_ops"]
               if r["delta_direct_gpu_us"]])
    _print_launches(out, doc, per)
    out.table(f"Idle gaps between the step's GPU events ({per})", [Col("class", False), Col("gaps A"),
                                                                    Col("gaps B"), *_ABD],
              [[Text(str(r["idle_class"])), fmt.count(r["count_a"]), fmt.count(r["count_b"]),
                *_row("", r["total_us_a"], r["total_us_b"])[1:]] for r in doc["idle"]])
    _print_tree(out, doc)


def _print_launches(out: Out, doc: dict[str, Any], per: str) -> None:
    rows = []
    for cls, v in doc["launches"].items():
        rows.append([Text(cls), fmt.count(v["count"]["a"]), fmt.count(v["count"]["b"]),
                     fmt.us(v["delay_mean_us"]["a"]), fmt.us(v["delay_mean_us"]["b"]),
                     fmt.us(v["delay_p90_us"]["a"]), fmt.us(v["delay_p90_us"]["b"]),
                     fmt.us(v["call_mean_us"]["a"]), fmt.us(v["call_mean_us"]["b"])])
    out.table(f"Launches (count {per}; delay = first GPU start - call start)",
              [Col("launch class", False), Col("count A"), Col("count B"), Col("mean delay A"), Col("mean delay B"),
               Col("p90 delay A"), Col("p90 delay B"), Col("mean call A"), Col("mean call B")], rows)


def _tree_rows(rows: list[dict[str, Any]], what: str = "gpu") -> list[list[Any]]:
    out = []
    for r in rows:
        a, b = r[f"self_{what}_us_a"], r[f"self_{what}_us_b"]
        out.append([_path(r["path"]), Text(r["method"] + (", shapes changed" if r["shapes_changed"] else "")),
                    *_row("", a, b)[1:]])
    return out


def _print_tree(out: Out, doc: dict[str, Any]) -> None:
    out.table("Merged tree: ops whose own GPU time changed most (kernels their own calls launched)",
              [Col("op (path)", False), Col("matched by", False), *_ABD], _tree_rows(doc["tree"]))
    out.table("Merged tree: ops whose own host time changed most (time not in an op below)",
              [Col("op (path)", False), Col("matched by", False), *_ABD], _tree_rows(doc["tree_host"], "host"))
    ch = doc["changed_subtrees"]
    for key, title in (("added", "Ops only in B (subtrees, by GPU time)"),
                       ("removed", "Ops only in A (subtrees, by GPU time)")):
        rows = [[_path(r["path"]), fmt.count(r["ops"]), fmt.us(r["gpu_us_a"] if key == "removed" else r["gpu_us_b"])]
                for r in ch[key]]
        more = ch[f"{key}_subtrees"] - len(rows)
        out.table(title + (f"; {fmt.count(more)} more" if more > 0 else ""), [Col("op (path)", False), Col("ops"),
                                                                    Col("GPU time")], rows)
    for r in doc["kernel_changes"]:
        rows = [[Text(k["status"]), Text(_kernel_names(k)), Text(_launch(k, "a")), Text(_launch(k, "b")),
                 fmt.us(k["dur_us_a"]), fmt.us(k["dur_us_b"])] for k in r["kernels"]]
        out.table(f"Kernels that changed under {_path(r['path'], 1).plain}",
                  [Col("change", False), Col("kernel (A → B)", False), Col("A grid / block / regs", False),
                   Col("B grid / block / regs", False), Col("A time"), Col("B time")], rows)


def _kernel_names(k: dict[str, Any]) -> str:
    a, b = k["name_a"], k["name_b"]
    if a is not None and b is not None and a != b:
        return f"{a} → {b}"
    return str(a if a is not None else f"→ {b}")


def _launch(k: dict[str, Any], side: str) -> str:
    if k[f"name_{side}"] is None:
        return ""
    regs = k[f"registers_{side}"]
    return f"{k[f'grid_{side}'] or '?'} / {k[f'block_{side}'] or '?'} / {fmt.count(regs) if regs is not None else '?'}"


def print_jobs(doc: dict[str, Any], console: Any = None) -> None:
    """Print a job-against-job document: one row per rank."""
    from .summary_render import console_out

    out = console_out(console)
    out.line(f"A: {doc['a']['inputs']} ({len(doc['a']['ranks'])} ranks); B: {doc['b']['inputs']} "
             f"({len(doc['b']['ranks'])} ranks)", "bold")
    rows = []
    for r in doc["ranks"]:
        if r["error"]:
            rows.append([str(r["rank"]), "", "", "", "", "", "", Text(r["error"])])
            continue
        st, g = r["step_time"], r["gpu_time_per_step"]
        top = r["tree"][0]["path"] if r["tree"] else []
        rows.append([str(r["rank"]), fmt.us(st["a_us"]), fmt.us(st["b_us"]), fmt.pct(st["b_us"], st["a_us"]),
                     fmt.us(g["a_us"]), fmt.us(g["b_us"]), fmt.pct(g["b_us"], g["a_us"]), _path(top, 2)])
    out.table("Per rank (per-step means)", [Col("rank"), Col("step A"), Col("step B"), Col("step Δ %"),
                                            Col("GPU A"), Col("GPU B"), Col("GPU Δ %"),
                                            Col("largest change of an op's own GPU time", False)], rows)
    for key in ("only_a", "only_b"):
        if doc[key]:
            out.line(f"ranks only in {key[-1].upper()}: {', '.join(map(str, doc[key]))}", "yellow")
    for w in doc["warnings"]:
        out.line(f"warning: {w}", "yellow")


def print_failure(doc: dict[str, Any], failed: dict[Any, list[str]], threshold: float, to: Any) -> None:
    """The ``--fail-above`` verdict: every reason, then the largest regressions of the tree."""
    from .fit_table import UNLIMITED, StdoutConsole

    con = StdoutConsole(file=to, width=UNLIMITED if not to.isatty() else None, highlight=False)
    con.print(Text(f"FAIL: regressed by more than {fmt.threshold(threshold)}", style="bold red"))
    for rank, why in failed.items():
        for w in why:
            con.print(Text(one_line(("" if rank is None else f"rank {rank}: ") + w)))
    rows = doc["tree"] if doc.get("kind") != "jobs" else \
        [t for r in doc["ranks"] if r["rank"] in failed for t in r["tree"]]
    worst = sorted((r for r in rows if r["self_gpu_us_b"] > r["self_gpu_us_a"]),
                   key=lambda r: r["self_gpu_us_a"] - r["self_gpu_us_b"])[:10]
    if worst:
        con.print(Text("Top regressions (own GPU time per step):"))
        for r in worst:
            a, b = r["self_gpu_us_a"], r["self_gpu_us_b"]
            con.print(Text(one_line(f"  {_path(r['path']).plain}: {fmt.us(a)} -> {fmt.us(b)} ({fmt.pct(b, a)})")))
