"""The plots of the summaries' Plots tab and the job screen, without Textual: each a
:class:`PlotView` that makes a :class:`~tracetui.ui.view.plot.PlotModel` for a chart width and
says what is under its cursor.

* :class:`StepPlot`: step time per step (host, bars) with the GPU time launched in each (a
  line); the slowest step marked ``^`` (:func:`tracetui.analysis.series.step_series`).
* :class:`BusyPlot`: GPU busy % over time of one device, one bin per column of the chart
  (:class:`tracetui.analysis.series.DeviceBusy`: the bins add up to the GPU timeline's busy).
* :class:`ArrivalPlot`: in a job, one rank's lateness at each collective (bars: its start after
  the first rank's) and the collective's start skew (a line: the last rank's lateness); ``^``
  where this rank arrived last; ↑/↓ pick the rank, the straggler first
  (:func:`tracetui.job.stragglers.lateness_matrix`).
* :class:`MemoryPlot`: one device's bytes allocated (bars) and reserved (a line) over the trace,
  each column the highest value inside its time (:func:`tracetui.analysis.memory.cell_max`, as
  the HTML report's figure); ``^`` at the allocated peak (the memory screen's, ``o`` there).

Every number is the one its table prints (tests/ui/test_ui_pictures.py compares them).  Keys (the
panel maps them): ←/→ move the cursor one position (a step, a bin, a collective), ↑/↓ the
variant (a rank), ``^`` the marked position, Enter the events under the cursor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.text import Text

from ... import units
from ...analysis.memory import Device, MemoryModel, timeline
from ...analysis.memory_peak import Peak
from ...analysis.series import DeviceBusy, StepSeries, busy_runs, step_series
from ...errors import one_line
from .plot import PlotModel, Series


@dataclass
class ChartModel(PlotModel):
    """A :class:`PlotModel` whose x axis is not time (``x_text``: the label of a position; the
    ends are ``lo`` and ``hi - 1``) or whose y axis has a fixed top (``y_max``: 100 %)."""

    x_text: Callable[[float], str] | None = None
    y_max: float | None = None

    @property
    def y_top(self) -> float:
        return self.y_max if self.y_max is not None else super().y_top

    def x_labels(self, width: int) -> str:
        if self.x_text is None:
            return super().x_labels(width)
        left, right = self.x_text(self.lo), self.x_text(max(self.hi - 1, self.lo))
        gap = width - len(left) - len(right)
        return (left + " " * gap + right) if gap > 0 else left[:width]


def _ms_label(ms: float) -> str:
    return units.duration_text(ms * 1e3)


def _pct_label(pct: float) -> str:
    return units.pct_text(pct, ".0f")


def _us_label(us: float) -> str:
    return units.duration_text(us)


class PlotView:
    """One plot of the panel: ``title``, cursor positions ``n`` (for a width), ``cursor``,
    ``variants`` (↑/↓) and what Enter gives (``events``)."""

    title = ""
    legend = ""  #: what the bars and lines are
    cursor = 0
    variant = 0
    variants: list[str] = []

    def positions(self, width: int) -> int:
        raise NotImplementedError

    def model(self, width: int) -> PlotModel:
        raise NotImplementedError

    def readout(self, width: int) -> Text:
        """What is under the cursor (``width``: the chart's columns, as for ``model``)."""
        raise NotImplementedError

    def peak(self, width: int) -> int:
        """The position ``^`` goes to."""
        return self.cursor

    def events(self, width: int) -> Any:
        """What Enter gives the screen (None: nothing under the cursor)."""
        return None


class StepPlot(PlotView):
    """Step time per step (module docstring)."""

    def __init__(self, steps: StepSeries) -> None:
        self.steps = steps
        self.title = "step time"
        self.legend = "bars: step time (host), line: GPU time"
        self.cursor = max(steps.slowest, 0)

    def positions(self, width: int) -> int:
        return self.steps.n

    def model(self, width: int) -> PlotModel:
        s = self.steps
        x = np.arange(s.n, dtype=np.float64)
        host = Series("step time", x, s.dur / 1e3, style="s0")
        gpu = Series("GPU time", x, s.gpu_us / 1e3, style="s1")
        marks = [(s.slowest + 0.5, "^")] if s.n else []
        return ChartModel([host, gpu], 0.0, float(max(s.n, 1)), cursor=self.cursor + 0.5, marks=marks,
                          y_text=_ms_label, x_text=self._label)

    def _label(self, x: float) -> str:
        i = int(x)
        return f"#{self.steps.numbers[i]}" if 0 <= i < self.steps.n else ""

    def readout(self, width: int) -> Text:
        s, i = self.steps, self.cursor
        if not s.n:
            return Text("no steps")
        t = Text()
        t.append(one_line(s.names[i]), style="bold")
        t.append(f" ({i + 1} of {s.n}): {units.duration_text(float(s.dur[i]))} host, "
                 f"{units.duration_text(float(s.gpu_us[i]))} GPU ({units.plural(int(s.gpu_events[i]), 'GPU event')})")
        if i == s.slowest:
            t.append("  ^ the slowest", style="bold")
        return t

    def peak(self, width: int) -> int:
        return max(self.steps.slowest, 0)

    def events(self, width: int) -> Any:
        e = int(self.steps.events[self.cursor]) if self.steps.n else -1
        if e < 0:
            return None
        return np.array([e], dtype=np.int64), one_line(self.steps.names[self.cursor]), None


class BusyPlot(PlotView):
    """GPU busy % over time of one device, a bin per column (module docstring)."""

    def __init__(self, runs: DeviceBusy, word: str = "GPU") -> None:
        self.runs = runs
        self.title = f"{word}{runs.device} busy"
        self.legend = "busy % of each column's time"
        self.word = word
        self.cursor = 0

    def edges(self, width: int) -> np.ndarray:
        lo, hi = self.runs.lo, self.runs.hi
        return np.linspace(lo, hi if hi > lo else lo + 1.0, max(width, 1) + 1)

    def positions(self, width: int) -> int:
        return max(width, 1)

    def model(self, width: int) -> PlotModel:
        e = self.edges(width)
        busy = Series("busy %", e[:-1], self.runs.busy_pct(e), style="s0")
        c = min(self.cursor, width - 1)
        return ChartModel([busy], float(e[0]), float(e[-1]), cursor=float((e[c] + e[c + 1]) / 2),
                          y_text=_pct_label, y_max=100.0)

    def readout(self, width: int) -> Text:
        e = self.edges(width)
        c = min(self.cursor, width - 1)
        a, b = float(e[c]), float(e[c + 1])
        busy = float(self.runs.busy_in(np.array([a, b]))[0])
        t = Text()
        t.append(f"{self.word}{self.runs.device} busy {units.pct_text(100.0 * busy / max(b - a, 1e-12))}", style="bold")
        t.append(f" from {units.ms_text(a / 1e3)} to {units.ms_text(b / 1e3)}")
        whole = self.runs.hi - self.runs.lo
        t.append(f"  (whole window: {units.pct_text(100.0 * self.runs.busy / whole if whole > 0 else 0.0)} "
                 f"of {units.duration_text(whole)})", style="dim")
        return t

    def peak(self, width: int) -> int:
        return int(np.argmax(self.runs.busy_pct(self.edges(width))))

    def events(self, width: int) -> Any:
        e = self.edges(width)
        c = min(self.cursor, width - 1)
        a, b = float(e[c]), float(e[c + 1])
        ev = self.runs.events_in(a, b)
        if not ev.size:
            return None
        return ev, f"{self.word}{self.runs.device} events from {units.ms_text(a / 1e3)} to {units.ms_text(b / 1e3)}", \
            None


class ArrivalPlot(PlotView):
    """One rank's lateness per collective, the start skew as a line (module docstring)."""

    def __init__(self, late: np.ndarray, last: list[int | None], ranks: list[int], names: list[str],
                 first_rank: int | None = None) -> None:
        self.late, self.last, self.ranks, self.names = late, last, ranks, names
        self.title = "arrivals"
        self.legend = "bars: this rank's lateness, line: the start skew, ^: last"
        self.variants = [f"rank {r}" for r in ranks]
        self.variant = ranks.index(first_rank) if first_rank in ranks else 0
        self.skew = np.nan_to_num(np.nanmax(late, axis=1, initial=0.0) if late.size else np.zeros(0))
        self.cursor = 0

    @property
    def rank(self) -> int:
        return self.ranks[self.variant]

    def lasts(self) -> np.ndarray:
        """The collectives this rank arrived last at (a skew above 0)."""
        return np.array([i for i, r in enumerate(self.last) if r == self.rank and self.skew[i] > 0], dtype=np.int64)

    def positions(self, width: int) -> int:
        return len(self.names)

    def model(self, width: int) -> PlotModel:
        n = len(self.names)
        x = np.arange(n, dtype=np.float64)
        mine = Series(f"rank {self.rank}", x, np.nan_to_num(self.late[:, self.variant]) if n else x, style="s0")
        skew = Series("start skew", x, self.skew, style="s1")
        marks = [(float(i) + 0.5, "^") for i in self.lasts().tolist()]
        return ChartModel([mine, skew], 0.0, float(max(n, 1)), cursor=self.cursor + 0.5, marks=marks,
                          y_text=_us_label, x_text=lambda v: f"#{int(v) + 1}")

    def readout(self, width: int) -> Text:
        n = len(self.names)
        if not n:
            return Text("no collective matched across the ranks")
        i, r = self.cursor, self.rank
        late = self.late[i, self.variant]
        t = Text()
        t.append(f"rank {r}", style="bold")
        t.append(f" at #{i + 1} {one_line(self.names[i])}: ")
        if np.isnan(late):
            t.append("took no part")
        else:
            t.append(f"{units.duration_text(float(late))} after the first")
            if self.last[i] == r and self.skew[i] > 0:
                t.append(" (last)", style="bold")
        t.append(f"; skew {units.duration_text(float(self.skew[i]))}")
        t.append(f"  last at {len(self.lasts())} of {n}  (↑↓ rank)", style="dim")
        return t

    def peak(self, width: int) -> int:
        lasts = self.lasts()
        if lasts.size:
            return int(lasts[np.argmax(self.skew[lasts])])
        return int(np.nanargmax(np.nan_to_num(self.late[:, self.variant], nan=-1.0))) if len(self.names) else 0

    def events(self, width: int) -> Any:
        if not len(self.names) or np.isnan(self.late[self.cursor, self.variant]):
            return None
        return "arrival", (self.cursor, self.rank)


class MemoryPlot(PlotView):
    """One device's allocated and reserved bytes over time, a bin per column (module docstring)."""

    def __init__(self, m: MemoryModel, d: Device, top: Peak | None) -> None:
        ts, alloc, res = timeline(m, d)
        self.m, self.d = m, d
        self.title = f"{d.name} memory"
        self.allocated = Series("allocated", ts, alloc.astype(np.float64), start=float(d.baseline), style="s0")
        has_res = bool(res.size and (res >= 0).any())
        self.reserved = (Series("reserved", ts, np.maximum(res, 0).astype(np.float64),
                                start=float(max(int(res[0]), 0)), style="s1") if has_res else None)
        self.legend = "bars: allocated, line: reserved" if has_res else "bars: allocated"
        self.top = top  # the memory screen's allocated peak
        lo = float(ts[0]) if ts.size else 0.0
        # the last event inside the last column (a column holds [its start, the next's))
        self.lo, self.hi = lo, (float(ts[-1]) + max((float(ts[-1]) - lo) * 1e-6, 1e-3)) if ts.size else lo + 1.0
        self.cursor = 0

    def edges(self, width: int) -> np.ndarray:
        return np.linspace(self.lo, self.hi, max(width, 1) + 1)

    def positions(self, width: int) -> int:
        return max(width, 1)

    def model(self, width: int) -> PlotModel:
        e = self.edges(width)
        c = min(self.cursor, width - 1)
        series = [self.allocated] + ([self.reserved] if self.reserved is not None else [])
        return ChartModel(series, float(e[0]), float(e[-1]), cursor=float((e[c] + e[c + 1]) / 2),
                          marks=[(self.top.ts, "^")] if self.top is not None else [])

    def column(self, width: int) -> tuple[float, float, float, float | None]:
        """The cursor column's span (µs) and the highest bytes allocated and reserved in it."""
        e = self.edges(width)
        c = min(self.cursor, width - 1)
        span = e[c:c + 2]
        res = float(self.reserved.cell_max(span)[0]) if self.reserved is not None else None
        return float(e[c]), float(e[c + 1]), float(self.allocated.cell_max(span)[0]), res

    def readout(self, width: int) -> Text:
        a, b, alloc, res = self.column(width)
        t = Text()
        t.append(f"{self.d.name} {units.bytes_rounded(alloc)} allocated", style="bold")
        if res is not None:
            t.append(f", {units.bytes_rounded(res)} reserved")
        t.append(f" (highest) from {units.ms_text(a / 1e3)} to {units.ms_text(b / 1e3)}")
        if self.top is not None and a <= self.top.ts < b:
            t.append("  ^ the peak", style="bold")
        elif self.top is not None:
            t.append(f"  (peak {units.bytes_rounded(self.top.value)} at {units.ms_text(self.top.ts / 1e3)})",
                     style="dim")
        return t

    def peak(self, width: int) -> int:
        if self.top is None:
            return self.cursor
        e = self.edges(width)
        return int(min(max(np.searchsorted(e, self.top.ts, side="right") - 1, 0), max(width, 1) - 1))

    def events(self, width: int) -> Any:
        """The ops that allocated in the column, largest block first (their tree nodes)."""
        a, b, _, _ = self.column(width)
        s = self.m.rows_of(self.d)
        ts, nbytes, node = self.m.ts[s], self.m.nbytes[s], self.m.node[s]
        rows = np.flatnonzero((ts >= a) & (ts < b) & (nbytes > 0) & (node >= 0))
        if not rows.size:
            return None
        rows = rows[np.argsort(-nbytes[rows], kind="stable")]
        nodes = node[rows][np.sort(np.unique(node[rows], return_index=True)[1])]
        return nodes.astype(np.int64), f"allocations on {self.d.name} from {units.ms_text(a / 1e3)} to " \
            f"{units.ms_text(b / 1e3)}", None


def trace_plots(kt: Any) -> list[PlotView]:
    """The plots of one trace: step time (when the trace has two steps or more) and the busy %
    of each device with GPU events (computed in a worker thread, once per trace)."""
    out: list[PlotView] = []
    steps = step_series(kt)
    if steps.n >= 2:
        out.append(StepPlot(steps))
    word = kt.device_word()
    out.extend(BusyPlot(r, word) for r in busy_runs(kt))
    return out


def job_plots(job: Any) -> list[PlotView]:
    """The plots of a job: the arrivals at its matched collectives, the straggler's first."""
    from ...job.stragglers import lateness_matrix

    ranks = sorted(int(s["rank"]) for s in job.stragglers)  # the ranks the straggler ranking counts
    late, last = lateness_matrix(job.collectives, ranks)
    names = [str(c.get("name") or c.get("kind") or "") for c in job.collectives]
    verdict = getattr(job, "straggler", None) or {}
    return [ArrivalPlot(late, last, ranks, names, verdict.get("rank"))]
