"""The detail pane of the diff browser: a :class:`~.detail_section.DetailModel` over the merged
tree's rows (:class:`~.diff_row_source.DiffRowSource`).

For a row it shows what the row is and how it was matched, both sides' numbers with the
change (host time, GPU time, GPU events, own GPU time, own host time: A, B, Δ, Δ %; per-step
means when several steps are compared; the numbers' text is :mod:`tracetui.diff.numbers`'s,
as in ``tracetui diff --text``), and under an op which of its own kernels replaced which
(:func:`tracetui.diff.kernels.kernel_changes`: each side's grid, block, registers per thread
and duration).  :attr:`DiffDetail.side` ``"a"`` or ``"b"`` adds that side's event detail, the
single-trace browser's (:class:`~.trace_detail.TraceDetail`), below; None shows where each
side's event is instead.  Trace strings are ``Text``, never markup; times are microseconds.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...diff import numbers as fmt
from ...diff.align import RowKind
from ...diff.kernels import ADDED, REMOVED, REPLACED, SAME, KernelChange, KernelSide, kernel_changes
from ...diff.model import MATCH_WORDS, DiffTree, Match
from ...errors import one_line
from ...names import shown
from ...units import format_duration_us, format_time_us
from .detail_section import DetailSection, grid
from .diff_row_source import DiffRowSource, short_pct, signed_duration
from .keep_text import KeepText
from .trace_detail import TraceDetail

#: kernel changes listed under a row (the rest are counted)
MAX_KERNEL_CHANGES = 40

#: what each match method means (docs/diff.md, section 2)
MATCH_MEANING = {
    Match.STEP: "the two compared steps",
    Match.THREAD: "threads paired by name, else by the order of their first op",
    Match.ET: "same name, Execution Trace node ids at the same offset from the step's first",
    Match.SEQ: "backward ops whose forward ops (Sequence number) are paired",
    Match.SHAPES: "same path of names, order among siblings and input shapes",
    Match.NAME: "same path of names and order among siblings",
    Match.ADDED: "only in B",
    Match.REMOVED: "only in A",
}
_STATUS_STYLE = {SAME: "dim", REPLACED: "bold yellow", REMOVED: "bold red", ADDED: "bold green"}


def _numbers_table(tree: DiffTree, row: int) -> Table:
    """A, B, Δ and Δ % of the row's numbers (A or B empty where the side lacks the row), in
    the tree's short forms so the table fits a narrow pane."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    for col in ("", "A", "B", "Δ", "Δ %"):
        table.add_column(col, justify="left" if not col else "right", no_wrap=True)
    has_a, has_b = bool(tree.in_a[row]), bool(tree.in_b[row])
    is_op = int(tree.kind[row]) == int(RowKind.OP)
    rows: list[tuple[str, float, float, bool]] = [
        ("host", float(tree.host_a[row]), float(tree.host_b[row]), True),
        ("GPU", float(tree.gpu_a[row]), float(tree.gpu_b[row]), True),
        ("GPU events", float(tree.gpu_n_a[row]), float(tree.gpu_n_b[row]), False),
    ]
    if is_op:
        rows += [("own GPU", float(tree.self_gpu_a[row]), float(tree.self_gpu_b[row]), True),
                 ("own host", float(tree.self_host_a[row]), float(tree.self_host_b[row]), True)]
    for label, a, b, time in rows:
        text = format_duration_us if time else fmt.count
        delta = signed_duration if time else fmt.delta_count
        table.add_row(KeepText(label), KeepText(text(a) if has_a else ""), KeepText(text(b) if has_b else ""),
                      KeepText(delta(b - a) if has_a and has_b else ""),
                      KeepText(short_pct(b, a) if has_a and has_b else ""))
    table.keep_whole = True  # type: ignore[attr-defined]
    return table


def _launch(side: KernelSide) -> str:
    regs = f" · {side.registers:,.0f} registers" if side.registers is not None else ""
    grid_ = f"grid {side.grid}" if side.grid else "no grid"
    block = f" · block {side.block}" if side.block else ""
    return f"{grid_}{block}{regs}"


def kernel_lines(change: KernelChange) -> list[RenderableType]:
    """One kernel change as lines: the status and the durations, then each side's name and
    launch (grid, block, registers); a kernel the same on both sides is named once."""
    a, b = change.a, change.b
    head = KeepText(f"{change.status:<8}", style=_STATUS_STYLE[change.status])
    head.append(f" {fmt.us(a.dur_us) if a else '-'} → {fmt.us(b.dur_us) if b else '-'}")
    if a is not None and b is not None:
        head.append(f"  ({fmt.pct(b.dur_us, a.dur_us) or '0'})", style="dim")
    out: list[RenderableType] = [head]
    same_name = a is not None and b is not None and a.name == b.name
    for key, side in (("A", a), ("B", b)):
        if side is None or (same_name and key == "B"):
            continue
        line = KeepText("  " if same_name else f"  {key} ", style="bold")
        line.append(one_line(shown(side.name)), style="green")
        out.append(line)
        launch = _launch(side)
        if same_name and b is not None and _launch(b) != launch:
            launch = f"A {launch}; B {_launch(b)}"
        out.append(KeepText(f"    {launch}", style="dim"))
    return out


