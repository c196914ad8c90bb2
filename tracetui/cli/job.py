"""``tracetui summary JOB``: the cross-rank summary of a whole job, as tables or JSON.

A job is a folder, a glob, more than two files, or two Kineto traces (see
:func:`tracetui.job.looks_like_job`).  Tables: the per-rank GPU time breakdown, the
collectives matched across ranks (skews, durations, last rank, size, algorithm, bus
bandwidth), the straggler ranking, and the warnings (missing, duplicated, foreign or
failed ranks).  ``--json`` prints :func:`tracetui.job.job_summary`.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import units
from ..errors import one_line
from ..io import jsonout
from .fit_table import Col, fitted_table, stdout_console

_TL = (("total_ms", f"total {units.MS}"), ("computation_ms", f"compute {units.MS}"), ("exposed_comm_ms",
                                                                                      f"exposed comm {units.MS}"),
       ("exposed_memcpy_ms", f"exposed memcpy {units.MS}"), ("idle_ms", f"idle {units.MS}"))


_n = units.number
_bytes = units.bytes_short


def rank_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """Rows of the per-rank breakdown table: rank, the breakdown in ms, collectives, status."""
    rows = []
    for r in summary["ranks"]:
        tl = r.get("gpu_timeline") or {}
        rows.append([str(r["rank"]), *(_n(tl.get(k)) for k, _ in _TL), _n(r["collectives"]),
                     Text("failed" if r["error"] else "other run?" if r.get("foreign") else "ok")])
    return rows


def collective_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """Rows of the collectives table (one per matched collective)."""
    rows = []
    for c in summary["collectives"]:
        ident = c["seq"] if c["seq"] is not None else f"#{c['index']}"
        algo = "/".join(x for x in (c["algorithm"], c["protocol"]) if x)
        rows.append([Text(one_line(c["name"])), Text(one_line(c["group"] or "-")), str(ident), _n(c["ranks"]),
                     _n(c["start_skew_us"], 1),
                     _n(c["end_skew_us"], 1), _n(c["min_dur_us"], 1), _n(c["max_dur_us"], 1), str(c["last_rank"]),
                     _bytes(c["bytes"]), Text(one_line(algo)), _n(c["busbw_gbps"], 2)])
    return rows


RANK_COLS = [Col("rank"), *(Col(h) for _, h in _TL), Col("collectives"), Col("status", False)]
COLLECTIVE_COLS = [Col("collective", False), Col("group", False), Col("seq"), Col("ranks"),
                   Col(f"start skew {units.US}"), Col(f"end skew {units.US}"), Col(f"min {units.US}"),
                   Col(f"max {units.US}"), Col("last rank"), Col("size"),
                   Col("algorithm", False), Col(f"busbw {units.GBPS}")]


def print_job_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print the job summary dict as tables (fitted to the terminal, or as wide as the content when piped)."""
    if console is None:
        console, width = stdout_console()
    else:
        width = console.width
    j = summary["job"]
    console.print(Text(one_line(f"Job: {j['ranks_loaded']} of {j['ranks_found']} ranks loaded (world_size "
                                f"{j['world_size'] if j['world_size'] is not None else 'unknown'}, backend "
                                f"{j['backend'] or 'unknown'})"), style="bold"))

    def table(title: str, cols: list[Col], rows: list[list[Any]]) -> None:
        if not rows:
            return
        t = fitted_table(title, cols, rows, width, 60)
        if width is not None:
            console.print(t, crop=False)
            return
        with console.capture() as cap:
            console.print(t)
        console.out("\n".join(ln.rstrip() for ln in cap.get().splitlines()), highlight=False)

    table("GPU time per rank (unions over all streams)", RANK_COLS, rank_rows(summary))
    table("Collectives matched across ranks", COLLECTIVE_COLS, collective_rows(summary))
    table("Stragglers (last to arrive most often first; lateness = start - first rank's start)",
          [Col("rank"), Col("last to arrive"), Col("collectives"), Col(f"median late {units.US}"),
           Col(f"late {units.US} (sum)"),
           Col(f"wait caused {units.US}")],
          [[str(s["rank"]), _n(s["times_last"]), _n(s["collectives"]), _n(s.get("median_late_us"), 1),
            _n(s["late_us"], 1), _n(s["wait_caused_us"], 1)] for s in summary["stragglers"]])
    table("Arrivals by collective kind (barriers apart)",
          [Col("rank"), Col("kind", False), Col("last to arrive"), Col("collectives"), Col(f"median late {units.US}")],
          [[str(s["rank"]), Text(k), _n(v["times_last"]), _n(v["collectives"]), _n(v["median_late_us"], 1)]
           for s in summary["stragglers"] for k, v in s.get("by_kind", {}).items()])
    verdict = summary.get("straggler")
    console.print(Text(one_line("Straggler: " + (verdict["evidence"] if verdict else
                                                  "none: no rank arrived after another")), style="bold"))
    for w in summary["warnings"]:
        console.print(Text(one_line(f"warning: {w}"), style="yellow"))


def job_summary_command(inputs: list[str], *, use_cache: bool, as_json: bool, rules: str | None, top: int,
                        workers: int | None, scheduler: str | None, follow_links: bool = False) -> int:
    """Open the job named by ``inputs`` and print its summary; TraceError for bad input."""
    from ..job import job_summary, open_job

    job = open_job(inputs, use_cache=use_cache, workers=workers, scheduler=scheduler, top=max(top, 0), rules=rules,
                   follow_links=follow_links)
    summary = job_summary(job)
    if as_json:
        sys.stdout.write(jsonout.dumps(summary, indent=True).decode() + "\n")
        return 0
    print_job_summary(summary)
    return 0

