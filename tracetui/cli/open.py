"""``tracetui open TRACE [ET]`` (the default command: ``tracetui TRACE``): the terminal browser on
one trace (with its ET or driver-call trace), or on a whole job (a folder, a glob, several rank
files: the rank picker; docs/jobs.md).

One of the two command modules that import the browser (:mod:`tracetui.ui`; the other is
:mod:`tracetui.cli.diff`), and only when the command runs, so that the parser stays light.
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import add_inputs, add_job_options, paths

NAME = "open"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="open the terminal browser (the default)")
    add_inputs(p)
    add_job_options(p)


def run(args: argparse.Namespace) -> int:
    from ..job import looks_like_job

    files = paths(args)
    if looks_like_job(files):
        from ..ui.app import run_job_app

        return run_job_app(files, use_cache=not args.no_cache, workers=args.workers, scheduler=args.scheduler,
                           follow_links=args.follow_links)
    from ..ui.app import run_app

    return run_app(files, use_cache=not args.no_cache)
