"""``tracetui tree TRACE [--depth N] [--select SELECTOR] [--hide-python]``: print the op tree
as text, every lane or one subtree; an Execution Trace alone prints its node tree.  The text
of a subtree is :mod:`tracetui.export.tree_text` (the Python API's ``format_subtree``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import one_line
from .common import add_inputs, load

if TYPE_CHECKING:
    from ..session import LinkedTrace

NAME = "tree"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="print the op tree as text")
    add_inputs(p)
    p.add_argument("--depth", type=int, default=None, help="deepest level to print (lane roots are level 0)")
    p.add_argument("--select", default=None, metavar="SELECTOR", help="print only this subtree (see export)")
    p.add_argument("--hide-python", action="store_true", help="skip python_function levels")


def run(args: argparse.Namespace) -> int:
    linked = load(args)
    return print_tree_command(linked, depth=args.depth, selector=args.select, hide_python=args.hide_python)


def print_tree_command(linked: LinkedTrace, *, depth: int | None, selector: str | None,
                       hide_python: bool) -> int:
    """``tracetui tree``: print every lane (or one selected subtree) as text."""
    from ..export.tree_text import format_subtree
    from ..kineto.rollup import subtree_gpu_totals

    kt = linked.kineto
    if kt is None:
        if linked.et is None:
            return 0
        return _print_et_tree(linked.et, depth=depth, selector=selector)
    totals = subtree_gpu_totals(kt)
    if selector:
        from ..export.selectors import resolve_selector

        roots = [resolve_selector(linked, selector)]
    else:
        roots = kt.roots()
    out = sys.stdout
    for r in roots:
        out.write(format_subtree(kt, r, depth=depth, hide_python=hide_python, gpu_totals=totals) + "\n")
    return 0


def format_et_subtree(et, pos: int, *, depth: int | None = None) -> str:
    """An Execution Trace's subtree under position ``pos`` as indented text: per node its name,
    ``id``, ``rf_id``, ET ``tid`` and ``seq_id`` (when it has one).  An ET has no times."""
    from ..export.tree_text import indent

    lines: list[str] = []
    stack: list[tuple[int, int]] = [(pos, 0)]
    while stack:
        x, lvl = stack.pop()
        line = (f"{indent(lvl)}[et] {one_line(et.name(x))} id={int(et.ids[x])} rf_id={int(et.rf_id[x])} "
                f"tid={int(et.tid[x])}")
        if int(et.seq_id[x]) >= 0:
            line += f" seq_id={int(et.seq_id[x])}"
        lines.append(line)
        if depth is not None and lvl >= depth:
            continue
        for c in et.children(x)[::-1].tolist():
            stack.append((int(c), lvl + 1))
    return "\n".join(lines)


def _print_et_tree(et, *, depth: int | None, selector: str | None) -> int:
    """``tracetui tree`` of an Execution Trace alone (selectors: ``et:<id>``, ``name:<op>[#n]``)."""
    from ..export.et_export import resolve_et_selector

    root = resolve_et_selector(et, selector)
    roots = [root] if root is not None else et.roots().tolist()
    for r in roots:
        sys.stdout.write(format_et_subtree(et, int(r), depth=depth) + "\n")
    return 0
