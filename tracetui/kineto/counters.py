"""Counters: the numbers a trace records over time rather than spans of work.

Three layouts are read, all into one columnar table of samples (:class:`Counters`):

- ``C`` events (Chrome counter events): ``name`` is the counter, each numeric ``args``
  key one series (``"<name>: <key>"``; just ``<name>`` when the key repeats it); a
  sample lasts until the next sample of its series (``dur`` 0 here);
- ``cuda_profiler_range`` events (the CUPTI range profiler): one ``X`` event per profiled
  range (a kernel's name), each numeric arg one hardware counter, e.g.
  ``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`` = 9119334400; the sample covers
  the range (``ts``, ``dur``);
- events of the categories ``hardware_counters`` and ``mtia_counters``: numeric args as
  for ranges.

Times are µs relative to the trace origin, like the model; values are float64 (integers
beyond 2**53 lose their last digits; the detail pane decodes the event's args exactly).
Args that are not numbers (text, lists) are not samples; they stay in the event's args.
The table is built on first use from the events' raw args (one msgspec call for all
counter events) and kept on the trace; the loader's hot path does not touch it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from ..io.interning import Codes
from .kinds import COUNTER_CATEGORIES
from .trace import KinetoTrace


@dataclass
class Counters:
    """Counter samples as columns (one row per (event, numeric arg))."""

    series_names: list[str]  #: series index -> name
    event: np.ndarray  #: int64 model event of each sample
    series: np.ndarray  #: int32 index into series_names
    ts: np.ndarray  #: float64 µs relative to the origin
    dur: np.ndarray  #: float64 µs (0 for C samples)
    value: np.ndarray  #: float64
    events: np.ndarray  #: int64 every counter event (ranges and C events), file order
    ranges: np.ndarray  #: int64 the counter events that are spans (ph X): ranges

    @property
    def n_samples(self) -> int:
        return int(self.event.shape[0])

    def of_event(self, event: int) -> list[tuple[str, float]]:
        """(series name, value) of one event's samples, in args order; [] when none."""
        lo = int(np.searchsorted(self.event, event, side="left"))
        hi = int(np.searchsorted(self.event, event, side="right"))
        return [(self.series_names[int(s)], float(v)) for s, v in zip(self.series[lo:hi], self.value[lo:hi])]

    def series_totals(self) -> dict[str, float]:
        """Series name -> the sum of its values over the whole trace."""
        sums = np.bincount(self.series, weights=self.value, minlength=len(self.series_names))
        return dict(zip(self.series_names, sums.tolist()))

    def series_samples(self, series: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ts, dur, value) of one series by start time."""
        m = np.flatnonzero(self.series == series)
        o = m[np.argsort(self.ts[m], kind="stable")]
        return self.ts[o], self.dur[o], self.value[o]

    def table(self, mask: np.ndarray | None = None) -> list[dict[str, Any]]:
        """Per series (those with samples under ``mask``): ``series``, ``samples``, ``min``,
        ``max``, ``mean``, ``sum`` of the values, ``first_us``/``last_us`` (sample starts)."""
        sel = np.arange(self.n_samples) if mask is None else np.flatnonzero(mask)
        out: list[dict[str, Any]] = []
        if not sel.size:
            return out
        s = self.series[sel]
        order = np.argsort(s, kind="stable")
        sel, s = sel[order], s[order]
        cuts = np.flatnonzero(np.diff(s)) + 1
        for part in np.split(sel, cuts):
            v = self.value[part]
            t = self.ts[part]
            out.append({"series": self.series_names[int(self.series[part[0]])], "samples": int(part.size),
                        "min": float(v.min()), "max": float(v.max()), "mean": float(v.mean()),
                        "sum": float(v.sum()), "first_us": float(t.min()), "last_us": float(t.max())})
        return out

    def ranges_by_name(self, trace: KinetoTrace, top: int = 3) -> dict[str, list[dict[str, Any]]]:
        """Per series: the ``top`` range names (samples of ranges only) with the largest summed
        value: ``name``, ``ranges`` (samples of that name), ``sum``, ``share`` (% of the
        series' sum over ranges; None when that sum is 0)."""
        is_range = np.isin(self.event, self.ranges)
        sel = np.flatnonzero(is_range)
        out: dict[str, list[dict[str, Any]]] = {}
        if not sel.size:
            return out
        name = trace.name_id[self.event[sel]].astype(np.int64)
        key = self.series[sel].astype(np.int64) * (int(name.max()) + 1) + name
        keys, inv, n = np.unique(key, return_inverse=True, return_counts=True)
        sums = np.bincount(inv, weights=self.value[sel])
        k_series, k_name = np.divmod(keys, int(name.max()) + 1)
        for s in np.unique(k_series).tolist():
            mine = np.flatnonzero(k_series == s)
            whole = float(sums[mine].sum())
            mine = mine[np.lexsort((mine, -sums[mine]))][:top]
            out[self.series_names[s]] = [
                {"name": trace.names[int(k_name[i])], "ranges": int(n[i]), "sum": float(sums[i]),
                 "share": round(100.0 * float(sums[i]) / whole, 3) if whole else None}
                for i in mine.tolist() if sums[i] != 0]
        return out

    def samples_of(self, mask: np.ndarray) -> list[dict[str, Any]]:
        """Every sample under ``mask`` as ``{event, name, series, ts_us, dur_us, value}``."""
        return [{"event": int(e), "series": self.series_names[int(s)], "ts_us": float(t), "dur_us": float(d),
                 "value": float(v)}
                for e, s, t, d, v in zip(self.event[mask], self.series[mask], self.ts[mask], self.dur[mask],
                                         self.value[mask])]


def counter_events(trace: KinetoTrace) -> np.ndarray:
    """Model events that are counters: ph ``C``, or a counter category."""
    cat_hit = np.array([c in COUNTER_CATEGORIES for c in trace.cats] or [False], dtype=bool)
    mask = (trace.ph == ord("C")) | (cat_hit[trace.cat_id] if trace.n_events else False)
    return np.flatnonzero(mask)


def counters_of(trace: KinetoTrace) -> Counters:
    """The trace's :class:`Counters` (built on first use, then kept on the trace)."""
    cached = trace.__dict__.get("_counter_model")
    if cached is None:
        cached = _build(trace)
        trace.__dict__["_counter_model"] = cached
    return cached


def _decode_all(trace: KinetoTrace, events: np.ndarray) -> list[Any]:
    blob, offs = trace.args_blob, trace.args_offsets
    parts = [blob[a:b] or b"{}" for a, b in zip(offs[events].tolist(), offs[events + 1].tolist())]
    try:
        return msgspec.json.decode(b"[" + b",".join(parts) + b"]")
    except msgspec.DecodeError:
        return [trace.args(int(e)) for e in events.tolist()]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _build(trace: KinetoTrace) -> Counters:
    events = counter_events(trace)
    series_at = Codes()  # series name -> index, first-seen order
    ev_l: list[int] = []
    se_l: list[int] = []
    va_l: list[float] = []
    is_c = trace.ph[events] == ord("C") if events.size else np.zeros(0, bool)
    for e, args, c in zip(events.tolist(), _decode_all(trace, events), is_c.tolist()):
        if not isinstance(args, dict):
            continue
        base = trace.names[trace.name_id[e]] if c else ""
        for k, v in args.items():
            x = _number(v)
            if x is None:
                continue
            name = (base if k == base else f"{base}: {k}") if c else k
            si = series_at[name]
            ev_l.append(e)
            se_l.append(si)
            va_l.append(x)
    ev = np.asarray(ev_l, dtype=np.int64)
    return Counters(
        series_names=list(series_at), event=ev, series=np.asarray(se_l, dtype=np.int32),
        ts=trace.ts[ev] if ev.size else np.zeros(0), dur=np.where(trace.ph[ev] == ord("C"), 0.0, trace.dur[ev])
        if ev.size else np.zeros(0), value=np.asarray(va_l, dtype=np.float64), events=events,
        ranges=events[trace.ph[events] == ord("X")] if events.size else events)


#: how many range names :func:`counters_summary` lists per series and overall
TOP_RANGES = 3
RANGE_NAMES = 15


def counters_summary(trace: KinetoTrace) -> dict[str, Any]:
    """The ``counters`` section of ``summary --json``: ``events`` (counter events), ``ranges``
    (of them, spans: CUPTI profiler ranges), ``samples``, ``series`` (per series: samples,
    min, max, mean, sum, first/last µs, and ``top_ranges``: the :data:`TOP_RANGES` range
    names with the largest summed value, each ``name``, ``ranges``, ``sum``, ``share`` (% of
    the series' sum)), ``range_names`` (how many distinct names the ranges have) and
    ``ranges_by_name`` (the :data:`RANGE_NAMES` names with most range time: ``name``,
    ``ranges``, ``total_us``)."""
    c = counters_of(trace)
    series = c.table()
    by_range = c.ranges_by_name(trace)
    for row in series:
        row["top_ranges"] = by_range.get(row["series"], [])
    names, counts, total = _range_names(trace, c.ranges)
    order = np.lexsort((np.arange(names.size), -counts, -total))[:RANGE_NAMES]
    return {"events": int(c.events.size), "ranges": int(c.ranges.size), "samples": c.n_samples,
            "series": series, "range_names": int(names.size),
            "ranges_by_name": [{"name": trace.names[int(names[i])], "ranges": int(counts[i]),
                                "total_us": float(total[i])} for i in order.tolist()]}


def _range_names(trace: KinetoTrace, ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(name ids, ranges per name, summed range µs per name) of the counter ranges."""
    names, inv, counts = np.unique(trace.name_id[ranges], return_inverse=True, return_counts=True)
    total = np.bincount(inv, weights=trace.dur[ranges], minlength=names.size) if ranges.size else np.zeros(0)
    return names, counts, total


def counters_export(trace: KinetoTrace, nodes: np.ndarray | None, span: tuple[float, float] | None) -> dict[str, Any]:
    """The ``counters`` section of a JSON export: ``series`` (as in :func:`counters_summary`)
    and every ``samples`` row, of the counter events among ``nodes`` (a subtree; None: the
    whole trace) and of the ``C`` samples starting within ``span`` (µs; they sit on no
    lane, so no subtree holds them).  {} when there is none."""
    c = counters_of(trace)
    if not c.n_samples:
        return {}
    if nodes is None:
        mask = np.ones(c.n_samples, dtype=bool)
    else:
        mask = np.isin(c.event, np.asarray(nodes, dtype=np.int64))
        if span is not None:
            is_c = trace.ph[c.event] == ord("C")
            mask |= is_c & (c.ts >= span[0]) & (c.ts <= span[1])
    if not mask.any():
        return {}
    return {"series": c.table(mask), "samples": c.samples_of(mask)}
