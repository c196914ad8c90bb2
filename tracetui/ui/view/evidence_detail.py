"""The browser's detail pane with the findings an event is evidence of: a
:class:`~.detail_section.DetailModel` that adds one section below another model's (the
trace's :class:`~.trace_detail.TraceDetail`).

Until the findings are computed (a worker, after the browser's first paint) it is the
trace's detail alone; then a node whose Kineto event is evidence of findings gets a
"Evidence of N findings" section: each finding's severity, rule, time at stake (an
estimate) and, where the rule has one, this event's share; ``F`` lists them.  This module
does not import textual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .detail_section import DetailModel, DetailSection, grid
from .findings_row_source import finding_heading, stake_text
from .keep_text import KeepText

if TYPE_CHECKING:
    from ...findings import FindingsReport


def evidence_section(report: FindingsReport, event: int, rank: int | None = None) -> DetailSection | None:
    """The section naming the findings ``event`` (of ``rank`` in a job) is evidence of; None
    when it is evidence of none."""
    hits = report.evidence_of(event, rank)
    if not hits:
        return None
    rows = []
    for f in hits:
        line = KeepText()  # keeps each number with its unit when the pane wraps the line
        line.append_text(finding_heading(f))
        line.append(f"  {stake_text(f.time_at_stake_us)}", style="bold")
        where = np.flatnonzero(f.evidence == event)
        k = int(where[0]) if where.size else 0
        line.append(f"  evidence {k + 1:,} of {f.evidence.size:,}", style="dim")
        if f.evidence_us is not None and where.size:
            line.append(f"; this event {stake_text(float(f.evidence_us[k]))}", style="dim")
        rows.append(("", line))
    n = len(hits)
    body = [grid(rows), KeepText("F: the findings (time at stake is an estimate of what fixing each would save)",
                                 style="dim")]
    return DetailSection(f"Evidence of {n} finding{'s' if n != 1 else ''}", body)


class EvidenceDetail:
    """``base``'s sections, then :func:`evidence_section` of the node's Kineto event
    (``kineto_of``: tree node -> Kineto event, -1 none) once :attr:`report` is set."""

    def __init__(self, base: DetailModel, kineto_of: Callable[[int], int]) -> None:
        self.base = base
        self.kineto_of = kineto_of
        self.report: FindingsReport | None = None
        self.rank: int | None = None

    def sections(self, node: int | None, width: int) -> list[DetailSection]:
        out = self.base.sections(node, width)
        if self.report is None or node is None:
            return out
        event = self.kineto_of(node)
        extra = evidence_section(self.report, event, self.rank) if event >= 0 else None
        return out + [extra] if extra is not None else out

