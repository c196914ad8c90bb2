"""What the command modules share: the input arguments of a trace command, the options of a
whole job, the files a command was given, and opening them; following a folder's options.

Imported when the parser is built (by every command module), so it imports nothing heavy:
the loader is imported by :func:`load` when a command runs.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from ..errors import TraceError, TraceFileError
from ..follow.watch import POLL_S  # a light module: the parser shows the default

if TYPE_CHECKING:
    from ..follow.follower import FollowRequest


def add_inputs(p: argparse.ArgumentParser) -> None:
    """The input files of a trace command: a trace, an optional second file, ``--et``, ``--driver``
    (and the rank files of a job, unnamed in the help), and ``--no-cache``."""
    p.add_argument("trace", help="a trace file, recognised by content: a PyTorch profiler trace (.json, .json.gz), "
                                 "an Execution Trace, a driver-call trace, an Nsight Systems SQLite export ... "
                                 "(docs/formats.md)")
    p.add_argument("second", nargs="?", default=None,
                   help="optional second file: the Execution Trace (or Kineto trace) of the same run, or its CUDA "
                        "memory snapshot (a .pickle of torch.cuda.memory._dump_snapshot)")
    p.add_argument("--et", dest="et", default=None, metavar="ET_TRACE",
                   help="the PyTorch Execution Trace recorded in the same run")
    p.add_argument("--driver", dest="driver", default=None, metavar="DRIVER_TRACE",
                   help="a driver-call trace (JSON Lines of an eBPF or LD_PRELOAD tracer) of the same run: "
                        "its calls are linked to the Kineto trace's (docs/driver.md)")
    p.add_argument("more", nargs="*", default=[], help=argparse.SUPPRESS)
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the on-disk cache of parsed traces")


def add_job_options(p: argparse.ArgumentParser) -> None:
    """Options of a whole job (a folder, a glob, several rank files; see docs/jobs.md)."""
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="for a job: processes that load ranks in parallel (default: one per core)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="for a job: load and summarise ranks on this Dask scheduler (needs tracetui[cluster])")
    add_follow_links(p)


def add_follow_links(p: argparse.ArgumentParser) -> None:
    """``--follow-links``: read the files of a job's folder (or glob) that lead outside it."""
    p.add_argument("--follow-links", action="store_true",
                   help="for a job: also read the files of the folder (or glob) that are links to files outside "
                        "it (skipped with a warning by default)")


def add_follow_options(p: argparse.ArgumentParser) -> None:
    """``--interval``: shared with ``tracetui DIR --follow`` and ``tracetui follow DIR``."""
    p.add_argument("--interval", type=float, default=POLL_S, metavar="S",
                   help=f"seconds between two looks at the folder (default {POLL_S:g}; a poll of the "
                        "files' sizes and times: works on network file systems too)")


def follow_request(folder: str, args: argparse.Namespace) -> FollowRequest:
    """The request of a command line (bad input: TraceError, one line)."""
    from ..follow.follower import FollowRequest

    if not os.path.exists(folder):
        raise TraceFileError(folder, "no such folder")
    if not os.path.isdir(folder):
        raise TraceFileError(folder, "is not a folder: follow watches the folder a profiler writes into")
    if not args.interval > 0:
        raise TraceError(None, f"--interval: must be more than 0 seconds (got {args.interval:g})")
    return FollowRequest(folder, args.interval, not args.no_cache, getattr(args, "rules", None))


def paths(args: argparse.Namespace) -> list[str]:
    """The files a command was given, in the order the loaders take them: the trace, the second
    file, the rest of a job's files, ``--et``, ``--driver`` (those of them the command has)."""
    out = [args.trace]
    if getattr(args, "second", None):
        out.append(args.second)
    out += getattr(args, "more", [])
    if args.et:
        out.append(args.et)
    if getattr(args, "driver", None):
        out.append(args.driver)
    return out


def load(args: argparse.Namespace):
    """The :class:`~tracetui.session.LinkedTrace` of the command's files (through the cache
    unless ``--no-cache``); TraceError for bad input."""
    from ..store.traces import load_cached

    return load_cached(paths(args), use_cache=not args.no_cache)
