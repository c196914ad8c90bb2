"""A plot of step series over time, without Textual: what :class:`~tracetui.ui.plot.plot_widget.PlotWidget`
draws, and what tests read.

A :class:`Series` is (x, y) numpy arrays: a step function, each y holding from its x to the
next (the memory timeline's semantics: bytes after each event), with the value before the
first x (``start``).  A :class:`PlotModel` draws any number of them over an x window on a grid
of ``width`` x ``height`` cells:

- each column shows the **highest** value of each series inside its span (so a peak is never
  lost between two columns, at any zoom);
- the first series is drawn as **filled bars** in eighths of a cell (``▁▂▃▄▅▆▇█``); every
  other series as a **line** at its level (``▔``, or the bar's top cell tinted);
- a **cursor** column (an x) is drawn over them (``│`` in empty cells, the bar's cells in the
  cursor style), and **marks** (an x and a one-letter glyph: the peak ``^``, an out-of-memory
  ``!``) on the axis row;
- the y axis is labelled with its top value and half of it in the series' unit (``y_text``:
  bytes by default, :func:`tracetui.units.bytes_rounded`), the x axis with the window's ends
  and the cursor in ms (:func:`tracetui.units.ms_text`) after ``x_origin``.

The y scale runs from 0 to the highest value of every series over the whole of their x (not
the window), so zooming never rescales the bars.  Issue 44 draws step times, GPU busy and job
arrivals with the same model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ... import units

#: eighths of a cell, bottom up (index 0: empty)
BLOCKS = " ▁▂▃▄▅▆▇█"
#: the glyph of a line series above the bars
LINE = "▔"
#: the cursor in an empty cell
CURSOR = "│"
#: cells of the y-axis labels, left of the chart (``999.9 MB │``)
Y_LABEL = 10


@dataclass(frozen=True)
class Series:
    """A step function: ``y[i]`` holds from ``x[i]`` to ``x[i + 1]`` (the last to the end of
    the data), ``start`` before ``x[0]``.  ``style``: the name the widget maps to a colour."""

    label: str
    x: np.ndarray
    y: np.ndarray
    start: float = 0.0
    style: str = "series"

    def cell_max(self, edges: np.ndarray) -> np.ndarray:
        """The highest value in each span ``edges[i]..edges[i + 1]`` (the held value counts)."""
        k0 = np.searchsorted(self.x, edges[:-1], side="right")
        held = np.where(k0 > 0, self.y[np.maximum(k0 - 1, 0)], self.start).astype(np.float64)
        k1 = np.searchsorted(self.x, edges[1:], side="left")
        inside = np.flatnonzero(k1 > k0)
        if inside.size:
            idx = np.empty(2 * inside.size, dtype=np.int64)
            idx[0::2], idx[1::2] = k0[inside], k1[inside]
            if idx[-1] >= self.y.size:
                idx = idx[:-1]
            # reduced in y's own dtype, only the per-cell maxima converted (a snapshot's history
            # has tens of millions of steps: converting y first copied it on every draw)
            held[inside] = np.maximum(held[inside], np.maximum.reduceat(self.y, idx)[0::2].astype(np.float64))
        return held

    @property
    def top(self) -> float:
        return float(max(self.y.max() if self.y.size else self.start, self.start))


@dataclass
class PlotModel:
    """Series over the x window ``lo``..``hi`` with a cursor and marks (module docstring)."""

    series: list[Series]
    lo: float
    hi: float
    cursor: float | None = None
    marks: list[tuple[float, str]] = field(default_factory=list)
    x_origin: float = 0.0  #: x of "0 ms" on the axis
    y_text: Callable[[float], str] = units.bytes_rounded

    @property
    def y_top(self) -> float:
        return max([s.top for s in self.series] + [1.0])

    def edges(self, width: int) -> np.ndarray:
        hi = self.hi if self.hi > self.lo else self.lo + 1.0
        return np.linspace(self.lo, hi, width + 1)

    def column_of(self, x: float, width: int) -> int | None:
        """The column of ``x`` (None: outside the window)."""
        if width <= 0 or not self.lo <= x <= max(self.hi, self.lo + 1.0):
            return None
        e = self.edges(width)
        return int(min(max(np.searchsorted(e, x, side="right") - 1, 0), width - 1))

    def levels(self, width: int, height: int) -> list[np.ndarray]:
        """Per series, each column's height in eighths of a cell (0 .. 8 x height)."""
        e = self.edges(width)
        top = self.y_top
        return [np.clip(np.ceil(s.cell_max(e) / top * 8 * height - 1e-9), 0, 8 * height).astype(np.int64)
                for s in self.series]

    def grid(self, width: int, height: int) -> list[list[tuple[str, str]]]:
        """The chart without axes: ``height`` rows (top first) of ``width`` (glyph, style) cells;
        styles: a series' ``style``, ``cursor``, or "" (empty)."""
        rows = [[(" ", "")] * width for _ in range(height)]
        if width <= 0 or height <= 0 or not self.series:
            return rows
        levels = self.levels(width, height)
        bars = levels[0]
        for k in range(height):  # k: cell row from the bottom
            row = rows[height - 1 - k]
            fill = np.clip(bars - 8 * k, 0, 8)
            for c in np.flatnonzero(fill).tolist():
                row[c] = (BLOCKS[fill[c]], self.series[0].style)
        for s, lv in zip(self.series[1:], levels[1:]):
            cell = np.where(lv > 0, (lv - 1) // 8, -1)
            for c in np.flatnonzero(cell >= 0).tolist():
                r = height - 1 - int(cell[c])
                glyph, style = rows[r][c]
                rows[r][c] = (LINE, s.style) if glyph == " " else (glyph, f"{style} on-{s.style}")
        col = self.column_of(self.cursor, width) if self.cursor is not None else None
        if col is not None:
            for row in rows:
                glyph, style = row[col]
                row[col] = (CURSOR, "cursor") if glyph == " " else (glyph, f"{style} cursor")
        return rows

    def axis(self, width: int) -> list[tuple[str, str]]:
        """The row under the chart: ``─`` with the marks' glyphs at their columns."""
        row = [("─", "axis")] * width
        for x, glyph in self.marks:
            c = self.column_of(x, width)
            if c is not None:
                row[c] = (glyph, "mark")
        c = self.column_of(self.cursor, width) if self.cursor is not None else None
        if c is not None and row[c][0] == "─":
            row[c] = ("┴", "cursor")
        return row

    def y_labels(self, height: int) -> list[str]:
        """Per row, the y label (the top row: the highest value; the middle: half of it; the
        bottom: 0), right-aligned in :data:`Y_LABEL` - 2 cells."""
        out = [""] * height
        if height:
            out[0] = self.y_text(self.y_top)
            out[-1] = self.y_text(0)
            if height >= 5:
                out[height // 2] = self.y_text(self.y_top * (height - height // 2 - 0.5) / height)
        return [s[: Y_LABEL - 2].rjust(Y_LABEL - 2) for s in out]

    def x_labels(self, width: int) -> str:
        """The window's ends (ms after ``x_origin``), fitted to ``width``."""
        left = units.ms_text((self.lo - self.x_origin) / 1e3)
        right = units.ms_text((self.hi - self.x_origin) / 1e3)
        gap = width - len(left) - len(right)
        return (left + " " * gap + right) if gap > 0 else left[:width]

    def lines(self, width: int, height: int) -> list[list[tuple[str, str]]]:
        """Everything as rows of (text, style): ``height`` chart rows with their y labels,
        the axis row and the x labels row (``width`` includes the labels)."""
        w = max(width - Y_LABEL, 0)
        grid, labels = self.grid(w, height), self.y_labels(height)
        out = [[(labels[i] + " │", "label"), *row] for i, row in enumerate(grid)]
        out.append([(" " * (Y_LABEL - 2) + " └", "axis"), *self.axis(w)])
        out.append([(" " * Y_LABEL, ""), (self.x_labels(w), "label")])
        return out

    def text(self, width: int, height: int) -> str:
        """The plot as plain text (tests)."""
        return "\n".join("".join(t for t, _ in row) for row in self.lines(width, height))
