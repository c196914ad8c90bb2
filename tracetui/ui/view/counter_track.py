"""Counter tracks: one timeline row per counter series (:mod:`tracetui.kineto.counters`).

A row is a :class:`CounterTrack`, a :class:`~.track.Track` whose
intervals are the samples (a CUPTI profiler range covers its ``ts`` .. ``ts + dur``; a ``C``
sample holds until the next sample of its series) and which also carries their values.
Each cell shows the largest value of the samples overlapping it relative to the series'
largest value, with the busy glyphs (`` ▁▂▃▄▅▆▇█``; a zero value draws nothing, any
positive value at least ``▁``).  Times are µs in the trace's clock, like every lane.
Rows are built with numpy per series, never per sample.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ...kineto.counters import counters_of
from ...kineto.trace import KinetoTrace
from .track import Track


@dataclass(frozen=True, eq=False)
class CounterTrack(Track):
    """A lane of counter samples: ``values`` aligned with ``starts``/``ends`` (sorted)."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    series: str = ""

    def cell_levels(self, edges: np.ndarray) -> np.ndarray:
        """Glyph level 0..8 per cell ``[edges[c], edges[c+1])`` (``edges`` in the lane's clock)."""
        cells = edges.size - 1
        out = np.zeros(max(cells, 0), dtype=np.int8)
        if not self.starts.size or cells <= 0:
            return out
        top = float(np.max(np.abs(self.values))) if self.values.size else 0.0
        if top <= 0.0 or not np.isfinite(top):
            return out
        # the cells each sample overlaps: [first, last]
        first = np.clip(np.searchsorted(edges, self.starts, side="right") - 1, 0, cells - 1)
        last = np.clip(np.searchsorted(edges, np.maximum(self.ends, self.starts), side="left") - 1, 0, cells - 1)
        inside = (self.ends >= edges[0]) & (self.starts < edges[-1])
        if not inside.any():
            return out
        frac = np.abs(self.values[inside]) / top
        lvl = np.where(frac > 0, np.clip(np.rint(frac * 8), 1, 8), 0).astype(np.int8)
        f, end = first[inside], np.maximum(last[inside], first[inside])
        # max over each sample's cell span: mark starts, then a running max within spans
        for lv in np.unique(lvl[lvl > 0]).tolist():  # at most 8 passes
            m = lvl == lv
            cover = np.zeros(cells + 1, dtype=np.int32)
            np.add.at(cover, f[m], 1)
            np.add.at(cover, end[m] + 1, -1)
            on = np.cumsum(cover[:-1]) > 0
            out[on] = np.maximum(out[on], lv)
        return out


def _labels(names: list[str]) -> list[str]:
    """Series names without their common prefix (``smsp__sass_thread_inst_executed_op_``),
    so the narrow label column tells them apart."""
    if len(names) < 2:
        return list(names)
    prefix = os.path.commonprefix(names)
    cut = len(prefix) if len(prefix) >= 4 and all(len(n) > len(prefix) for n in names) else 0
    return [n[cut:] for n in names]


def counter_tracks(kt: KinetoTrace) -> list[CounterTrack]:
    """One :class:`CounterTrack` per counter series of ``kt`` (series order of first sample)."""
    c = counters_of(kt)
    if not c.n_samples:
        return []
    out = []
    for si, label in enumerate(_labels(c.series_names)):
        ts, dur, val = c.series_samples(si)
        ends = ts + dur
        held = dur <= 0.0  # C samples: hold until the next one
        if held.any():
            nxt = np.append(ts[1:], ts[-1])
            ends = np.where(held, nxt, ends)
        out.append(CounterTrack(label, ts, ends, values=val, series=c.series_names[si]))
    return out
