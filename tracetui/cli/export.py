"""``tracetui export TRACE [--et ET] [--select SELECTOR] --format md|html|csv|json|chrome|folded -o OUT``:
the whole trace or one subtree as a report, a Chrome trace or folded stacks (:func:`tracetui.export.export_command`).
An export takes one rank's files (a job's input is told what is wrong with it)."""

from __future__ import annotations

import argparse
from typing import Any

from .. import units
from .common import add_inputs, load

NAME = "export"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="export the whole trace or one subtree as a report, a Chrome trace or "
                                         "folded stacks (flame graphs)")
    add_inputs(p)
    p.add_argument("--select", default=None, metavar="SELECTOR",
                   help="subtree root: ext:<External id>, et:<ET node id>, name:<op name>[#<n>] "
                        "(n-th in time order, from 1), or node:<node id>; default: the whole trace")
    # the formats of tracetui.export.FORMATS, spelled here: the parser imports no export code
    p.add_argument("--format", "-f", required=True, choices=["md", "html", "csv", "json", "chrome", "folded"],
                   help="md (GitHub Markdown), html (self-contained), csv, json, chrome (Perfetto/tracetui), "
                        f"folded (frame;frame value lines in integer {units.NS}, for flamegraph.pl, inferno, "
                        "speedscope)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file ('-' for stdout)")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--python-frames", action="store_true",
                   help="list python function frames among the report's host events (md, html, csv, json); "
                        "they are left out by default; folded --by cpu: keep them as frames")
    p.add_argument("--by", choices=["cpu", "gpu"], default="cpu",
                   help="folded: count host time (self time of each stack, adds up to the subtree's duration) or "
                        "GPU time (each GPU event under the innermost op above its launch); default cpu")


def run(args: argparse.Namespace) -> int:
    linked = load(args)
    from ..export import export_command

    return export_command(linked, selector=args.select, fmt=args.format, output=args.output, rules=args.rules,
                          python_frames=args.python_frames, by=args.by)
