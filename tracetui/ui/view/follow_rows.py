"""What the follow screen shows of the cycles (docs/follow.md), free of Textual: the table's
columns and cells (:func:`cycle_table`), the lines under it about the cycle under the cursor
(:func:`cycle_detail`), the title line (:func:`follow_title`).

A row per trace read, in the order read: its cycle (``rank:cycle`` or ``worker:cycle`` when the
folder holds several series), when it was written after the first one, its mean step time, the
step time's change against the previous and the first cycle of its series, GPU busy, the findings
(errors/warnings/infos) and the top kernel (without ``void`` and its parameter list; in full
below the table).  Trace text goes through
:func:`~tracetui.errors.one_line`.
"""

from __future__ import annotations

from typing import Any

from ... import units
from ...errors import one_line
from ...follow.cycle import kernel_short
from .table_fit import Column

#: the columns; the top kernel is the name (it gets the room first: :mod:`.table_fit`)
COLUMNS: tuple[Column, ...] = (
    Column("cycle"), Column("at", True, drop=1), Column("step", True), Column("Δ prev", True),
    Column("Δ first", True, drop=2), Column("GPU busy", True, "busy"), Column("E/W/I", True, drop=3),
    Column("top kernel", name=True),
)


def _pct(p: float | None) -> str:
    return "" if p is None else units.pct_text(p, "+.1f")


def _elapsed(ns: int) -> str:
    """``+m:ss`` (``+h:mm:ss`` from an hour) after the first cycle."""
    s = max(ns, 0) // 1_000_000_000
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"+{h}:{m:02d}:{sec:02d}" if h else f"+{m}:{sec:02d}"


def cycle_label(c: Any, several: bool) -> str:
    """``3``, or ``r1:3`` / ``host_7:3`` when the folder holds several series."""
    if not several:
        return str(c.number)
    who = f"r{c.numbers.rank}" if c.numbers.rank is not None else (c.series or "-")
    return one_line(f"{who}:{c.number}")


def cycle_cells(c: Any, first_ns: int, several: bool) -> list[str]:
    """The cells of cycle ``c``'s row (``first_ns``: when the first cycle was written)."""
    n = c.numbers
    f = n.findings
    return [cycle_label(c, several), _elapsed(c.written_ns - first_ns), units.duration_text(n.step_us),
            _pct(c.vs("previous")), _pct(c.vs("first")),
            "" if n.gpu_busy_pct is None else units.pct_text(n.gpu_busy_pct),
            f"{f.get('error', 0)}/{f.get('warning', 0)}/{f.get('info', 0)}", one_line(kernel_short(n.top_kernel or ""))]


def cycle_table(cycles: list[Any]) -> tuple[list[Column], list[list[str]]]:
    """(columns, cells) of the table of ``cycles`` (the table lays them out in its width)."""
    several = len({c.series for c in cycles}) > 1
    first_ns = min((c.written_ns for c in cycles), default=0)
    return list(COLUMNS), [cycle_cells(c, first_ns, several) for c in cycles]


def cycle_detail(c: Any | None, marked: Any | None = None) -> list[str]:
    """Lines about cycle ``c`` (None: none read yet): its file, its numbers, its change against
    the previous cycle (the diff engine's), the cycle marked for ``d``."""
    if c is None:
        return ["no trace read yet: each trace is read once it is complete (Enter opens one, d d diffs two)"]
    n = c.numbers
    who = f"cycle {c.number}" + (f" of {c.series}" if c.series else "") + (
        f", rank {n.rank}" if n.rank is not None else "")
    f = ", ".join(f"{v} {k}" for k, v in n.findings.items())
    busy = f"GPU busy {units.pct_text(n.gpu_busy_pct)}" if n.gpu_busy_pct is not None else "no GPU work"
    lines = [f"{c.name}  ({who})",
             f"{units.duration_text(n.step_us)} per step over {units.plural(n.steps, 'step')} ({n.steps_found}); "
             f"{busy}; findings: {f}" + (f"; {units.plural(n.load_warnings, 'load warning')}"
                                          if n.load_warnings else "")]
    ch = c.change
    if ch is not None and "error" in ch:
        lines.append(f"vs previous: could not compare ({ch['error']})")
    elif ch is not None:
        st, gpu = ch["step_time"], ch["gpu_time_per_step"]
        text = (f"vs previous: step {units.duration_text(st['a_us'])} → {units.duration_text(st['b_us'])} "
                f"({_pct(st['delta_pct']) or 'new'}), GPU/step {units.duration_text(gpu['a_us'])} → "
                f"{units.duration_text(gpu['b_us'])} ({_pct(gpu['delta_pct']) or 'new'})")
        big = ch.get("largest_change")
        if big:
            text += f"; largest change: {big['path'][-1]} {units.duration_text(big['delta_gpu_us'])} GPU"
        lines.append(text)
    if n.top_kernel is not None:
        lines.append(f"top kernel: {kernel_short(n.top_kernel)} ({units.duration_text(n.top_kernel_us)})")
    if marked is not None:
        lines.append(f"d: cycle {marked.number} marked as A; d on another cycle opens the diff (Esc: unmark)")
    return [one_line(x) for x in lines]


def follow_title(folder: str, interval: float, cycles: int, waiting: int) -> str:
    """The line above the table: what was read, what waits, what is followed and how often (the
    folder last: a narrow screen cuts it)."""
    wait = f", {units.plural(waiting, 'file')} being written" if waiting else ""
    every = units.s_text(interval)
    return one_line(f"{units.plural(cycles, 'trace')} read{wait} · following {folder} (a look every {every})")
