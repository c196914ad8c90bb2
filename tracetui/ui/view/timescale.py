"""Formatting of durations and times, and choice of ruler ticks.

Pure helpers (no textual import) shared by the UI widgets.  Every input is in
**microseconds** (the unit of Kineto ``ts``/``dur``); outputs are short strings
sized for narrow terminal columns.
"""

from __future__ import annotations

import math

# (suffix, microseconds per unit), smallest first.
_UNITS: tuple[tuple[str, float], ...] = (
    ("ns", 1e-3),
    ("µs", 1.0),
    ("ms", 1e3),
    ("s", 1e6),
)
_UNIT_SCALE = dict(_UNITS)


def _three_significant(value: float) -> str:
    """Format a value in [0, 1000) with three significant digits (``3.14``, ``31.4``, ``314``)."""
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def format_duration_us(us: float) -> str:
    """Format a duration given in microseconds, with about three significant digits.

    ``812ns``, ``3.14µs``, ``31.4µs``, ``12.3ms``, ``1.52s``.  Durations under a
    microsecond are whole nanoseconds; durations of 1000 s and more are whole
    seconds.  Zero is ``0``; negative durations keep their sign; NaN and
    infinities give ``?``.
    """
    if not math.isfinite(us):
        return "?"
    if us == 0:
        return "0"
    sign = "-" if us < 0 else ""
    mag = abs(us)
    if mag < 1.0:
        ns = round(mag * 1e3)
        if ns < 1000:
            return f"{sign}{ns}ns"
        mag = 1.0
    for suffix, scale in _UNITS[1:]:
        value = mag / scale
        text = _three_significant(value)
        if float(text) < 1000 or suffix == "s":
            if suffix == "s" and value >= 1000:
                text = f"{value:.0f}"
            return f"{sign}{text}{suffix}"
    raise AssertionError("unreachable")  # pragma: no cover


def choose_unit(us: float) -> str:
    """The unit suffix (``ns``/``µs``/``ms``/``s``) that shows ``|us|`` microseconds
    as a number in [1, 1000) (``s`` above that; ``µs`` for zero)."""
    mag = abs(us)
    if mag == 0 or not math.isfinite(mag):
        return "µs"
    chosen = _UNITS[0][0]
    for suffix, scale in _UNITS:
        if mag >= scale * 0.9995:
            chosen = suffix
    return chosen


def format_time_us(us: float, resolution_us: float | None = None, unit: str | None = None) -> str:
    """Format a point in time, in microseconds relative to some origin (e.g. trace start).

    ``resolution_us`` is the smallest difference that must stay visible (a ruler's tick
    step); it picks the number of decimals.  ``unit`` forces a suffix
    (``ns``/``µs``/``ms``/``s``) so that all ticks of a ruler share it; by default the
    unit is chosen from the magnitude of ``us``.  Zero is ``0``.
    """
    if not math.isfinite(us):
        return "?"
    if us == 0:
        return "0"
    if unit is None:
        unit = choose_unit(us)
    scale = _UNIT_SCALE[unit]
    value = us / scale
    if resolution_us is None or resolution_us <= 0 or not math.isfinite(resolution_us):
        mag = abs(value)
        decimals = 2 if mag < 10 else 1 if mag < 100 else 0
    else:
        step = resolution_us / scale
        decimals = min(6, max(0, math.ceil(-math.log10(step) - 1e-9)))
    return f"{value:.{decimals}f}{unit}"


def nice_step(span: float, max_ticks: int) -> float:
    """The smallest step of the form 1, 2 or 5 times a power of ten that splits
    ``span`` into at most ``max_ticks`` intervals (``0.0`` when impossible)."""
    if span <= 0 or max_ticks < 1 or not math.isfinite(span):
        return 0.0
    raw = span / max_ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for mult in (1.0, 2.0, 5.0, 10.0):
        step = mult * power
        if step >= raw * (1 - 1e-12):
            return step
    return 10.0 * power  # pragma: no cover


def nice_ticks(t0: float, t1: float, max_ticks: int) -> list[float]:
    """Round tick positions (multiples of a 1/2/5 step) inside ``[t0, t1]``.

    At most ``max_ticks + 1`` values, ascending; empty when ``t1 <= t0`` or
    ``max_ticks < 1``.  Units are whatever ``t0``/``t1`` are in (microseconds in
    tracetui).
    """
    step = nice_step(t1 - t0, max_ticks)
    if step == 0.0:
        return []
    first = math.ceil(t0 / step - 1e-9)
    last = math.floor(t1 / step + 1e-9)
    ticks = []
    for k in range(first, last + 1):
        value = k * step
        # Strip float noise such as 0.30000000000000004 while keeping the magnitude.
        ticks.append(float(f"{value:.12g}"))
    return ticks
