"""Tree navigation as Trace2Tree users script it: find a node, print a subtree, print
the parent chain (the Python API: ``from tracetui import find_node, print_subtree``; the text
``tracetui tree`` prints).  Text only (no Textual); durations are shown in microseconds."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from .. import units
from ..errors import one_line
from ..kineto.kinds import Kind
from ..kineto.rollup import subtree_gpu_totals
from ..kineto.trace import KinetoTrace
from ..names import shown


def find_node(kt: KinetoTrace, external_id: int, pid: Any = None, tid: Any = None) -> int | None:
    """The cpu_op (or user_annotation) with this External id on (pid, tid); None if absent."""
    hits = kt.find_by_external_id(external_id, pid, tid)
    return hits[0] if hits else None


def describe_node(kt: KinetoTrace, node: int) -> str:
    """One line: category, name, duration (µs) and ids; text from the file (names, pids and
    tids written as strings) with control characters escaped (:func:`~tracetui.errors.one_line`);
    a name over :data:`~tracetui.names.NAME_WORK_CHARS` characters cut there (``… (+10 MB)``)."""
    if kt.is_lane_node(node):
        return f"[lane] {one_line(shown(kt.name(node)))}"
    kind = Kind(int(kt.kind[node])).name.lower()
    bits = [f"[{kind}] {one_line(shown(kt.name(node)))}", f"dur={kt.dur[node]:.3f}{units.US_ASCII}"]
    if kt.external_id[node] >= 0:
        bits.append(f"ext={int(kt.external_id[node])}")
    if kt.correlation[node] >= 0:
        bits.append(f"corr={int(kt.correlation[node])}")
    if kt.rf_id[node] > 0:
        bits.append(f"rf_id={int(kt.rf_id[node])}")
    if kt.is_gpu_event(node):
        bits.append(one_line(f"dev={kt.pids[node]} stream={kt.tids[node]}"))
    return " ".join(bits)


#: levels of indentation (two spaces each) before lines carry a depth tag instead
MAX_INDENT = 64


def indent(level: int) -> str:
    """Two spaces per level up to :data:`MAX_INDENT` levels; deeper lines get the same
    indentation plus a ``[d=level] `` tag, so a 50,000-deep chain stays linear in size."""
    if level <= MAX_INDENT:
        return "  " * level
    return "  " * MAX_INDENT + f"[d={level}] "


def format_subtree(kt: KinetoTrace, node: int, *, depth: int | None = None, hide_python: bool = False,
                   gpu_totals: tuple | None = None) -> str:
    """The subtree under ``node`` as indented text (iterative, no recursion limit; levels below
    :data:`MAX_INDENT` are tagged ``[d=N]``, N counted from ``node``)."""
    gtime, gcount = gpu_totals or subtree_gpu_totals(kt)
    word = kt.device_word().lower()  # "gpu" or "device": what the time and count are of
    lines: list[str] = []
    stack: list[tuple[int, int]] = [(node, 0)]
    while stack:
        x, lvl = stack.pop()
        line = indent(lvl) + describe_node(kt, x)
        if gcount[x] and not kt.is_gpu_work(x):
            line += f" {word}={gtime[x]:.3f}{units.US_ASCII} {word}_events={int(gcount[x])}"
        lines.append(line)
        if depth is not None and lvl >= depth:
            continue
        kids = kt.nopy_children(x) if hide_python else kt.children(x)
        for c in kids[::-1].tolist():
            stack.append((c, lvl + 1))
    return "\n".join(lines)


def format_parent_chain(kt: KinetoTrace, node: int) -> str:
    """The node and its ancestors, root first, one per line (indented as in :func:`format_subtree`)."""
    chain = [node] + kt.ancestors(node)
    return "\n".join(indent(i) + describe_node(kt, x) for i, x in enumerate(reversed(chain)))


def print_subtree(kt: KinetoTrace, node: int, *, depth: int | None = None, file: TextIO | None = None) -> None:
    print(format_subtree(kt, node, depth=depth), file=file or sys.stdout)


def print_parent_chain(kt: KinetoTrace, node: int, *, file: TextIO | None = None) -> None:
    print(format_parent_chain(kt, node), file=file or sys.stdout)
