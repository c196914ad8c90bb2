"""The detail pane of the critical-path screen, free of Textual: a segment (what its time
was, where it ran, what it waited on and led to), a kind of time, one name's time, a slack
row.  Names are trace data (``KeepText``, never markup); times through the critical path's
number formats (:mod:`tracetui.critical.numbers`, built on :mod:`tracetui.units`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rich.text import Text

from ...critical import KIND_NAMES, CriticalPath
from ...critical.model import KIND_MEANINGS
from ...critical.numbers import duration, share, timestamp
from ...names import shown, shown_in_pane
from .detail_section import DetailSection, grid
from .keep_text import KeepText
from .path_marks import KIND_STYLES

#: names an event of a rank: (rank, event) -> its name, None when that rank's trace is not loaded
EventNamer = Callable[[int, int], "str | None"]


def _pct(part: float, whole: float) -> str:
    return share(part / whole).strip() if whole else "-"


def _at(cp: CriticalPath, t: float) -> str:
    """``+1.234 ms after the window start (17.195 ms on the trace's clock)``."""
    return f"+{duration(t - cp.window.start_us)} after the window start ({timestamp(t)} on the path's clock)"


def _event(namer: EventNamer, rank: int, event: int, job: bool) -> Text | None:
    if event < 0:
        return None
    name = namer(rank, event)
    where = f"rank {rank}, " if job and rank >= 0 else ""
    text = KeepText(shown_in_pane(name) if name is not None else f"{where}event {event}")
    if name is not None:
        text.append(f"  ({where}event {event})", style="dim")
    return text


def segment_sections(cp: CriticalPath, i: int, namer: EventNamer, job: bool) -> list[DetailSection]:
    """Segment ``i``: its name and kind, then when, how long, where, what it waited on."""
    s = cp.segments
    kind = KIND_NAMES[int(s.kind[i])]
    rank, event = int(s.rank[i]), int(s.event[i])
    head = [KeepText(shown_in_pane(s.name[i]), style=f"bold {KIND_STYLES[kind]}", overflow="fold"),
            KeepText(f"{kind}: {KIND_MEANINGS[kind]}", style="dim")]
    dur = float(s.dur_us[i])
    rows: list[tuple[str, Any]] = [
        ("segment", f"{i + 1:,} of {len(s):,} in time order"),
        ("at", KeepText(_at(cp, float(s.start_us[i])))),
        ("time", KeepText(f"{duration(dur)} ({_pct(dur, cp.total_us)} of the path)")),
        ("on", KeepText(s.where[i])),
        ("rank", str(rank) if job and rank >= 0 else None),
        ("event", _event(namer, rank, event, job) if event >= 0 else KeepText("none (untraced time)", style="dim")),
    ]
    start, lead = int(s.from_event[i]), int(s.to_event[i])
    if start >= 0 and start != event:
        rows.append(("from", _event(namer, rank, start, job)))
    if lead >= 0 and lead != event:
        rows.append(("leads to", _event(namer, rank, lead, job)))
    if s.inferred[i]:
        rows.append(("inferred", KeepText("it rests on an inferred dependency (no trace record says so)",
                                          style="yellow")))
    if s.carried[i]:
        rows.append(("carried in", KeepText("work queued before the window (the previous step's GPU work)")))
    rows.append(("keys", KeepText("Enter goes to its event in the tree; n/N the next/previous segment",
                                  style="dim")))
    return [DetailSection(None, [*head, grid(rows)])]


def kind_sections(cp: CriticalPath, kind: str, n_segments: int, top: list[tuple[str, float, int]]) -> list[
        DetailSection]:
    """One kind of time: its total and share, then its largest names."""
    us = cp.by_kind_us[kind]
    head = [KeepText(kind, style=f"bold {KIND_STYLES[kind]}"), KeepText(KIND_MEANINGS[kind], style="dim")]
    rows = [("time", KeepText(f"{duration(us)} ({_pct(us, cp.total_us)} of the path)")),
            ("segments", f"{n_segments:,}")]
    out = [DetailSection(None, [*head, grid(rows)])]
    if top:
        out.append(DetailSection.of_rows("Largest names", [(f"{duration(t)} ×{n:,}", KeepText(shown(name)))
                                                           for name, t, n in top]))
    return out


def group_sections(cp: CriticalPath, kind: str, name: str, members: np.ndarray) -> list[DetailSection]:
    """One name's time of one kind: total, share, how many segments, first and last."""
    s = cp.segments
    us = float(s.dur_us[members].sum())
    rows = [("kind", kind), ("time", KeepText(f"{duration(us)} ({_pct(us, cp.total_us)} of the path)")),
            ("segments", f"{members.size:,}"),
            ("first at", KeepText(_at(cp, float(s.start_us[members[0]])))) if members.size else ("first at", None),
            ("longest", KeepText(duration(float(s.dur_us[members].max())))) if members.size else ("longest", None)]
    return [DetailSection(None, [KeepText(shown_in_pane(name), style=f"bold {KIND_STYLES[kind]}", overflow="fold"),
                                 grid(rows)])]


def slack_sections(cp: CriticalPath, j: int, job: bool) -> list[DetailSection]:
    """Row ``j`` of the slack table: how much longer the event could take."""
    t = cp.slack
    slack = float(t.slack_us[j])
    rows = [("what", t.what[j]), ("rank", str(int(t.rank[j])) if job and t.rank[j] >= 0 else None),
            ("slack", KeepText(f"{duration(slack)}: it could take that much longer (or end that much later) "
                               f"without making the path longer")),
            ("time", KeepText(duration(float(t.dur_us[j])))),
            ("at", KeepText(_at(cp, float(t.start_us[j])))),
            ("event", f"{int(t.event[j])}"),
            ("keys", KeepText("Enter goes to it in the tree", style="dim"))]
    return [DetailSection(None, [KeepText(shown_in_pane(t.name[j]), style="bold", overflow="fold"),
                                 grid(rows)])]


__all__ = ["EventNamer", "group_sections", "kind_sections", "segment_sections", "slack_sections"]
