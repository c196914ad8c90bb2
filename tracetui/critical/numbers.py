"""How the critical-path answers write numbers (the command line's text, the path screen),
built on :mod:`tracetui.units` (the one place a unit is spelled)."""

from __future__ import annotations

import math

from .. import units


def duration(us: float) -> str:
    """``12.3 µs``, ``4.567 ms``, ``1.234 s`` (three decimals in ms and s, one in µs)."""
    if us is None or not math.isfinite(us):
        return "-"
    a = abs(us)
    if a >= 1e6:
        return units.s_text(us / 1e6, ",.3f")
    if a >= 1e3:
        return units.ms_text(us / 1e3)
    return units.us_text(us, ",.1f")


def timestamp(us: float) -> str:
    """A time on the trace's clock (µs from its origin) as milliseconds: ``17.195 ms``."""
    return units.ms_text(us / 1e3)


def share(fraction: float) -> str:
    """``76.5 %`` (right-aligned in five cells before the sign)."""
    return units.pct_text(100.0 * fraction, "5.1f", space=True)


def count(n: int) -> str:
    return f"{n:,}"
