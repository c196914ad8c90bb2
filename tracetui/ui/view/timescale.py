"""Ruler ticks of the timeline: round tick positions (multiples of a 1/2/5 step) for a
time window.  Times and their text are :mod:`tracetui.units`'s (``format_time_us``,
``choose_unit``); every input is in microseconds.
"""

from __future__ import annotations

import math


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
