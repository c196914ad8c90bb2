"""``tracetui check TRACE_OR_JOB``: what is wrong with this run, as text or JSON, and a CI gate.

Findings come sorted by time at stake (an estimate, labelled so).  Text is wrapped to the
terminal (80 columns when piped); ``--json`` prints
:meth:`~tracetui.findings.engine.FindingsReport.as_json`.  Exit status: 1 when ``--fail-on
LEVEL`` is given and a finding at or above that severity exists, else 0 (2: bad input, as
every command).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from ..errors import one_line
from ..findings import fmt
from ..io import jsonout
from .common import add_inputs, add_job_options, paths

if TYPE_CHECKING:
    from ..findings.engine import FindingsReport
    from ..findings.spec import Finding

NAME = "check"
EXIT_FINDINGS = 1
#: text width when stdout is not a terminal
PIPED_WIDTH = 80
MAX_WIDTH = 100
_INDENT = "   "


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="findings: what is wrong with this run, with the time at stake and the "
                                         "evidence (docs/findings.md)")
    add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (findings[], rules[], counts)")
    p.add_argument("--rules", default=None, metavar="FILE",
                   help="findings rules overrides (TOML: severities, thresholds, enabled); see docs/findings.md")
    p.add_argument("--categories", default=None, metavar="FILE",
                   help="kernel category rules (TOML) tried before the defaults; see docs/categories.md")
    p.add_argument("--fail-on", default=None, choices=["info", "warning", "error"],
                   help="exit 1 when a finding of this severity or above exists (a CI gate)")
    p.add_argument("--evidence", type=int, default=5, metavar="N", help="event ids listed per finding (default 5)")
    add_job_options(p)


def run(args: argparse.Namespace) -> int:
    from ..job import looks_like_job

    files = paths(args)
    return check_command(files, args, job=looks_like_job(files))


def _width() -> int:
    if os.environ.get("COLUMNS", "").isdigit():
        return max(40, min(int(os.environ["COLUMNS"]), MAX_WIDTH))
    if not sys.stdout.isatty():
        return PIPED_WIDTH
    return max(40, min(shutil.get_terminal_size((PIPED_WIDTH, 24)).columns, MAX_WIDTH))


def _wrap(text: str, width: int, first: str = _INDENT, rest: str | None = None) -> list[str]:
    return textwrap.wrap(one_line(text), width, initial_indent=first, subsequent_indent=rest or first,
                         break_on_hyphens=False) or [first.rstrip()]


def _head(f: Finding, width: int) -> list[str]:
    """Severity, rule (check, rank) and the time at stake on one line; on two when too long."""
    name = f.rule + (f" ({f.check})" if f.check else "") + (f" rank {f.rank}" if f.rank is not None else "")
    stake = f"~{fmt.dur(f.time_at_stake_us)} at stake" if f.time_at_stake_us is not None else "not estimated"
    left = f"{f.severity.word.upper():<8} {one_line(name)}"
    pad = width - len(left) - len(stake)
    if pad >= 2:
        return [f"{left}{' ' * pad}{stake}"]
    return [*_wrap(left, width, "", " " * 9), stake.rjust(width)]


def _evidence_text(f: Finding, shown: int) -> str:
    ev = f.evidence.tolist()
    if not ev:
        return "evidence: none in the events (from the load report)"
    ids = ", ".join(str(e) for e in ev[:shown]) + (", ..." if len(ev) > shown else "")
    what = fmt.plural(len(ev), "event")
    return f"evidence: {what} (node ids {ids})"


def render_text(report: FindingsReport, width: int | None = None, evidence: int = 5) -> str:
    """The report as text lines at most ``width`` wide (names longer than a line are wrapped)."""
    width = width or _width()
    counts = report.by_severity()
    lines = [f"tracetui check: {one_line(report.source)}"]
    summary = ", ".join(f"{n} {sev}" for sev, n in counts.items())
    if report.findings:
        lines += _wrap(f"{fmt.plural(len(report.findings), 'finding')} ({summary}); time at stake is an estimate "
                       f"of what fixing each would save", width, "")
    else:
        lines.append("no findings")
    for f in report.findings:
        lines += ["", *_head(f, width)]
        lines += _wrap(f.verdict, width)
        if f.time_at_stake_us is not None:
            lines += _wrap(f"time at stake: {f.stake_label}", width)
        lines += _wrap(_evidence_text(f, evidence), width)
        lines += _wrap(f"fix: {f.hint}", width)
    ran = ("trace", "job") if report.ranks is not None else ("trace",)  # job-scope rules run on a job only
    quiet = [r["id"] for r in report.rules if r["enabled"] and not r["findings"] and r["scope"] in ran]
    off = [r["id"] for r in report.rules if not r["enabled"]]
    lines.append("")
    if quiet:
        lines += _wrap("no findings from: " + ", ".join(quiet), width, "")
    if off:
        lines += _wrap("disabled: " + ", ".join(off), width, "")
    for e in report.errors:
        lines += _wrap(f"warning: {e}", width, "", "  ")
    return "\n".join(lines)


def exit_status(report: FindingsReport, fail_on: str | None) -> int:
    if fail_on is None:
        return 0
    from ..findings.spec import Severity

    return EXIT_FINDINGS if report.at_or_above(Severity.parse(fail_on)) else 0


def print_report(report: FindingsReport, *, as_json: bool, fail_on: str | None, evidence: int = 5) -> int:
    if as_json:
        sys.stdout.write(jsonout.dumps(report.as_json(), indent=True).decode() + "\n")
    else:
        sys.stdout.write(render_text(report, evidence=evidence) + "\n")
    return exit_status(report, fail_on)


def check_command(paths: list[str], args: Any, *, job: bool) -> int:
    """Run ``tracetui check`` on one trace (with its ET / driver-call trace) or a job;
    TraceError for bad input."""
    from ..analysis.categories import get_categorizer
    from ..findings.spec import rule_configs

    configs = rule_configs(args.rules)
    categorizer = get_categorizer(args.categories)
    if job:
        from ..findings.jobs import check_job

        report = check_job(paths, configs, categories=args.categories, use_cache=not args.no_cache,
                           workers=args.workers, scheduler=args.scheduler, follow_links=args.follow_links)
    else:
        from ..findings.engine import run_checks
        from ..store.traces import load_cached

        report = run_checks(load_cached(paths, use_cache=not args.no_cache), configs, categorizer)
    return print_report(report, as_json=args.json, fail_on=args.fail_on, evidence=args.evidence)
