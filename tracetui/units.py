"""How tracetui writes a quantity: durations, times, counts, bytes, bandwidth, throughput and
percentages, defined once for the CLI, the browser and the exports.

**Bytes are SI (decimal):** 1 kB = 1,000 B, 1 MB = 10^6 B, 1 GB = 10^9 B.  Bandwidth is
GB/s = 10^9 bytes per second (NCCL's busbw, device memory bandwidth and Kineto's ``memory
bandwidth (GB/s)`` all use it), so a size and a time read off the screen give the bandwidth
directly: 19.3 MB in 1 ms is 19.3 GB/s.  Where the exact count matters (a tensor, an
allocation) the bytes are written in full beside the rounded form: ``33,792 B (33.8 kB)``.

**Times are microseconds** on input (the unit of Kineto ``ts``/``dur``); outputs are short
strings for narrow terminal columns (``3.14µs``, with no space: the tree and timeline cells)
or exact ones with a space (``5.824 µs``: the tables and the detail pane).

Every unit symbol is spelled here only (``tests/core/test_units.py`` fails on a unit string
literal anywhere else in ``tracetui/``); other modules use the constants and functions below.
"""

from __future__ import annotations

import math
import sys
from typing import Any

# ------------------------------------------------------------------ symbols
NS = "ns"
US = "µs"
MS = "ms"
S = "s"
MIN = "min"
#: microseconds in the plain ASCII text of ``tracetui tree`` (which never writes ``µ``)
US_ASCII = "us"
B = "B"
KB = "kB"
MB = "MB"
GB = "GB"
TB = "TB"
GBPS = "GB/s"
TFLOPS = "TFLOP/s"
FLOP_PER_BYTE = "FLOP/byte"
#: the short form of :data:`FLOP_PER_BYTE` for a narrow table header
FLOP_PER_B = "FLOP/B"
PCT = "%"

#: bytes per unit, SI (decimal), smallest first
BYTE_UNITS: tuple[tuple[str, float], ...] = ((KB, 1e3), (MB, 1e6), (GB, 1e9), (TB, 1e12))
#: microseconds per unit, smallest first
_TIME_UNITS: tuple[tuple[str, float], ...] = ((NS, 1e-3), (US, 1.0), (MS, 1e3), (S, 1e6))
_TIME_SCALE = dict(_TIME_UNITS)

#: every symbol above: what a unit string literal elsewhere in tracetui would spell
SYMBOLS = (NS, US, MS, S, MIN, US_ASCII, B, KB, MB, GB, TB, GBPS, TFLOPS, FLOP_PER_BYTE, FLOP_PER_B, PCT)


