"""How the diff writes its numbers as text: the one place (the text report, later the browser).

Times arrive in µs and are written with a unit fitted to their size; deltas carry a sign;
percentages are of A (``new`` where A is 0 and B is not).
"""

from __future__ import annotations

import math
from typing import Any

from .. import units

#: the browser's regressions filter: rows whose GPU time grew by more than this (µs per step) ...
REGRESSION_MIN_US = 1.0
#: ... and by more than this percentage of A's (any growth from 0 counts)
REGRESSION_MIN_PCT = 1.0


def us(v: float | None) -> str:
    """A duration in µs as text: ``812.4 µs``, ``12.35 ms``, ``1.204 s``; "" for None/NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    a = abs(v)
    if a >= 1e6:
        return units.s_text(v / 1e6, ",.3f")
    if a >= 1e3:
        return units.ms_text(v / 1e3, ",.2f")
    return units.us_text(v, ",.1f")


def delta_us(v: float | None) -> str:
    """A signed change of a duration: ``+1.20 ms``, ``-35.0 µs``, ``0``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if v == 0:
        return "0"
    return ("+" if v > 0 else "") + us(v)


def pct(b: float | None, a: float | None) -> str:
    """The change from ``a`` to ``b`` in percent of ``a``: ``+5.2%``; ``new`` when only B has it,
    ``gone`` when only A, "" when both are 0."""
    if a is None or b is None:
        return ""
    if a == 0:
        return "new" if b else ""
    if b == 0:
        return "gone"
    return units.pct_text((b - a) * 100.0 / a, "+.1f")


def pct_value(p: float | None) -> str:
    """A percentage already computed: ``+5.2%``."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return units.pct_text(p, "+.1f")


def count(v: float | None) -> str:
    """A count (a per-step mean may be fractional): ``1,204``, ``12.5``."""
    if v is None:
        return ""
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.1f}"


def delta_count(v: float | None) -> str:
    if v is None:
        return ""
    if v == 0:
        return "0"
    return ("+" if v > 0 else "") + count(v)


def threshold(p: float) -> str:
    """A threshold the user gave in percent: ``5%``, ``2.5%``."""
    return units.pct_text(p, "g")


def regressions(doc: dict[str, Any], threshold_pct: float) -> list[str]:
    """Why ``doc`` fails ``--fail-above threshold_pct``: the step time or the GPU time per step
    grew by more than that percentage (of A).  Empty when it passes."""
    out = []
    for key, label in (("step_time", "step time"), ("gpu_time_per_step", "GPU time per step")):
        c = doc[key]
        p = c["delta_pct"]
        if p is not None and p > threshold_pct:
            out.append(f"{label} regressed by {pct_value(p)} (more than {threshold(threshold_pct)}): "
                       f"{us(c['a_us'])} -> {us(c['b_us'])}")
    return out
