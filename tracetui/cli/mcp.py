"""``tracetui mcp --root DIR [--root DIR ...]``: answers for coding agents (docs/mcp.md).

A Model Context Protocol server over stdio (``pip install 'tracetui[mcp]'``) whose tools are
the commands (summary, check, critical-path, diff, query, memory, tree, slice) on the traces
under the roots; see :mod:`tracetui.mcp_server`.  An MCP client starts it; it answers until the
client closes its stdin.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import units
from ..errors import TraceError
from ..query.sandbox import DEFAULT_TIMEOUT_S, TIMEOUT_OPTION

NAME = "mcp"
#: the extra that installs the SDK (the message of a missing SDK names it)
EXTRA = "pip install 'tracetui[mcp]'"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="answers for coding agents: an MCP server over stdio whose tools are these "
                                         "commands (needs tracetui[mcp]; docs/mcp.md)")
    p.add_argument("--root", action="append", default=[], metavar="DIR", required=True,
                   help="a folder whose traces the server may read (repeatable); nothing outside the roots is read")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the folder the slice tool writes into (created; default: a new temp folder)")
    p.add_argument("--max-mb", type=float, default=None, metavar=units.MB,
                   help=f"memory the traces kept loaded may take, in {units.MB} (default: a quarter of the memory "
                        "available)")
    p.add_argument(TIMEOUT_OPTION, type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"stop a query after this many seconds (default {DEFAULT_TIMEOUT_S:g}; 0: no limit)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="for a job: processes that load ranks in parallel (default: one per core)")


def paths(args: argparse.Namespace) -> list[str]:
    return list(args.root)


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    import tempfile

    from ..mcp_server.loaded import default_budget
    from ..mcp_server.roots import Roots
    from ..mcp_server.tools import Tools

    try:
        import mcp.server.mcpserver  # noqa: F401 -- the SDK (the optional extra) is there before anything starts

        from ..mcp_server.server import serve
    except ImportError as exc:
        raise TraceError(NAME, f"needs the MCP SDK ({EXTRA}): {exc}") from None
    if not args.timeout >= 0:  # also NaN
        raise TraceError(NAME, f"{TIMEOUT_OPTION} {args.timeout:g}: give the seconds a query may run (0: no limit)")
    if args.max_mb is not None and not args.max_mb > 0:
        raise TraceError(NAME, f"--max-mb {args.max_mb:g}: give the megabytes loaded traces may take")
    if args.out:
        out = os.path.realpath(args.out)
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as exc:
            raise TraceError(args.out, f"--out: cannot create the folder: {exc.strerror or exc}") from None
    else:
        out = tempfile.mkdtemp(prefix="tracetui-mcp-")
    roots = Roots.of([*args.root, out])  # the slices written are read back by the other tools
    print(f"tracetui mcp: serving {roots.describe()}; slices go to {out}", file=sys.stderr)
    try:
        serve(Tools(roots, out, default_budget(args.max_mb), args.timeout or None, workers=args.workers))
    finally:
        if not args.out:
            try:
                os.rmdir(out)  # the temp folder goes when no slice was written into it
            except OSError:
                pass
    return 0
