"""The op tree as the browser shows it: a :class:`~tracetui.ui.tree.virtual_tree.RowSource` over a
:class:`~tracetui.session.LinkedTrace`.

Node ids seen by the tree:

* ``0 .. kt.n_nodes-1``: Kineto nodes (events, then one root per lane), as in
  :class:`~tracetui.kineto.trace.KinetoTrace`;
* ``et_root`` (``kt.n_nodes``, only with both an ET and a Kineto trace): the synthetic
  "ET-only ops" root, whose children are the ET thread roots holding ET ops that have no
  Kineto event;
* ``et_base + pos`` for the ET node at position ``pos`` (``et_base`` is ``kt.n_nodes + 1``,
  or 0 when only an ET is loaded, in which case the ET tree is the whole tree).

Everything per node is a numpy array computed once (GPU time and kernel count of each
subtree, preorder numbering); nothing is built per event.  Times are microseconds.
This module does not import textual.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text

from ...analysis.search import compile_query, et_name_matches, kineto_name_matches
from ...driver.facts import driver_of, linked_gpu_events
from ...driver.trace import NO_VALUE
from ...kineto.kinds import GPU_WORK_KINDS, Kind
from ...kineto.rollup import subtree_gpu_totals
from ...session import LinkedTrace
from ...tree.preorder import tree_preorder
from ...tree.propagate import ancestors_mask
from ...units import compact_count, format_duration_us
from .label_short import name_text, shorten_label
from .path_marks import PATH_HEADER, PATH_WIDTH, PathMarks

#: Rich style of a row label, by event kind (names are never parsed as markup).
KIND_STYLES: dict[Kind, str] = {
    Kind.OTHER: "grey62",
    Kind.PYTHON: "grey62",
    Kind.ANNOTATION: "bold magenta",
    Kind.CPU_OP: "cyan",
    Kind.RUNTIME: "yellow",
    Kind.DRIVER: "yellow",
    Kind.SYNC: "red",
    Kind.KERNEL: "green",
    Kind.MEMCPY: "bright_blue",
    Kind.MEMSET: "bright_blue",
    Kind.GPU_ANNOTATION: "magenta",
    Kind.INSTANT: "grey50",
    Kind.TRACE_SPAN: "grey50",
    Kind.OVERHEAD: "grey50",
    Kind.TRACED_CALL: "yellow",
    Kind.IOCTL: "dark_orange",
    Kind.RECORD: "grey70",
    Kind.PHASE: "bold magenta",
}
LANE_STYLE = "bold"
ET_STYLE = "italic bright_cyan"
ET_ONLY_STYLE = "italic grey70"
ET_ROOT_STYLE = "bold italic"
ET_ROOT_LABEL = "ET-only ops"

_GPU_WORK = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.uint8)


def id_column_width(values: np.ndarray, *, marks: int = 0, minimum: int = 7) -> int:
    """Cells that fit every integer of ``values`` printed in full plus ``marks`` extra
    characters (e.g. the ``~`` of a heuristic link), and at least ``minimum``."""
    if not values.size:
        return minimum
    lo, hi = int(values.min()), int(values.max())
    return max(minimum, len(str(lo)) + marks, len(str(hi)) + marks)


class TraceRowSource:
    """The op tree of a :class:`LinkedTrace` for :class:`~tracetui.ui.tree.virtual_tree.VirtualTree`.

    Columns: wall duration, GPU time of the subtree (summed kernel/memcpy/memset
    durations), GPU event count; with both traces, the linked ET node id (``~`` marks a
    heuristic link) and its rf_id.  ``hide_python`` hides python_function rows (their
    children move up); ``set_filter`` keeps only the subtrees holding given nodes.
    """

    def __init__(self, linked: LinkedTrace) -> None:
        self.linked = linked
        self.kt = kt = linked.kineto
        self.et = et = linked.et
        self.link = linked.link
        self.hide_python = True
        self._filter_k: np.ndarray | None = None
        self._filter_e: np.ndarray | None = None
        self._filter_root = True
        self.n_k = kt.n_nodes if kt is not None else 0
        self.et_root = self.n_k if (kt is not None and et is not None) else -1
        self.et_base = self.n_k + 1 if kt is not None else 0
        if kt is not None:
            self.gpu_time, self.gpu_count = subtree_gpu_totals(kt)
            self.order = kt.order
            self.gpu_work = np.zeros(self.n_k, dtype=bool)
            self.gpu_work[: kt.n_events] = np.isin(kt.kind, _GPU_WORK)
            self.is_python = np.zeros(self.n_k, dtype=bool)
            self.is_python[: kt.n_events] = kt.kind == int(Kind.PYTHON)
            self.weight = np.zeros(self.n_k, dtype=np.float64)
            self.weight[: kt.n_events] = kt.dur
            self._roots = np.array([lane.node for lane in kt.lanes], dtype=np.int64)
            if self._roots.size:
                kt.nopy_children(int(self._roots[0]))  # build the python-hidden CSR now, off the UI thread
        if et is not None:
            self.et_order = tree_preorder(et.parent, et.depth, et.child_start, et.child_index, et.roots())
            self._et_rows = self._et_listed_roots() if kt is not None else np.asarray(et.roots(), dtype=np.int64)
            self.et_visible = self.et_order.in_subtrees(self._et_rows)
        self.et_link_k = self.link.kineto_to_et if self.link is not None else None
        #: a trace linked to a driver-call trace: the nodes of the driver part (events, lanes),
        #: whose GPU events are those of the linked runtime calls (driver_facts.linked_gpu_events)
        self.driver_nodes = self._driver_nodes()
        #: driver calls and ioctls that returned an error (their row says so, in red)
        self.driver_errors = self._driver_errors()
        self._gpu_cache: dict[int, np.ndarray] = {}
        self._et_widths: list[int] | None = None
        self._depths: dict[str, np.ndarray] = {}
        #: the trace has python_function rows (``.`` hides/shows them)
        self.has_python = bool(kt is not None and self.is_python.any())
        #: ``>``/``<`` have somewhere to go: GPU events, or driver calls linked to runtime calls
        self.has_jumps = bool(kt is not None and (kt.gpu_stats.gpu_events or self.driver_nodes is not None))
        #: a computed critical path (``P``): its Path column comes first (:class:`~.path_marks.PathMarks`)
        self.path: PathMarks | None = None

    def _driver_nodes(self) -> np.ndarray | None:
        drv = driver_of(self.kt)
        if drv is None or drv.link is None:
            return None
        out = np.zeros(self.n_k, dtype=bool)
        out[drv.first:drv.first + drv.n_driver] = True
        lanes = np.unique(drv.lane_of[drv.first:drv.first + drv.n_driver])
        out[drv.n_events + lanes[lanes >= 0]] = True
        return out

    def _driver_errors(self) -> dict[int, int]:
        drv = driver_of(self.kt)
        if drv is None:
            return {}
        bad = np.flatnonzero((drv.retval != NO_VALUE) & (drv.retval != 0))
        return dict(zip((bad + drv.first).tolist(), drv.retval[bad].tolist()))

    # ------------------------------------------------------------------ ET helpers
    def _et_listed_roots(self) -> np.ndarray:
        """ET thread roots holding at least one ET op without a Kineto event."""
        et, link = self.et, self.link
        roots = np.asarray(et.thread_roots(), dtype=np.int64)
        if link is None or not roots.size:
            return roots[:0]
        unlinked = (link.et_to_kineto < 0) & ~et.structural_mask()
        cs = np.concatenate(([0], np.cumsum(unlinked[self.et_order.by_pre])))
        p = self.et_order.pre[roots]
        counts = cs[p + self.et_order.size[roots]] - cs[p]
        self.et_only_counts = dict(zip(roots.tolist(), counts.tolist()))
        return roots[counts > 0]

    def is_kineto(self, node: int) -> bool:
        return 0 <= node < self.n_k

    def et_pos(self, node: int) -> int:
        """ET position of a tree node: ET rows directly, Kineto rows through the link; -1 none."""
        if self.et is None:
            return -1
        if node >= self.et_base and node != self.et_root:
            return node - self.et_base
        if self.is_kineto(node) and self.et_link_k is not None and node < self.kt.n_events:
            return int(self.et_link_k[node])
        return -1

    def kineto_of(self, node: int) -> int:
        """The Kineto node of a tree node (an ET row through the link); -1 none."""
        if self.is_kineto(node):
            return node
        pos = self.et_pos(node)
        if pos >= 0 and self.link is not None:
            return int(self.link.et_to_kineto[pos])
        return -1

    # ------------------------------------------------------------------ RowSource
    def root_nodes(self) -> np.ndarray:
        out = []
        if self.kt is not None:
            roots = self._roots
            if self._filter_k is not None:
                roots = roots[self._filter_k[roots]]
            out.append(roots)
            if self.et_root >= 0 and self._et_rows.size and self._filter_root:
                out.append(np.array([self.et_root], dtype=np.int64))
        elif self.et is not None:
            rows = self._et_rows
            if self._filter_e is not None:
                rows = rows[self._filter_e[rows]]
            out.append(rows + self.et_base)
        return np.concatenate(out) if out else np.empty(0, dtype=np.int64)

    def child_nodes(self, node: int) -> np.ndarray:
        if self.is_kineto(node):
            kt = self.kt
            kids = kt.nopy_children(node) if self.hide_python else kt.children(node)
            if self._filter_k is not None:
                kids = kids[self._filter_k[kids]]
            return kids
        if node == self.et_root:
            rows = self._et_rows
            if self._filter_e is not None:
                rows = rows[self._filter_e[rows]]
            return rows + self.et_base
        pos = node - self.et_base
        kids = self.et.children(pos)
        if self._filter_e is not None:
            kids = kids[self._filter_e[kids]]
        return kids.astype(np.int64) + self.et_base

    def subtree_rows(self, node: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Every row below ``node`` with all of it expanded, in display order, and their depths
        below it (1: its children): one slice of the Kineto tree's preorder, python rows left
        out while hidden (their children sit where they were).  None while a filter hides rows,
        or for an ET row: the tree then expands node by node (the ``RowSource`` protocol's
        optional shortcut)."""
        kt = self.kt
        if kt is None or not self.is_kineto(node) or self._filter_k is not None:
            return None
        below = kt.order.subtree(node)[1:]
        if self.hide_python:
            below = below[~self.is_python[below]]
        depth = self._row_depth()
        return below, (depth[below] - depth[node]).astype(np.int32)

    def _row_depth(self) -> np.ndarray:
        """Depth of every Kineto node as the tree shows it (python rows hidden or not)."""
        key = "nopy" if self.hide_python else "all"
        got = self._depths.get(key)
        if got is None:
            kt = self.kt
            depth = kt.depth[: self.n_k].astype(np.int64)
            if self.hide_python:  # less one per python ancestor: a level at a time, top down
                parent = kt.parent[: self.n_k].astype(np.int64)
                above = np.zeros(self.n_k, dtype=np.int64)
                order = np.argsort(depth, kind="stable")
                levels = np.split(order, np.flatnonzero(np.diff(depth[order])) + 1)
                for level in levels:
                    p = parent[level]
                    ok = p >= 0
                    above[level[ok]] = above[p[ok]] + self.is_python[p[ok]]
                depth = depth - above
            got = self._depths[key] = depth
        return got

    def parent_of(self, node: int) -> int:
        if self.is_kineto(node):
            arr = self.kt.nopy_parent if self.hide_python else self.kt.parent
            return int(arr[node])
        if node == self.et_root:
            return -1
        pos = node - self.et_base
        if self.kt is not None and pos in self._et_row_set():
            return self.et_root
        p = int(self.et.parent[pos])
        return p + self.et_base if p >= 0 else -1

    def _et_row_set(self) -> set[int]:
        s = getattr(self, "_et_rows_cache", None)
        if s is None:
            s = self._et_rows_cache = set(self._et_rows.tolist())
        return s

    def row_label(self, node: int) -> Text:
        if self.is_kineto(node):
            kt = self.kt
            if node >= kt.n_events:
                return name_text(kt.name(node), LANE_STYLE)
            label = name_text(kt.name(node), KIND_STYLES.get(Kind(int(kt.kind[node])), ""))
            if node in self.driver_errors:
                label.append(f"  ✗ {self.driver_errors[node]}", style="bold red")
            return label
        if node == self.et_root:
            return Text(ET_ROOT_LABEL, style=ET_ROOT_STYLE)
        pos = node - self.et_base
        name = self.et.name(pos)
        if self.kt is not None and pos in self._et_row_set():
            label = Text(f"ET thread {int(self.et.tid[pos])} ", style=ET_ROOT_STYLE)
            label.append(f"({self.et_only_counts.get(pos, 0):,} ET-only ops)", style="dim")
            return label
        linked = self.link is not None and int(self.link.et_to_kineto[pos]) >= 0
        return name_text(name, ET_STYLE if linked or self.kt is None else ET_ONLY_STYLE)

    def short_label(self, label: Text, cells: int) -> Text:
        """The row label drawn in ``cells`` cells when it does not fit: long known name
        prefixes abbreviated (:mod:`~tracetui.ui.view.label_short`); search and the detail
        pane keep the full name."""
        return shorten_label(label, cells)

    def column_headers(self) -> list[str]:
        heads = [PATH_HEADER] if self.path is not None else []
        if self.kt is not None:  # time and count of the device work under a row (GPU or device events)
            word = "Dev" if self.kt.device_word() == "device" else "GPU"
            heads += ["Wall", word, f"#{word}"]
        if self.et is not None:
            heads += ["ET id", "rf_id"]
        return heads

    def column_widths(self) -> list[int]:
        """Cells per column: fixed for the durations and counts (their formats never pass
        them), and for ET id / rf_id wide enough for the largest value in this trace (the
        ET id plus its ``~`` mark), so an id is never cut at the right edge."""
        widths = [PATH_WIDTH] if self.path is not None else []
        widths += [7, 7, 5] if self.kt is not None else []
        if self.et is not None:
            if self._et_widths is None:
                self._et_widths = [id_column_width(self.et.ids, marks=1), id_column_width(self.et.rf_id)]
            widths += self._et_widths
        return widths

    def row_columns(self, node: int) -> list[str]:
        kt = self.kt
        k = self.kineto_of(node)
        cols: list[str] = [self.path.column(k)] if self.path is not None else []
        if kt is not None:
            if k >= 0:
                wall = format_duration_us(float(kt.dur[k])) if k < kt.n_events else ""
                count = int(self.gpu_count[k])
                own = bool(self.gpu_work[k])
                gpu = format_duration_us(float(self.gpu_time[k])) if count else ""
                cols += [wall, gpu, compact_count(count) if count and not own else ""]
            else:
                cols += ["", "", ""]
        if self.et is not None:
            pos = self.et_pos(node)
            if pos >= 0 and node != self.et_root:
                heur = self.link is not None and bool(self.link.heuristic[pos])
                cols += [f"{int(self.et.ids[pos])}{'~' if heur else ''}", str(int(self.et.rf_id[pos]))]
            else:
                cols += ["", ""]
        return cols

    def node_weight(self, node: int) -> float:
        k = self.kineto_of(node)
        return float(self.weight[k]) if k >= 0 else 0.0

    def child_weights(self, node: int) -> np.ndarray:
        kids = self.child_nodes(node)
        if self.is_kineto(node):
            return self.weight[kids]
        return np.fromiter((self.node_weight(int(c)) for c in kids), np.float64, len(kids))

    # ------------------------------------------------------------------ view state
    def set_hide_python(self, hide: bool) -> None:
        self.hide_python = hide

    def visible_ancestor(self, node: int) -> int:
        """``node`` itself, or (python rows hidden) its nearest shown ancestor."""
        if self.is_kineto(node) and self.hide_python and node < self.kt.n_events and self.is_python[node]:
            return int(self.kt.nopy_parent[node])
        return node

    @property
    def filtered(self) -> bool:
        return self._filter_k is not None or self._filter_e is not None

    def set_filter(self, nodes: np.ndarray | None) -> None:
        """Show only the subtrees containing ``nodes`` (their ancestors, themselves and their
        descendants); None shows everything."""
        if nodes is None:
            self._filter_k = self._filter_e = None
            self._filter_root = True
            return
        nodes = np.asarray(nodes, dtype=np.int64)
        if self.kt is not None:
            seeds = nodes[nodes < self.n_k]
            self._filter_k = self.order.in_subtrees(seeds) | ancestors_mask(self.kt.parent, seeds)
        if self.et is not None:
            seeds = nodes[(nodes >= self.et_base)] - self.et_base
            self._filter_e = self.et_order.in_subtrees(seeds) | ancestors_mask(self.et.parent, seeds)
            self._filter_root = bool(self._filter_e[self._et_rows].any()) if self._et_rows.size else False

    # ------------------------------------------------------------------ search
    def tree_position(self, node: int) -> float:
        """Position of ``node`` in tree (preorder) order over all nodes, shown or not."""
        if self.is_kineto(node):
            return float(self.order.pre[node])
        base = float(self.order.by_pre.size) if self.kt is not None else 0.0
        if node == self.et_root:
            return base - 0.5
        return base + float(self.et_order.pre[node - self.et_base])

    def find(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, positions) of every node whose name matches ``query`` (the query language
        and the vectorised match are :mod:`tracetui.analysis.search`'s), in tree order,
        including rows inside collapsed subtrees.  Python rows are left out while hidden."""
        pred = compile_query(query)
        nodes: list[np.ndarray] = []
        positions: list[np.ndarray] = []
        kt = self.kt
        if kt is not None:
            cand = kineto_name_matches(kt, pred)
            ok = self.order.pre[cand] >= 0
            if self.hide_python:
                ok &= ~self.is_python[cand]
            cand = cand[ok]
            nodes.append(cand)
            positions.append(self.order.pre[cand].astype(np.float64))
        if self.et is not None:
            pos = et_name_matches(self.et, pred)
            pos = pos[self.et_visible[pos]]
            nodes.append(pos + self.et_base)
            base = float(self.order.by_pre.size) if kt is not None else 0.0
            positions.append(base + self.et_order.pre[pos].astype(np.float64))
        if not nodes:
            return np.empty(0, np.int64), np.empty(0)
        all_nodes = np.concatenate(nodes)
        all_positions = np.concatenate(positions)
        o = np.argsort(all_positions, kind="stable")
        return all_nodes[o], all_positions[o]

    # ------------------------------------------------------------------ GPU links
    def gpu_events(self, node: int) -> np.ndarray:
        """GPU work (kernels, memcpys, memsets) under a node, in start-time order; an ET row
        uses its linked Kineto event (``KinetoTrace.gpu_events_of``, remembered for the last
        few nodes: ``>`` asks again for each step); a node of a linked driver-call trace, the
        GPU work of the runtime calls its driver calls are linked to."""
        k = self.kineto_of(node)
        if k < 0:
            return np.empty(0, dtype=np.int64)
        cached = self._gpu_cache.get(k)
        if cached is not None:
            return cached
        if self.driver_nodes is not None and self.driver_nodes[k]:
            out = linked_gpu_events(self.kt, k, self.order.subtree(k))
        else:
            out = self.kt.gpu_events_of(k)
        out.flags.writeable = False
        if len(self._gpu_cache) >= 16:
            self._gpu_cache.pop(next(iter(self._gpu_cache)))
        self._gpu_cache[k] = out
        return out
