"""``tracetui open TRACE [ET]`` (the default command: ``tracetui TRACE``): the terminal browser on
one trace (with its ET or driver-call trace), or on a whole job (a folder, a glob, several rank
files: the rank picker; docs/jobs.md).  With ``--follow``: a folder opens on the follow screen
(``tracetui follow DIR``'s), a driver-call trace is read again as it grows (docs/follow.md).

One of the three command modules that import the browser (:mod:`tracetui.ui`; the others are
:mod:`tracetui.cli.diff` and :mod:`tracetui.cli.follow`), and only when the command runs, so that
the parser stays light.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import TraceError
from .common import add_follow_options, add_inputs, add_job_options, follow_request, paths

NAME = "open"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="open the terminal browser (the default)")
    add_inputs(p)
    add_job_options(p)
    p.add_argument("--follow", action="store_true",
                   help="DIR: the follow screen, each new trace compared with the one before; a driver-call "
                        "trace (JSON Lines): read again as it grows (docs/follow.md)")
    add_follow_options(p)


def run(args: argparse.Namespace) -> int:
    from ..job import looks_like_job

    files = paths(args)
    if args.follow:
        return _follow(files, args)
    if looks_like_job(files):
        from ..ui.app import run_job_app

        return run_job_app(files, use_cache=not args.no_cache, workers=args.workers, scheduler=args.scheduler,
                           follow_links=args.follow_links)
    from ..ui.app import run_app

    return run_app(files, use_cache=not args.no_cache)


def _follow(files: list[str], args: argparse.Namespace) -> int:
    """``--follow``: a folder's follow screen, or one file read again as it grows."""
    import os

    if len(files) != 1:
        raise TraceError(None, "--follow takes one folder (the follow screen) or one file (read again as it grows)")
    if os.path.isdir(files[0]):
        from ..ui.app import run_follow_app

        return run_follow_app(follow_request(files[0], args))
    request = follow_request(os.path.dirname(files[0]) or ".", args)  # checks --interval
    from ..ui.app import run_app

    return run_app(files, use_cache=False, live=request.interval)