# ------------------------------------------------------------------ durations and times
def _three_significant(value: float) -> str:
    """A value in [0, 1000) with three significant digits (``3.14``, ``31.4``, ``314``)."""
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def format_duration_us(us: float) -> str:
    """A duration given in microseconds, with about three significant digits and no space.

    ``812ns``, ``3.14µs``, ``31.4µs``, ``12.3ms``, ``1.52s``.  Durations under a microsecond
    are whole nanoseconds; durations of 1000 s and more are whole seconds.  Zero is ``0``;
    negative durations keep their sign; NaN and infinities give ``?``.
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
            return f"{sign}{ns}{NS}"
        mag = 1.0
    for suffix, scale in _TIME_UNITS[1:]:
        value = mag / scale
        text = _three_significant(value)
        if float(text) < 1000 or suffix == S:
            if suffix == S and value >= 1000:
                text = f"{value:.0f}"
            return f"{sign}{text}{suffix}"
    raise AssertionError("unreachable")  # pragma: no cover


def choose_unit(us: float) -> str:
    """The unit symbol (``ns``/``µs``/``ms``/``s``) that shows ``|us|`` microseconds as a
    number in [1, 1000) (``s`` above that; ``µs`` for zero)."""
    mag = abs(us)
    if mag == 0 or not math.isfinite(mag):
        return US
    chosen = _TIME_UNITS[0][0]
    for suffix, scale in _TIME_UNITS:
        if mag >= scale * 0.9995:
            chosen = suffix
    return chosen


def format_time_us(us: float, resolution_us: float | None = None, unit: str | None = None) -> str:
    """A point in time, in microseconds relative to some origin (e.g. the trace start).

    ``resolution_us`` is the smallest difference that must stay visible (a ruler's tick
    step); it picks the number of decimals.  ``unit`` forces a symbol (``ns``/``µs``/``ms``/
    ``s``) so that all ticks of a ruler share it; by default the unit is chosen from the
    magnitude of ``us``.  Zero is ``0``.
    """
    if not math.isfinite(us):
        return "?"
    if us == 0:
        return "0"
    if unit is None:
        unit = choose_unit(us)
    scale = _TIME_SCALE[unit]
    value = us / scale
    if resolution_us is None or resolution_us <= 0 or not math.isfinite(resolution_us):
        mag = abs(value)
        decimals = 2 if mag < 10 else 1 if mag < 100 else 0
    else:
        step = resolution_us / scale
        decimals = min(6, max(0, math.ceil(-math.log10(step) - 1e-9)))
    return f"{value:.{decimals}f}{unit}"


def us_text(us: float, spec: str = ",.3f") -> str:
    """Microseconds as a number and the symbol: ``5.824 µs`` (``spec`` formats the number)."""
    return f"{us:{spec}} {US}"


def ms_text(ms: float, spec: str = ",.3f") -> str:
    """Milliseconds (already in ms) as a number and the symbol: ``1.234 ms``."""
    return f"{ms:{spec}} {MS}"


def s_text(s: float, spec: str = "g") -> str:
    """Seconds (already in s) as a number and the symbol: ``1.5 s``."""
    return f"{s:{spec}} {S}"


def duration_exact(us: float) -> str:
    """``5.82µs  (5.824 µs)``: the short form, then the exact microseconds."""
    return f"{format_duration_us(us)}  ({us_text(us)})"


def duration_text(us: float | None) -> str:
    """A duration in running text (a verdict, a sentence): three significant digits and a
    space: ``812 ns``, ``3.4 µs``, ``12.3 ms``, ``1.52 s``, ``1,234 s``; ``-`` for None."""
    if us is None:
        return "-"
    v = float(us)
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g} {S}" if a < 1e8 else f"{v / 1e6:,.0f} {S}"
    if a >= 1e3:
        return f"{v / 1e3:.3g} {MS}"
    if a >= 1.0 or a == 0.0:
        return f"{v:.3g} {US}"
    return f"{v * 1e3:.3g} {NS}"


def duration_short_us(us: float) -> str:
    """``250 µs`` below a millisecond, ``1.5 ms`` from there (``%g``: no trailing zeros)."""
    if us >= 1e3:
        return f"{us / 1e3:g} {MS}"
    return f"{us:g} {US}"


# ------------------------------------------------------------------ counts and numbers
def number(v: Any, digits: int = 3) -> str:
    """A number as table text: integers with separators (``1,234``), other numbers with
    ``digits`` decimals (``1,234.568``); "" for None and NaN; booleans as ``True``/``False``;
    anything else as ``str``."""
    if v is None:
        return ""
    np = sys.modules.get("numpy")  # a numpy value exists only once numpy is loaded (start-up stays without it)
    if isinstance(v, bool) or (np is not None and isinstance(v, np.bool_)):
        return str(bool(v))
    if isinstance(v, int) or (np is not None and isinstance(v, np.integer)):
        return f"{int(v):,}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return ""
    return f"{f:,.{digits}f}"


def value_text(v: Any) -> str:
    """A value whose unit the column name says (a query result cell, docs/query.md): NULL as
    "" ; integers in full without separators (ids and counts stay copyable); floats with 3
    decimals (µs to the ns), or 3 significant digits when smaller than 0.001 (``1.2e-05``);
    NaN and infinities as ``nan``/``inf``; booleans ``true``/``false``; anything else ``str``."""
    if v is None:
        return ""
    np = sys.modules.get("numpy")  # a numpy value exists only once numpy is loaded (start-up stays without it)
    if isinstance(v, bool) or (np is not None and isinstance(v, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, int) or (np is not None and isinstance(v, np.integer)):
        return str(int(v))
    if isinstance(v, float) or (np is not None and isinstance(v, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return str(f)
        if f != 0 and abs(f) < 1e-3:
            return f"{f:.3g}"
        return f"{f:.3f}"
    return str(v)


def as_given(v: Any) -> str | None:
    """A number as the trace wrote it, with thousands separators: ``1,106.2125``, ``0.05``,
    ``4``; None stays None, anything else is ``str``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return format(v, ",")


