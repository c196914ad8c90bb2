"""What the command modules share: the input arguments of a trace command, the options of a
whole job, the files a command was given, and opening them.

Imported when the parser is built (by every command module), so it imports nothing heavy:
the loader is imported by :func:`load` when a command runs.
"""

from __future__ import annotations

import argparse


def add_inputs(p: argparse.ArgumentParser) -> None:
    """The input files of a trace command: a trace, an optional second file, ``--et``, ``--driver``
    (and the rank files of a job, unnamed in the help), and ``--no-cache``."""
    p.add_argument("trace", help="a Kineto trace (.json or .json.gz); an Execution Trace is detected by content")
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
