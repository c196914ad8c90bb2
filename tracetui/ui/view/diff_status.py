"""The diff browser's status line: what is compared, which steps, how the ops matched, and the
browser's state (order, regressions filter, search), as :class:`~.status_parts.Part` s that
:func:`~.status_parts.fit_status` fits to one line (the filter flag and the warnings cue are
never dropped)."""

from __future__ import annotations

import os

import numpy as np
from rich.text import Text

from ...diff.align import RowKind
from ...diff.model import MATCH_WORDS, DiffSide, DiffTree, Match
from ...errors import one_line
from ...names import shown_text
from .status_parts import Part, state_parts, warnings_part

#: match methods of paired ops, in the order the status line counts them
_PAIRED = (Match.ET, Match.SEQ, Match.SHAPES, Match.NAME)


def _part(key: str, *forms: str, style: str = "") -> Part:
    return Part(key, tuple(Text(one_line(shown_text(f)), style=style) for f in forms))


def _file(side: DiffSide) -> str:
    kt = side.linked.kineto
    return os.path.basename(kt.path) if kt is not None and kt.path else side.linked.title


def _steps(side: DiffSide, short: bool = False) -> str:
    if side.n_steps == 1:
        step = side.template_step
        return str(step.number) if short else step.name
    return f"mean of {side.n_steps} steps"


def diff_status_parts(tree: DiffTree, *, sorted_by_delta: bool, regressions: int | None, query: str | None = None,
                      n_matches: int = 0, n_warnings: int = 0) -> list[Part]:
    """The parts of the status line (module docstring).  ``regressions``: the filter is on
    and keeps this many regressed ops (None: off)."""
    a, b = tree.a, tree.b
    fa, fb = _file(a), _file(b)
    labels = f"{a.label} ↔ {b.label}"
    if fa == fb:
        parts = [_part("title", f"{labels}: {fa}", labels, style="bold")]
    elif (a.label, b.label) != ("A", "B"):  # ranks of a job: their labels say more than the file names
        parts = [_part("title", f"{a.label}: {fa} ↔ {b.label}: {fb}", labels, style="bold")]
    else:
        parts = [_part("title", f"{a.label}: {fa} ↔ {b.label}: {fb}", f"{fa} ↔ {fb}", style="bold")]
    sa, sb = _steps(a), _steps(b)
    ka, kb = _steps(a, short=True), _steps(b, short=True)
    parts.append(_part("steps", sa if sa == sb else f"{sa} ↔ {sb}",
                       f"step {ka}" if ka == kb else f"step {ka} ↔ {kb}" if a.n_steps == b.n_steps == 1 else
                       f"{a.n_steps} ↔ {b.n_steps} steps"))
    op = tree.kind == int(RowKind.OP)
    counts = np.bincount(tree.method[op], minlength=len(Match))
    paired = int(sum(counts[int(m)] for m in _PAIRED))
    how = ", ".join(f"{int(counts[int(m)]):,} {MATCH_WORDS[m]}" for m in _PAIRED if counts[int(m)])
    added, removed = int(counts[int(Match.ADDED)]), int(counts[int(Match.REMOVED)])
    parts.append(_part("matches", f"{paired:,} ops paired ({how}), {added:,} added, {removed:,} removed",
                       f"{paired:,} paired, +{added:,} -{removed:,}", f"+{added:,} -{removed:,}"))
    if sorted_by_delta:
        parts.append(_part("sort", "sorted by |ΔGPU|", "|ΔGPU|", style="dim"))
    if regressions is not None:
        parts.append(_part("filter", f"REGRESSIONS ONLY ({regressions:,})", "REGRESSIONS", style="bold"))
    parts += [p for p in state_parts(query=query, n_matches=n_matches) if p.key != "filter"]
    if n_warnings:
        parts.append(warnings_part(n_warnings))
    return parts