def compact_count(n: int) -> str:
    """A count for a 5-cell column: ``9,999``, ``12345``, ``123k``, ``12M``."""
    if n < 100_000:
        return f"{n:,}" if n < 10_000 else str(n)
    if n < 10_000_000:
        return f"{n / 1e3:.0f}k"
    return f"{n / 1e6:.0f}M"


def plural(n: int, word: str) -> str:
    """``1 call``, ``2,145 calls``."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# ------------------------------------------------------------------ bytes, bandwidth, throughput
def bytes_rounded(n: float) -> str:
    """A byte count rounded, SI: ``512 B``, ``33.8 kB``, ``19.3 MB``, ``1.2 GB``; a negative
    count (bytes freed) keeps its sign: ``-4.2 MB``."""
    for unit, size in reversed(BYTE_UNITS[:3]):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{int(n):,} {B}"


def bytes_short(n: float) -> str:
    """:func:`bytes_rounded` for a table cell: "" for 0 and None."""
    return bytes_rounded(n) if n else ""


def bytes_text(n: float) -> str:
    """The exact count, then (from 1 kB) the rounded SI form: ``999 B``,
    ``33,792 B (33.8 kB)``, ``19,267,584 B (19.3 MB)``; a value that is not a finite number
    as ``str``."""
    if not isinstance(n, (int, float)) or not math.isfinite(n):
        return str(n)
    if abs(n) < BYTE_UNITS[0][1]:
        return f"{int(n):,} {B}"
    for unit, scale in BYTE_UNITS:
        if abs(n) < scale * 1e3 or unit == BYTE_UNITS[-1][0]:
            return f"{int(n):,} {B} ({n / scale:.1f} {unit})"
    return f"{n} {B}"  # pragma: no cover


def bytes_exact(n: int) -> str:
    """``4,194,304 B``."""
    return f"{int(n):,} {B}"


def gbps(nbytes: float, us: float) -> float:
    """Bandwidth in GB/s (10^9 bytes per second) of ``nbytes`` moved in ``us`` microseconds."""
    return nbytes / (us * 1e3)


def gbps_text(v: float, spec: str = ".4g") -> str:
    """``12.3 GB/s`` (``spec`` formats the number)."""
    return f"{v:{spec}} {GBPS}"


def tflops_text(v: float, spec: str = ",.3f") -> str:
    """``312.000 TFLOP/s``."""
    return f"{v:{spec}} {TFLOPS}"


# ------------------------------------------------------------------ percentages
def pct_text(v: float, spec: str = ".1f", space: bool = False) -> str:
    """A percentage already in percent: ``12.3%`` (``12.3 %`` with ``space``)."""
    return f"{v:{spec}}{' ' if space else ''}{PCT}"


def pct_short(v: float) -> str:
    """A percentage in running text, two significant digits below 10: ``42%``, ``3.5%``,
    ``0.12%``."""
    return pct_text(v, ".0f" if abs(v) >= 10 else ".2g")


def bytes_brief(n: float | None) -> str:
    """A byte count in running text, three significant digits, SI: ``512 B``, ``8.2 kB``,
    ``1.5 MB``, ``3.1 GB``; ``-`` for None and NaN."""
    if n is None or n != n:
        return "-"
    v = float(n)
    for unit, size in reversed(BYTE_UNITS[:3]):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:,.0f} {B}"


def percent(part: float, whole: float, spec: str = ".1f") -> str:
    """``part`` as a percentage of ``whole``: ``12.3%`` ("" when ``whole`` is 0)."""
    return pct_text(100.0 * part / whole, spec) if whole else ""
