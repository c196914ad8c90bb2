"""How the critical-path answers write numbers (the command line's text, the path screen):
one place, so that it can follow the project's units module."""

from __future__ import annotations

import math


def duration(us: float) -> str:
    """``12.3 µs``, ``4.567 ms``, ``1.234 s`` (three significant decimals at most)."""
    if us is None or not math.isfinite(us):
        return "-"
    a = abs(us)
    if a >= 1e6:
        return f"{us / 1e6:,.3f} s"
    if a >= 1e3:
        return f"{us / 1e3:,.3f} ms"
    return f"{us:,.1f} µs"


def timestamp(us: float) -> str:
    """A time on the trace's clock (µs from its origin) as milliseconds: ``17.195 ms``."""
    return f"{us / 1e3:,.3f} ms"


def share(fraction: float) -> str:
    """``76.5 %``."""
    return f"{100.0 * fraction:5.1f} %"


def count(n: int) -> str:
    return f"{n:,}"
