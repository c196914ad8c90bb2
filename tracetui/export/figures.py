"""The HTML report's plots (static SVG, :mod:`.svg_plot`), the same curves the browser draws:

* **step time per step** (bars, host) with the GPU time launched in each (a line), the slowest
  marked ``▲`` (:func:`tracetui.analysis.series.step_series`; the steps whose annotation is in
  the subtree, when there are two or more);
* **GPU busy % over time per device**, :data:`BINS` bins over the report's GPU window (the
  whole trace: each device's first to last GPU event) of the subtree's own GPU events
  (:func:`tracetui.analysis.series.busy_runs`: the bins add up to the breakdown's busy);
* **memory allocated (bars, the highest in each bin) and reserved (a line) over time per
  device** of a trace with ``[memory]`` events, over the root's host span (the whole trace:
  each device's first to last event; :func:`tracetui.analysis.memory.binned_max`).

Each :class:`Figure` keeps the numbers it draws (``values``), which tests compare with the
report's tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import units
from ..analysis.memory import binned_max, memory_model, timeline
from ..analysis.series import busy_runs, step_series
from .report import SubtreeReport
from .svg_plot import Chart, render_svg

#: bins of a plot over time
BINS = 120


@dataclass
class Figure:
    """A plot of the report: ``title``, ``note`` (what it shows), ``chart`` and its ``values``."""

    title: str
    note: str
    chart: Chart

    @property
    def svg(self) -> str:
        return render_svg(self.chart)


def _ms(v: float) -> str:
    return units.duration_text(v * 1e3)


def report_figures(rep: SubtreeReport) -> list[Figure]:
    """The plots of ``rep`` (module docstring), in that order; none that would be empty."""
    return [*_steps(rep), *_busy(rep), *_memory(rep)]


def _steps(rep: SubtreeReport) -> list[Figure]:
    s = step_series(rep.trace)
    keep = np.ones(s.n, dtype=bool) if rep.root is None else np.isin(s.events, rep.nodes)
    idx = np.flatnonzero(keep & (s.events >= 0))
    if idx.size < 2:
        return []
    dur, gpu = s.dur[idx] / 1e3, s.gpu_us[idx] / 1e3
    slowest = int(np.argmax(dur))
    chart = Chart("step time per step", dur, _ms, f"#{s.numbers[idx[0]]}", f"#{s.numbers[idx[-1]]}",
                  lines=[("GPU time", gpu)], marks=[(slowest, "▲")], bar_label="step time (host)")
    note = (f"{idx.size} steps ({s.how}); the slowest ▲ {s.names[idx[slowest]]}: "
            f"{units.duration_text(float(s.dur[idx[slowest]]))}")
    return [Figure("Step time per step", note, chart)]


def _busy(rep: SubtreeReport) -> list[Figure]:
    kt = rep.trace
    events = rep.kernels["event"].to_numpy() if not rep.kernels.empty else np.zeros(0, dtype=np.int64)
    out = []
    word = kt.device_word()
    for r in busy_runs(kt, events):
        lo, hi = rep.window if rep.window is not None else (r.lo, r.hi)
        if hi <= lo:
            continue
        edges = np.linspace(lo, hi, BINS + 1)
        pct = r.busy_pct(edges)
        chart = Chart(f"{word}{r.device} busy %", pct, lambda v: units.pct_text(v, ".0f"),
                      units.ms_text(lo / 1e3), units.ms_text(hi / 1e3), y_max=100.0, bar_label="busy %")
        busy = float(r.busy_in(np.array([lo, hi]))[0])
        note = (f"{word}{r.device}: busy {units.duration_text(busy)} of {units.duration_text(hi - lo)} "
                f"({units.pct_text(100.0 * busy / (hi - lo))}), {BINS} bins of {units.duration_text((hi - lo) / BINS)}")
        out.append(Figure(f"{word}{r.device} busy over time", note, chart))
    return out


def _memory(rep: SubtreeReport) -> list[Figure]:
    if rep.memory is None:
        return []
    kt = rep.trace
    m = memory_model(kt)
    out = []
    for d in m.devices:
        ts, alloc, res = timeline(m, d)
        if not ts.size:
            continue
        lo, hi = (float(ts[0]), float(ts[-1])) if rep.root is None else kt.node_span(rep.root)
        if hi <= lo:
            continue
        a = binned_max(ts, alloc.astype(np.float64), float(d.baseline), lo, hi, BINS)
        lines = []
        if (res >= 0).any():
            r = binned_max(ts, res.astype(np.float64), float(max(int(res[0]), 0)), lo, hi, BINS)
            lines.append(("reserved", r))
        chart = Chart(f"{d.name} memory", a, units.bytes_rounded, units.ms_text(lo / 1e3), units.ms_text(hi / 1e3),
                      lines=lines, bar_label="allocated")
        note = (f"{d.name}: the highest bytes allocated in each of {BINS} bins (peak "
                f"{units.bytes_text(float(a.max()))}){', reserved as a line' if lines else ''}")
        out.append(Figure(f"{d.name} memory over time", note, chart))
    return out
