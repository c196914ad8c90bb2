"""The critical-path screen's models, free of Textual: three row sources over a
:class:`~tracetui.critical.CriticalPath` (each is also the detail pane's model), the
timeline's tracks (one per kind of time) and the header lines.

- :class:`SegmentRows`: the path's segments in time order (node = segment index);
- :class:`KindRows`: the breakdown by kind (share of the path), each kind's time by name,
  each name's segments in time order (segment nodes keep their index; kinds and names
  come after them);
- :class:`SlackRows`: ops and GPU events off the path, least slack first (what would become
  critical next).

Times are µs on the path's clock (``cp.origin_us``); the At column counts from the window
start.  Names are trace data: :class:`rich.text.Text`, never markup.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ... import units
from ...critical import KIND_NAMES, CriticalPath
from ...critical.model import row_event
from ...critical.numbers import share
from ...errors import one_line
from ...names import shown
from .detail_section import DetailSection
from .path_detail import EventNamer, group_sections, kind_sections, segment_sections, slack_sections
from .path_marks import KIND_SHORT, KIND_STYLES
from .track import Track

_EMPTY = np.empty(0, dtype=np.int64)
#: before a segment's name: work carried in from before the window; it rests on an inferred dependency
CARRIED, INFERRED = "«", "~"


def _pct(part: float, whole: float) -> str:
    return share(part / whole).strip() if whole else ""


class _PathRows:
    """What the three views share: the path, the rank column of a job, the detail pane."""

    title = ""

    def __init__(self, cp: CriticalPath, namer: EventNamer, job: bool = False) -> None:
        self.cp = cp
        self.namer = namer
        self.job = job
        self.n = len(cp.segments)

    def _rank_cols(self, rank: int) -> list[str]:
        return [str(rank) if rank >= 0 else ""] if self.job else []

    def _rank_head(self) -> tuple[list[str], list[int]]:
        return (["Rank"], [4]) if self.job else ([], [])

    def parent_of(self, node: int) -> int:
        return -1

    def child_nodes(self, node: int) -> np.ndarray:
        return _EMPTY

    def segment_of(self, node: int) -> int:
        """The segment index of ``node`` (-1: a kind or name row, a slack row)."""
        return node if 0 <= node < self.n else -1

    def target(self, node: int) -> tuple[int, int] | None:
        """(rank, event) that Enter goes to from ``node``; None when it has none."""
        i = self.segment_of(node)
        if i < 0:
            return None
        e = row_event(self.cp.segments, i)
        return (int(self.cp.segments.rank[i]), e) if e >= 0 else None

    def segment_label(self, i: int) -> Text:
        s = self.cp.segments
        kind = KIND_NAMES[int(s.kind[i])]
        label = Text(style="dim" if s.carried[i] else KIND_STYLES[kind])  # the padding drawn alike
        if s.carried[i]:  # marks first: a long name is cut at the right
            label.append(CARRIED + " ")
        if s.inferred[i]:
            label.append(INFERRED + " ", style="yellow")
        label.append(one_line(shown(s.name[i])))
        return label

    def segment_columns(self, i: int) -> list[str]:
        s, cp = self.cp.segments, self.cp
        at = float(s.start_us[i]) - cp.window.start_us
        return [*self._rank_cols(int(s.rank[i])), "+" + units.format_duration_us(at) if at > 0 else "0",
                units.format_duration_us(float(s.dur_us[i])), _pct(float(s.dur_us[i]), cp.total_us),
                KIND_SHORT[KIND_NAMES[int(s.kind[i])]]]

    def sections(self, node: int | None, width: int | None = None) -> list[DetailSection]:
        if node is None or node < 0:
            return [DetailSection(None, [Text("Nothing selected.", style="dim")])]
        i = self.segment_of(node)
        if i >= 0:
            return segment_sections(self.cp, i, self.namer, self.job)
        return self.other_sections(node)

    def other_sections(self, node: int) -> list[DetailSection]:
        return []


class SegmentRows(_PathRows):
    """The segments in time order."""

    title = "segments in time order"

    def root_nodes(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.int64)

    def row_label(self, node: int) -> Text:
        return self.segment_label(node)

    def row_columns(self, node: int) -> list[str]:
        return self.segment_columns(node)

    def column_headers(self) -> list[str]:
        return [*self._rank_head()[0], "At", "Time", "Share", "Kind"]

    def column_widths(self) -> list[int]:
        return [*self._rank_head()[1], 8, 7, 6, 7]

    def node_weight(self, node: int) -> float:
        return float(self.cp.segments.dur_us[node])


class KindRows(_PathRows):
    """Kinds (largest first) > names (largest first) > their segments in time order."""

    title = "by kind"

    def __init__(self, cp: CriticalPath, namer: EventNamer, job: bool = False) -> None:
        super().__init__(cp, namer, job)
        s = cp.segments
        self.kinds = [KIND_NAMES.index(k) for k, _us, _f in cp.breakdown()]
        self.kind_us = cp.by_kind_us
        keys: dict[tuple[int, str], int] = {}
        group = np.empty(self.n, dtype=np.int64)
        for i, (k, name) in enumerate(zip(s.kind.tolist(), s.name)):
            group[i] = keys.setdefault((k, name), len(keys))
        self.group_key = list(keys)
        self.group_us = np.bincount(group, weights=s.dur_us, minlength=len(keys)) if self.n else np.zeros(0)
        self.group_count = np.bincount(group, minlength=len(keys)) if self.n else _EMPTY
        order = np.argsort(group, kind="stable")  # segments of each group, in time order
        self._members = np.split(order, np.cumsum(self.group_count)[:-1]) if self.n else []
        self.group_of = group
        g_kind = np.array([k for k, _ in self.group_key], dtype=np.int64)
        self._groups_of_kind = {k: self._by_time(np.flatnonzero(g_kind == k)) for k in self.kinds}

    def _by_time(self, groups: np.ndarray) -> np.ndarray:
        return groups[np.argsort(-self.group_us[groups], kind="stable")]

    # node ids: segments 0..n-1, kinds n + k, name groups n + len(KIND_NAMES) + g
    def _kind_node(self, k: int) -> int:
        return self.n + k

    def _group_node(self, g: int) -> int:
        return self.n + len(KIND_NAMES) + g

    def _decode(self, node: int) -> tuple[str, int]:
        if node < self.n:
            return "segment", node
        if node < self.n + len(KIND_NAMES):
            return "kind", node - self.n
        return "group", node - self.n - len(KIND_NAMES)

    def kind_node(self, kind: str) -> int:
        return self._kind_node(KIND_NAMES.index(kind))

    def group_node_of(self, i: int) -> int:
        """The name row holding segment ``i``."""
        return self._group_node(int(self.group_of[i]))

    def root_nodes(self) -> np.ndarray:
        return np.array([self._kind_node(k) for k in self.kinds], dtype=np.int64)

    def child_nodes(self, node: int) -> np.ndarray:
        what, x = self._decode(node)
        if what == "kind":
            return self._groups_of_kind.get(x, _EMPTY) + self.n + len(KIND_NAMES)
        if what == "group":
            return self._members[x].astype(np.int64)
        return _EMPTY

    def parent_of(self, node: int) -> int:
        what, x = self._decode(node)
        if what == "segment":
            return self.group_node_of(x)
        if what == "group":
            return self._kind_node(self.group_key[x][0])
        return -1

    def row_label(self, node: int) -> Text:
        what, x = self._decode(node)
        if what == "segment":
            return self.segment_label(x)
        if what == "kind":
            return Text(KIND_NAMES[x], style=f"bold {KIND_STYLES[KIND_NAMES[x]]}")
        k, name = self.group_key[x]
        label = Text(one_line(shown(name)), style=KIND_STYLES[KIND_NAMES[k]])
        label.append(f" ×{int(self.group_count[x]):,}", style="dim")
        return label

    def row_columns(self, node: int) -> list[str]:
        what, x = self._decode(node)
        if what == "segment":
            return self.segment_columns(x)
        us = self.kind_us[KIND_NAMES[x]] if what == "kind" else float(self.group_us[x])
        kind = KIND_NAMES[x] if what == "kind" else KIND_NAMES[self.group_key[x][0]]
        return [*self._rank_cols(-1), "", units.format_duration_us(us), _pct(us, self.cp.total_us), KIND_SHORT[kind]]

    def column_headers(self) -> list[str]:
        return [*self._rank_head()[0], "At", "Time", "Share", "Kind"]

    def column_widths(self) -> list[int]:
        return [*self._rank_head()[1], 8, 7, 6, 7]

    def node_weight(self, node: int) -> float:
        what, x = self._decode(node)
        if what == "segment":
            return float(self.cp.segments.dur_us[x])
        return self.kind_us[KIND_NAMES[x]] if what == "kind" else float(self.group_us[x])

    def other_sections(self, node: int) -> list[DetailSection]:
        what, x = self._decode(node)
        if what == "kind":
            groups = self._groups_of_kind.get(x, _EMPTY)
            top = [(self.group_key[g][1], float(self.group_us[g]), int(self.group_count[g])) for g in groups[:8]]
            return kind_sections(self.cp, KIND_NAMES[x], int(self.group_count[groups].sum()), top)
        k, name = self.group_key[x]
        members = self._members[x]
        return group_sections(self.cp, KIND_NAMES[k], name, members)


class SlackRows(_PathRows):
    """Ops and GPU events of the window off the path, least slack first."""

    title = "nearly critical (least slack)"

    def __init__(self, cp: CriticalPath, namer: EventNamer, job: bool = False) -> None:
        super().__init__(cp, namer, job)
        t = cp.slack
        if t is None:
            self.rows = _EMPTY
        else:
            off = np.flatnonzero(t.slack_us > 0)
            self.rows = off[np.lexsort((t.start_us[off], t.slack_us[off]))]

    def segment_of(self, node: int) -> int:
        return -1

    def target(self, node: int) -> tuple[int, int] | None:
        if not 0 <= node < self.rows.size:
            return None
        j = int(self.rows[node])
        return int(self.cp.slack.rank[j]), int(self.cp.slack.event[j])

    def root_nodes(self) -> np.ndarray:
        return np.arange(self.rows.size, dtype=np.int64)

    def row_label(self, node: int) -> Text:
        t = self.cp.slack
        j = int(self.rows[node])
        style = "green" if t.what[j] in ("kernel", "memcpy", "memset") else "cyan"
        return Text(one_line(shown(t.name[j])), style=style)

    def row_columns(self, node: int) -> list[str]:
        t = self.cp.slack
        j = int(self.rows[node])
        return [*self._rank_cols(int(t.rank[j])), units.format_duration_us(float(t.slack_us[j])),
                units.format_duration_us(float(t.dur_us[j])), t.what[j][:8]]

    def column_headers(self) -> list[str]:
        return [*self._rank_head()[0], "Slack", "Time", "What"]

    def column_widths(self) -> list[int]:
        return [*self._rank_head()[1], 7, 7, 8]

    def node_weight(self, node: int) -> float:
        return float(self.cp.slack.dur_us[int(self.rows[node])])

    def other_sections(self, node: int) -> list[DetailSection]:
        if not 0 <= node < self.rows.size:
            return []
        return slack_sections(self.cp, int(self.rows[node]), self.job)


#: the views of the path screen, in the order ``v`` cycles through them
VIEWS: tuple[type[_PathRows], ...] = (SegmentRows, KindRows, SlackRows)


def path_tracks(cp: CriticalPath) -> list[Track]:
    """One timeline row per kind of time on the path (largest first): where the path was
    that kind of time (µs, the path's clock)."""
    s = cp.segments
    out = []
    for kind, _us, _f in cp.breakdown():
        i = np.flatnonzero(s.kind == KIND_NAMES.index(kind))
        out.append(Track(KIND_SHORT[kind], s.start_us[i], s.start_us[i] + s.dur_us[i]))
    return out


def header_lines(cp: CriticalPath, job: bool) -> list[Text]:
    """The screen's head: what the path is, its breakdown by kind, carried-in time and, in a
    job, where it crosses ranks."""
    w = cp.window
    head = Text(f"Critical path of {one_line(shown(w.name))} ({w.kind}): ", style="bold")
    head.append(f"{units.format_duration_us(cp.total_us)} from the window start to the end of its last event")
    parts = Text()
    for n, (kind, us, frac) in enumerate(cp.breakdown()):
        if n:
            parts.append(" · ", style="dim")
        parts.append(kind, style=KIND_STYLES[kind])
        parts.append(f" {units.format_duration_us(us)} {share(frac).strip()}")
    lines = [head, parts]
    for c in cp.crossings if job else []:
        lines.append(Text(one_line(f"crosses to rank {c['to_rank']} at {c['collective']}: it arrived last, "
                                   f"{units.format_duration_us(c['waited_us'])} after rank {c['from_rank']}"),
                          style="yellow"))
    if cp.carried_in_us > 0:
        lines.append(Text(f"the first {units.format_duration_us(cp.carried_in_us)} ran work queued before the "
                          f"window (carried in: {CARRIED})", style="dim"))
    if cp.segments.inferred.any():
        lines.append(Text(f"{INFERRED} rests on an inferred dependency (no trace record says so)", style="dim"))
    return lines


__all__ = ["VIEWS", "EventNamer", "KindRows", "SegmentRows", "SlackRows", "header_lines", "path_tracks"]
