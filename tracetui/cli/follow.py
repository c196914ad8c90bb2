"""``tracetui follow DIR``: follow a run while it trains (docs/follow.md).  On a terminal, without
``--json``, ``--once``, ``--fail-above`` or ``--idle-exit``, the browser opens on the follow
screen (:mod:`tracetui.ui.follow`; also ``tracetui DIR --follow``); otherwise one line is printed
per complete trace (JSON with ``--json``, for logs and CI), what went wrong with a file on stderr
(one line each).

It stops after the traces there now (``--once``), once nothing changed in DIR for ``--idle-exit``
seconds, or when interrupted.  Exit status: 1 with ``--fail-above PCT`` when a cycle's step time
grew by more than PCT percent against the first or the previous cycle of its series (each said on
stderr as it is read), else 0; 2 bad input; 130 interrupted.

One of the three command modules that import the browser (:mod:`tracetui.ui`; the others are
:mod:`tracetui.cli.open` and :mod:`tracetui.cli.diff`), and only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from .. import units
from ..errors import TraceError, one_line
from .common import add_follow_options, follow_request

if TYPE_CHECKING:
    from ..follow.cycle import Cycle
    from ..follow.follower import FollowRequest

NAME = "follow"
EXIT_REGRESSED = 1


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="follow a run while it trains: each trace written into DIR, once complete, "
                                         "measured and compared with the cycle before (docs/follow.md)")
    p.add_argument("folder", metavar="DIR", help="the folder the profiler writes its traces into "
                                                 "(tensorboard_trace_handler's dir_name)")
    add_follow_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON line per complete trace (no browser)")
    p.add_argument("--once", action="store_true", help="read the traces there now, then stop (no browser)")
    p.add_argument("--fail-above", default=None, metavar="PCT",
                   help="exit 1 when a cycle's step time grew by more than PCT percent against the first or the "
                        "previous cycle of its series (each said on stderr as it is read; no browser)")
    p.add_argument("--idle-exit", type=float, default=None, metavar="S",
                   help="stop once nothing in DIR changed for S seconds (no browser)")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the cache (opening a cycle in the browser then parses it again)")


def paths(args: argparse.Namespace) -> list[str]:
    return [args.folder]


def run(args: argparse.Namespace) -> int:
    from .diff_text import parse_threshold

    threshold = parse_threshold(args.fail_above)
    request = follow_request(args.folder, args)
    if args.idle_exit is not None and args.idle_exit < 0:
        raise TraceError(None, f"--idle-exit: must be 0 seconds or more (got {args.idle_exit:g})")
    headless = args.json or args.once or threshold is not None or args.idle_exit is not None
    if not headless and sys.stdout.isatty():
        from ..ui.app import run_follow_app

        return run_follow_app(request)
    return follow_command(request, as_json=args.json, once=args.once, threshold=threshold, idle_exit=args.idle_exit)


def follow_command(request: FollowRequest, *, as_json: bool, once: bool, threshold: float | None,
                   idle_exit: float | None) -> int:
    """Print a line per complete trace of ``request.folder`` until stopped (``once``: after the
    traces there now; ``idle_exit``: once nothing changed for that many seconds); the exit status
    (module docstring; ``threshold``: ``--fail-above``)."""
    from ..follow.cycle import Cycle
    from ..follow.follower import Follower
    from ..io import jsonout

    follower = Follower(request)
    regressed = False
    while True:
        for event in follower.poll():
            if not isinstance(event, Cycle):
                _say(event.line())
                continue
            text = jsonout.dumps(event.line(threshold)).decode() if as_json else cycle_text(event)
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            why = event.verdict(threshold) if threshold is not None else []
            for line in why:
                _say(line)
            regressed = regressed or bool(why)
        if once and not follower.waiting():
            for note in follower.incomplete():
                _say(note.line())
            break
        if idle_exit is not None and follower.watcher.idle_for() >= idle_exit and not follower.waiting():
            break
        time.sleep(request.interval)
    return EXIT_REGRESSED if regressed else 0


def _say(line: str) -> None:
    print(f"tracetui: {line}", file=sys.stderr, flush=True)


def cycle_text(c: Cycle) -> str:
    """One line of text per cycle: which, steps, step time and its changes, GPU busy, findings,
    top kernel."""
    from ..follow.cycle import kernel_short

    n = c.numbers
    parts = [f"cycle {c.number}" + (f" ({c.series})" if c.series else ""), c.name,
             units.plural(n.steps, "step"), f"{units.duration_text(n.step_us)}/step"]
    for which in ("previous", "first"):
        p = c.vs(which)
        if p is not None:
            parts.append(f"{units.pct_text(p, '+.1f')} vs {which}")
    if n.gpu_busy_pct is not None:
        parts.append(f"GPU busy {units.pct_text(n.gpu_busy_pct)}")
    parts.append("findings " + " ".join(f"{v} {k}" for k, v in n.findings.items()))
    if n.top_kernel is not None:
        parts.append(f"top kernel {kernel_short(n.top_kernel)}")
    return one_line("  ".join(parts))
