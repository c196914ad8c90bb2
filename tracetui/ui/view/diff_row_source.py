"""The merged tree of a diff as the browser shows it: a
:class:`~tracetui.ui.view.row_source.RowSource` over a :class:`~tracetui.diff.model.DiffTree`.

Node ids are the tree's rows (preorder: row 0 is the step row).  Columns, most important
first (the tree drops them from the right when narrow): Δ GPU time (B - A), Δ GPU % (of A;
``new`` when only B has GPU time, ``gone`` when only A), GPU time of A and of B (summed
durations of the kernels, memcpys and memsets under the op), GPU events of A and of B, how the
row was matched, host time of A and of B, Δ host time.  With several steps per side every
number is a per-step mean (:mod:`tracetui.diff.model`), so a count may be fractional.

A row only in B starts with ``[+]`` (bold green), a row only in A with ``[-]`` (red, struck
through), a paired op whose recorded input shapes changed with ``[~]`` (yellow): the mark says
it without colour.  Two view states: children by |Δ GPU time| (largest first) instead of in
time order (:meth:`DiffRowSource.set_sorted`), and only the rows whose GPU time grew, with the
path to them (:meth:`DiffRowSource.set_regressions_only`, :func:`tracetui.diff.views.regression_mask`).
Nothing is built per row until it is drawn.  Times are microseconds.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ... import units
from ...analysis.search import compile_query, kineto_name_matches
from ...diff.align import RowKind
from ...diff.model import MATCH_WORDS, DiffTree, Match
from ...diff.views import REGRESSION_MIN_PCT, REGRESSION_MIN_US, regression_mask, sorted_preorder, with_ancestors
from ...errors import one_line
from ...kineto.kinds import Kind
from ...names import shown
from ...units import compact_count, format_duration_us
from .label_short import shorten_label
from .trace_row_source import KIND_STYLES, LANE_STYLE

#: (header, cells) of the metric columns, most important first
COLUMNS = (("ΔGPU", 7), ("Δ%", 6), ("GPU A", 6), ("GPU B", 6), ("#GPU A", 6), ("#GPU B", 6), ("match", 7),
           ("Host A", 6), ("Host B", 6), ("ΔHost", 7))

ADDED_MARK, REMOVED_MARK, SHAPES_MARK = "[+] ", "[-] ", "[~] "
ADDED_STYLE, REMOVED_STYLE, SHAPES_STYLE = "bold green", "red strike", "yellow"
STEP_STYLE = "bold magenta"


def signed_duration(us: float) -> str:
    """``+12.3ms``, ``-812ns``, ``0``: a change of a duration in a narrow cell."""
    if us == 0 or not np.isfinite(us):
        return "0" if us == 0 else "?"
    return ("+" if us > 0 else "") + format_duration_us(us)


def short_pct(b: float, a: float) -> str:
    """The change from ``a`` to ``b`` in percent of ``a`` for a 6-cell column: ``+1.2%``,
    ``-35%``, ``150×`` (B over A, from 10,000 %), ``new`` (A is 0), ``gone`` (B is 0), ""
    when both are 0."""
    if a == 0:
        return "new" if b else ""
    if b == 0:
        return "gone"
    p = (b - a) * 100.0 / a
    if abs(p) >= 1e4:
        return f"{b / a:,.0f}×"
    return units.pct_text(p, "+.1f" if abs(p) < 10 else "+.0f")


def short_count(v: float) -> str:
    """A GPU event count (a per-step mean may be fractional): ``12``, ``12.5``, ``123k``."""
    if v == 0:
        return ""
    return compact_count(int(v)) if float(v).is_integer() else f"{v:.1f}"


class DiffRowSource:
    """The merged tree for :class:`~tracetui.ui.tree.virtual_tree.VirtualTree` (module docstring)."""

    def __init__(self, tree: DiffTree) -> None:
        self.tree = t = tree
        self.sorted = False
        self.regressions_only = False
        self._keep: np.ndarray | None = None
        self._positions: dict[bool, np.ndarray] = {}
        self._event_index: dict[str, np.ndarray] = {}
        self.weight = np.maximum(t.host_a, t.host_b)
        self.kinds = (self._kinds(t.a.linked.kineto, t.ev_a), self._kinds(t.b.linked.kineto, t.ev_b))
        grew = regression_mask(t, min_us=REGRESSION_MIN_US, min_pct=REGRESSION_MIN_PCT)
        self._n_regressions = int((grew & (t.kind == int(RowKind.OP))).sum())
        #: rows the regressions filter keeps: the regressions and their ancestors
        self.regressions = with_ancestors(t, grew)

    @staticmethod
    def _kinds(kt, ev: np.ndarray) -> np.ndarray:
        out = np.full(ev.size, -1, dtype=np.int64)
        ok = (ev >= 0) & (ev < kt.n_events)
        out[ok] = kt.kind[ev[ok]]
        return out

    # ------------------------------------------------------------------ RowSource
    def root_nodes(self) -> np.ndarray:
        return np.zeros(1 if self.tree.n_rows else 0, dtype=np.int64)

    def child_nodes(self, node: int) -> np.ndarray:
        kids = self.tree.children(node)
        if self._keep is not None:
            kids = kids[self._keep[kids]]
        if self.sorted and kids.size > 1:
            kids = kids[np.argsort(-np.abs(self.tree.d_gpu[kids]), kind="stable")]
        return kids

    def parent_of(self, node: int) -> int:
        return int(self.tree.parent[node])

    def row_label(self, node: int) -> Text:
        t = self.tree
        name = one_line(shown(t.name(node)))
        kind = int(t.kind[node])
        if kind == int(RowKind.STEP):
            return Text(name, style=STEP_STYLE)
        if kind == int(RowKind.THREAD):
            return Text(name, style=LANE_STYLE)
        if t.added[node]:
            return Text.assemble(ADDED_MARK, name, style=ADDED_STYLE)
        if t.removed[node]:
            return Text.assemble(REMOVED_MARK, (name, REMOVED_STYLE), style="red")
        k = int(self.kinds[0][node])
        style = KIND_STYLES.get(Kind(k), "") if k >= 0 else ""
        if t.shapes_changed[node]:
            return Text.assemble((SHAPES_MARK, SHAPES_STYLE), (name, style))
        return Text(name, style=style)

    def short_label(self, label: Text, cells: int) -> Text:
        return shorten_label(label, cells)

    def column_headers(self) -> list[str]:
        return [h for h, _ in COLUMNS]

    def column_widths(self) -> list[int]:
        return [w for _, w in COLUMNS]

    def row_columns(self, node: int) -> list[str]:
        t = self.tree
        ga, gb = float(t.gpu_a[node]), float(t.gpu_b[node])
        ha, hb = float(t.host_a[node]), float(t.host_b[node])
        has_a, has_b = bool(t.in_a[node]), bool(t.in_b[node])
        any_gpu = ga or gb
        return [
            signed_duration(gb - ga) if any_gpu else "",
            short_pct(gb, ga),
            format_duration_us(ga) if has_a and ga else "",
            format_duration_us(gb) if has_b and gb else "",
            short_count(float(t.gpu_n_a[node])),
            short_count(float(t.gpu_n_b[node])),
            MATCH_WORDS[Match(int(t.method[node]))],
            format_duration_us(ha) if has_a else "",
            format_duration_us(hb) if has_b else "",
            signed_duration(hb - ha) if has_a and has_b else "",
        ]

    def node_weight(self, node: int) -> float:
        return float(self.weight[node])

    def child_weights(self, node: int) -> np.ndarray:
        return self.weight[self.child_nodes(node)]

    # ------------------------------------------------------------------ view state
    def set_sorted(self, on: bool) -> None:
        """Children by |Δ GPU time| (largest first) instead of in time order."""
        self.sorted = on

    def set_regressions_only(self, on: bool) -> None:
        """Only the rows whose GPU time grew (by more than :data:`~tracetui.diff.views.REGRESSION_MIN_US` and
        :data:`~tracetui.diff.views.REGRESSION_MIN_PCT`), with their ancestors."""
        self.regressions_only = on
        self._keep = self.regressions if on else None

    @property
    def n_regressions(self) -> int:
        """Op rows whose GPU time grew (the rows the filter keeps, ancestors aside)."""
        return self._n_regressions

    def visible_ancestor(self, node: int) -> int:
        """``node``, or (filtered) its nearest ancestor the filter keeps."""
        keep = self._keep
        while keep is not None and node > 0 and not keep[node]:
            node = int(self.tree.parent[node])
        return node

    def is_shown(self, node: int) -> bool:
        return self._keep is None or bool(self._keep[node])

    def tree_position(self, node: int) -> float:
        """Position of ``node`` in the current display order (shown or not)."""
        pos = self._positions.get(self.sorted)
        if pos is None:
            order = sorted_preorder(self.tree) if self.sorted else np.arange(self.tree.n_rows)
            pos = np.empty(order.size, dtype=np.float64)
            pos[order] = np.arange(order.size)
            self._positions[self.sorted] = pos
        return float(pos[node])

    # ------------------------------------------------------------------ search
    def find(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, positions) of the rows whose name on either side matches ``query`` (the
        query language of :mod:`tracetui.analysis.search`), in display order, hidden rows
        left out."""
        rows = self._hits(query)
        if self._keep is not None:
            rows = rows[self._keep[rows]]
        positions = np.array([self.tree_position(int(r)) for r in rows], dtype=np.float64)
        order = np.argsort(positions, kind="stable")
        return rows[order], positions[order]

    def hidden_matches(self, query: str) -> int:
        """Rows matching ``query`` that the regressions filter hides (0 when it is off)."""
        if self._keep is None:
            return 0
        rows = self._hits(query)
        return int((~self._keep[rows]).sum())

    def _hits(self, query: str) -> np.ndarray:
        """Every row whose name on either side matches ``query``, shown or not."""
        pred = compile_query(query)
        t = self.tree
        hit = np.zeros(t.n_rows, dtype=bool)
        for side, ev in ((t.a, t.ev_a), (t.b, t.ev_b)):
            kt = side.linked.kineto
            names = np.zeros(kt.n_nodes, dtype=bool)
            names[kineto_name_matches(kt, pred)] = True
            ok = ev >= 0
            hit[ok] |= names[ev[ok]]
        return np.flatnonzero(hit)

    def rows_of_event(self, which: str, event: int) -> int:
        """The row of side ``which``'s ``event`` or of its nearest ancestor that has one
        (an event below the ops: a kernel, a runtime call; -1 when none)."""
        t = self.tree
        ev = t.ev_a if which == "a" else t.ev_b
        kt = t.side(which).linked.kineto
        index = self._event_rows(which, ev, kt.n_nodes)
        node = event
        while node >= 0:
            if index[node] >= 0:
                return int(index[node])
            node = int(kt.parent[node]) if node < kt.n_events else -1
        return -1

    def _event_rows(self, which: str, ev: np.ndarray, n: int) -> np.ndarray:
        cached = self._event_index.get(which)
        if cached is None:
            cached = np.full(n, -1, dtype=np.int64)
            ok = np.flatnonzero(ev >= 0)
            cached[ev[ok][::-1]] = ok[::-1]  # the first row of an event (step and op rows share one)
            self._event_index[which] = cached
        return cached
