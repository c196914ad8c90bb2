"""The findings list as the findings screen shows it: a
:class:`~tracetui.ui.view.row_source.RowSource` over a
:class:`~tracetui.findings.engine.FindingsReport`.

Node ids: ``0 .. n-1`` are the findings (in the report's order: largest time at stake
first, not estimated last); the evidence events of finding ``i`` are its children, ids
``first_child[i] + k`` for its ``k``-th evidence event (time order).  A finding's row shows
its severity, rule and verdict, the time at stake (an estimate: ``~``) and the count; an
evidence row the event's name (when it is an event of the trace on screen; in a job, the
other ranks' events are named by id and rank) and the µs at stake for that event where the
rule has one.  Trace strings are sanitised (:func:`~tracetui.errors.one_line`) and never
markup.  This module does not import textual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text

from ... import units
from ...errors import one_line
from ...findings.fmt import short_name
from ...findings.spec import Finding, Severity
from ...names import shown

if TYPE_CHECKING:
    from ...findings import FindingsReport

#: Rich style of a severity word
SEVERITY_STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "cyan"}
#: cells of the severity word in a row label ("warning" and a space)
_SEV_CELLS = 8


def stake_text(us: float | None) -> str:
    """A time at stake as the list shows it: ``~29.2 ms`` (an estimate); ``-`` when not estimated."""
    return "-" if us is None else "~" + units.duration_text(us)


def finding_heading(f: Finding) -> Text:
    """``warning  exposed_comm (send_recv)``: severity word, rule id and sub-check."""
    text = Text()
    text.append(f.severity.word.ljust(_SEV_CELLS), style=SEVERITY_STYLES[f.severity])
    text.append(f.rule, style="bold")
    if f.check:
        text.append(f" ({one_line(f.check)})", style="bold")
    return text


class FindingsRowSource:
    """The findings of ``report`` and their evidence, for :class:`~tracetui.ui.tree.virtual_tree.VirtualTree`.

    ``kt``: the Kineto trace on screen (names the evidence events); ``rank``: the rank on
    screen in a job (evidence of other ranks is named by id), None for one trace."""

    def __init__(self, report: FindingsReport, kt: Any = None, rank: int | None = None) -> None:
        self.report = report
        self.findings = report.findings
        self.kt = kt
        self.rank = rank
        self.job = report.ranks is not None
        n = len(self.findings)
        sizes = np.array([f.evidence.size for f in self.findings], dtype=np.int64)
        #: node id of finding i's first evidence row
        self.first_child = n + np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if n else sizes
        self.n = n

    # ------------------------------------------------------------------ ids
    def finding_of(self, node: int) -> tuple[int, int]:
        """(finding index, evidence index) of a node; evidence index -1 for a finding row."""
        if node < self.n:
            return node, -1
        i = int(np.searchsorted(self.first_child, node, side="right")) - 1
        return i, int(node - self.first_child[i])

    def evidence_node(self, i: int, k: int) -> int:
        """The node id of evidence ``k`` of finding ``i``."""
        return int(self.first_child[i]) + k

    def on_screen(self, f: Finding) -> bool:
        """Whether ``f``'s evidence events are events of the trace on screen."""
        return self.kt is not None and (f.rank is None or f.rank == self.rank)

    def event_label(self, f: Finding, event: int, short: bool = False) -> Text:
        """An evidence event: its name (trace data, sanitised; ``short``: a kernel's without
        its signature) when it is on screen, else its id."""
        if self.on_screen(f) and 0 <= event < self.kt.n_events:
            name = self.kt.name(event)
            return Text.assemble((one_line(shown(short_name(name) if short else name)), "cyan"))
        where = f" on rank {f.rank}" if f.rank is not None else ""
        return Text(f"event {event}{where}", style="dim")

    # ------------------------------------------------------------------ RowSource
    def root_nodes(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.int64)

    def child_nodes(self, node: int) -> np.ndarray:
        if node >= self.n:
            return np.empty(0, dtype=np.int64)
        start = int(self.first_child[node])
        return np.arange(start, start + self.findings[node].evidence.size, dtype=np.int64)

    def parent_of(self, node: int) -> int:
        return -1 if node < self.n else self.finding_of(node)[0]

    def row_label(self, node: int) -> Text:
        i, k = self.finding_of(node)
        f = self.findings[i]
        if k < 0:
            text = finding_heading(f)
            text.append("  ")
            text.append(one_line(f.verdict))
            return text
        return self.event_label(f, int(f.evidence[k]))

    def row_columns(self, node: int) -> list[str]:
        i, k = self.finding_of(node)
        f = self.findings[i]
        rank = [str(f.rank) if f.rank is not None else ""] if self.job else []
        if k < 0:
            return [stake_text(f.time_at_stake_us), f"{f.count:,}", *rank]
        per = f.evidence_us
        return [stake_text(float(per[k])) if per is not None else "", "", *rank]

    def column_headers(self) -> list[str]:
        return ["~at stake", "count", *(["rank"] if self.job else [])]

    def column_widths(self) -> list[int]:
        return [9, 7, *([5] if self.job else [])]

    def node_weight(self, node: int) -> float:
        i, k = self.finding_of(node)
        f = self.findings[i]
        if k < 0:
            return f.time_at_stake_us or 0.0
        return float(f.evidence_us[k]) if f.evidence_us is not None else 0.0