class DiffDetail:
    """The detail of one row of a :class:`DiffRowSource` (module docstring)."""

    def __init__(self, source: DiffRowSource, side_details: tuple[TraceDetail, TraceDetail]) -> None:
        self.src = source
        self.tree = source.tree
        self.side_details = side_details
        #: None: the comparison alone; "a" / "b": that side's event detail below it
        self.side: str | None = None

    def sections(self, node: int | None, width: int) -> list[DetailSection]:
        if node is None:
            return [DetailSection(None, [KeepText("Nothing selected.", style="dim")])]
        t = self.tree
        out = [self._head(node)]
        steps = (t.a.n_steps, t.b.n_steps)
        per = "per step" if steps == (1, 1) else f"per-step means of {steps[0]} and {steps[1]} steps"
        legend = KeepText("host: time on its thread; GPU: kernels, memcpys and memsets under it; own: not in an "
                          "op below", style="dim")
        out.append(DetailSection(f"A / B / Δ ({per})", [_numbers_table(t, node), legend]))
        if int(t.kind[node]) == int(RowKind.OP):
            out += self._kernels(node)
        if self.side is None:
            out.append(self._events(node))
        else:
            out += self._side_sections(node, self.side, width)
        return out

    def _head(self, row: int) -> DetailSection:
        t = self.tree
        label = self.src.row_label(row)
        label.overflow = "fold"
        kind = RowKind(int(t.kind[row]))
        method = Match(int(t.method[row]))
        what = {RowKind.STEP: "step", RowKind.THREAD: "thread", RowKind.OP: "op"}[kind]
        if t.added[row]:
            what += ": only in B (added)"
        elif t.removed[row]:
            what += ": only in A (removed)"
        rows: list[tuple[str, Any]] = []
        if kind != RowKind.STEP:
            path = [one_line(shown(t.name(r))) for r in t.path(row)[1:-1]]
            rows.append(("path", " › ".join(path[-4:]) if len(path) <= 4 else "… › " + " › ".join(path[-4:])))
        rows.append(("matched by", Text.assemble(MATCH_WORDS[method], (f" ({MATCH_MEANING[method]})", "dim"))))
        if t.shapes_changed[row]:
            rows.append(("input shapes", Text("changed (A and B recorded different shapes)", style="yellow")))
        if int(t.size[row]) > 1:
            rows.append(("rows below", f"{int(t.size[row]) - 1:,}"))
        return DetailSection(None, [label, KeepText(what, style="dim"), grid(rows)])

    def _kernels(self, row: int) -> list[DetailSection]:
        changes = kernel_changes(self.tree, row)
        if not changes:
            return []
        counts = {s: sum(1 for c in changes if c.status == s) for s in (SAME, REPLACED, REMOVED, ADDED)}
        summary = ", ".join(f"{n:,} {s}" for s, n in counts.items() if n)
        body: list[RenderableType] = [KeepText(summary, style="dim")]
        for change in changes[:MAX_KERNEL_CHANGES]:
            body += kernel_lines(change)
        if len(changes) > MAX_KERNEL_CHANGES:
            body.append(KeepText(f"… {len(changes) - MAX_KERNEL_CHANGES:,} more", style="dim"))
        return [DetailSection("Own kernels, A → B (launched by its own calls)", body)]

    def _events(self, row: int) -> DetailSection:
        t = self.tree
        rows: list[tuple[str, Any]] = []
        for key, which in (("A", "a"), ("B", "b")):
            ev = t.event(row, which)
            has = bool(t.in_a[row] if which == "a" else t.in_b[row])
            kt = t.side(which).linked.kineto
            if not has or ev < 0:
                rows.append((key, Text("no event on this side", style="dim")))
            elif ev < kt.n_events:
                rows.append((key, KeepText(f"event {ev} at +{format_time_us(float(kt.ts[ev]))}, "
                                           f"{format_duration_us(float(kt.dur[ev]))}, "
                                           f"{one_line(shown(kt.lanes[int(kt.lane_of[ev])].label))}")))
            else:
                rows.append((key, KeepText(one_line(shown(kt.name(ev))))))
        hint = KeepText("a / b: each side's event detail here; A / B: this op in A's / B's browser", style="dim")
        return DetailSection("Events (the template step's)", [grid(rows), hint])

    def _side_sections(self, row: int, which: str, width: int) -> list[DetailSection]:
        t = self.tree
        key = which.upper()
        ev = t.event(row, which)
        has = bool(t.in_a[row] if which == "a" else t.in_b[row])
        label = t.side(which).label
        title = f"{key}'s event" + (f" ({label})" if label != key else "")
        if not has or ev < 0:
            return [DetailSection(title, [KeepText(f"{key} has no event on this row", style="dim")])]
        inner = self.side_details[0 if which == "a" else 1].sections(ev, width)
        out = []
        for i, section in enumerate(inner):
            heading = title if i == 0 and section.heading is None else \
                f"{key} · {section.heading}" if section.heading else None
            out.append(DetailSection(heading, section.body))
        return out
