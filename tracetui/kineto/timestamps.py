"""Exact parsing of Kineto timestamps.

Kineto writes ``ts`` in microseconds since the epoch with nanosecond (sometimes finer)
fractions, e.g. ``1712195495519689.047``: 19 significant digits, more than a float64
holds (its spacing at 1.7e15 is 0.25 µs).  We split every number into its integer
microseconds (int64, exact) and its fraction (float64), then store times as float64
microseconds *relative to the trace origin* (``origin_us``, an integer), which keeps
sub-nanosecond precision for any trace shorter than a few days.

The parse is vectorised over the bytes of all timestamps joined together, so two
million timestamps cost a few numpy passes, not two million Python calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _slow_parse(tok: bytes) -> tuple[int, float]:
    """Exponent notation, NaN strings and other oddities: parse one token in Python."""
    s = tok.decode("ascii", "replace").strip().strip('"')
    try:
        if "e" in s.lower() or not s.replace(".", "", 1).lstrip("-").isdigit():
            v = float(s)
            if not np.isfinite(v):
                return 0, float("nan")
            i = int(np.floor(v))
            if abs(i) >= 2**63:
                return 0, float("nan")
            return i, v - i
        neg = s.startswith("-")
        s2 = s.lstrip("-")
        ip, _, fp = s2.partition(".")
        i = int(ip or "0")
        if i >= 2**62:
            return 0, float("nan")
        f = float("0." + fp) if fp else 0.0
        if neg:
            # -12.25 -> integer -13, fraction 0.75
            if f:
                return -i - 1, 1.0 - f
            return -i, 0.0
        return i, f
    except (ValueError, OverflowError):
        return 0, float("nan")


_MAX_FAST_WIDTH = 28


#: digits after the point the fixed-point fast path takes (Kineto writes 0 or 3)
_MAX_FIXED_DIGITS = 9
_FIXED_BYTES = b"0123456789.,"
_POW10 = np.array([10**k for k in range(_MAX_FIXED_DIGITS + 1)], dtype=np.int64)


def _parse_fixed_point(tokens: Sequence[bytes | memoryview]) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case in one msgspec call: every token is plain digits with at most one
    point (``1419247332972.313``, ``1419247333291.7``, ``1669783687352244``).  With the
    points removed the tokens are integers (units of 10^-K µs, K the token's digits after
    the point), decoded at once; integer and fraction come out of them with the same float
    operations as the general parser (fraction = sum of digit x 0.1, 0.01, ... in that
    order), so the result is identical.  None (the caller takes the general parser) for
    anything else: missing or empty tokens, signs, exponents, leading zeros, more than
    :data:`_MAX_FIXED_DIGITS` digits after the point, integer parts of 19+ digits."""
    import msgspec

    n = len(tokens)
    joined = b",".join(tokens)
    if joined.translate(None, _FIXED_BYTES):
        return None  # a sign, an exponent, a quote, ...
    digits = np.zeros(n, dtype=np.int64)  # digits after the point, per token
    if b"." in joined:
        buf = np.frombuffer(joined, dtype=np.uint8)
        ends = np.flatnonzero(buf == 44)
        if ends.size != n - 1:
            return None
        ends = np.append(ends, len(joined))
        dot_at = np.flatnonzero(buf == 46)
        tok = np.searchsorted(ends, dot_at)  # the token of each point
        starts = np.concatenate(([0], ends[:-1] + 1))
        after = ends[tok] - dot_at - 1
        if (np.any(tok[1:] == tok[:-1]) or np.any(dot_at <= starts[tok]) or np.any(after < 1)
                or np.any(after > _MAX_FIXED_DIGITS)):
            return None  # two points in a token, nothing before or after a point
        digits[tok] = after
        joined = joined.replace(b".", b"")
    try:
        values = np.array(msgspec.json.decode(b"[" + joined + b"]", type=list[int]), dtype=np.int64)
    except (msgspec.DecodeError, OverflowError):
        return None  # an empty token, a leading zero, beyond int64
    if values.shape != (n,):
        return None
    unit = _POW10[digits]
    ints = values // unit
    if ints.size and int(ints.max()) >= 10**18:  # the general parser sends these to _slow_parse
        return None
    fracs = np.zeros(n, dtype=np.float64)
    most = int(digits.max()) if n else 0
    if most:
        rest = values - ints * unit
        scale = 0.1
        for k in range(1, most + 1):
            inside = digits >= k
            digit = (rest // _POW10[np.maximum(digits - k, 0)]) % 10
            fracs += np.where(inside, digit.astype(np.float64) * scale, 0.0)
            scale /= 10.0
    return ints, fracs


def parse_timestamps(tokens: Sequence[bytes | memoryview], quoted: list[int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Parse JSON number tokens into (integer µs as int64, fractional µs as float64).

    Missing tokens (empty) give integer 0 and fraction NaN so callers can tell them apart.
    A number written as a string (``"5"``) is read as that number; ``quoted``, when given,
    gets the index of each such token (the caller counts them as repairs).  Works column by
    column over a fixed-width byte matrix (n x width), so memory stays at a few bytes per
    token per pass.
    """
    n = len(tokens)
    if n and (fixed := _parse_fixed_point(tokens)) is not None:
        return fixed
    ints = np.zeros(n, dtype=np.int64)
    fracs = np.zeros(n, dtype=np.float64)
    if n == 0:
        return ints, fracs
    parts = b"\x00".join(tokens).split(b"\x00")
    if len(parts) != n:  # a token holding a NUL byte: parse them one by one
        for i, tok in enumerate(tokens):
            ints[i], fracs[i] = _slow_parse(bytes(tok)) if len(tok) else (0, np.nan)
        if quoted is not None:
            quoted += [i for i, tok in enumerate(tokens) if bytes(tok[:1]) == b'"' and np.isfinite(fracs[i])]
        return ints, fracs
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=n)
    width = int(min(lens.max(), _MAX_FAST_WIDTH)) or 1
    mat = np.array(parts, dtype=f"S{width}").view(np.uint8).reshape(n, width)
    ints, fracs = _parse_matrix(parts, lens, width, mat, ints, fracs)
    if quoted is not None:
        quoted += np.flatnonzero((mat[:, 0] == 0x22) & np.isfinite(fracs)).tolist()
    return ints, fracs


def _parse_matrix(parts: list[bytes], lens: np.ndarray, width: int, mat: np.ndarray, ints: np.ndarray,
                  fracs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The general parse of ``parts`` (``mat``: their first ``width`` bytes, one row each)."""
    n = len(parts)
    bad = (lens == 0) | (lens > width)
    dot_pos = lens.copy()  # index of "." in each token, or its length when it has none
    seen_dot = np.zeros(n, dtype=bool)
    ndots = np.zeros(n, dtype=np.int8)
    for c in range(width):
        col = mat[:, c]
        is_dot = col == 46
        ndots += is_dot
        first = is_dot & ~seen_dot
        dot_pos[first] = c
        seen_dot |= is_dot
        present = c < lens
        d = col.astype(np.int64) - 48
        is_digit = (d >= 0) & (d <= 9)
        bad |= present & ~(is_digit | is_dot)
    bad |= (ndots > 1) | (dot_pos == 0) | (dot_pos > 18)
    scale = 0.1
    for c in range(width):
        col = mat[:, c].astype(np.int64) - 48
        in_int = c < dot_pos
        ints = np.where(in_int, ints * 10 + np.clip(col, 0, 9), ints)
    # fraction: column c contributes digit * 10^-(c - dot_pos)
    for k in range(1, width):
        c = dot_pos + k
        inside = (c < lens) & ~bad
        if not inside.any():
            break
        cc = np.minimum(c, width - 1)
        digits = mat[np.arange(n), cc].astype(np.float64) - 48.0
        fracs += np.where(inside, digits * scale, 0.0)
        scale /= 10.0
    for i in np.flatnonzero(bad):
        tok = bytes(parts[i])
        if not tok:
            ints[i], fracs[i] = 0, np.nan
        else:
            ints[i], fracs[i] = _slow_parse(tok)
    return ints, fracs


def relative_times(ints: np.ndarray, fracs: np.ndarray, origin_us: int | None = None) -> tuple[np.ndarray, int]:
    """Turn (int µs, frac µs) into float64 µs relative to ``origin_us`` (default: the minimum)."""
    valid = ~np.isnan(fracs)
    if origin_us is None:
        origin_us = int(ints[valid].min()) if valid.any() else 0
    span = max(abs(int(ints[valid].max()) - origin_us), abs(int(ints[valid].min()) - origin_us)) if valid.any() else 0
    if span < 2**62:
        rel = (ints - origin_us).astype(np.float64) + np.where(valid, fracs, 0.0)
    else:  # absurd spread (int64 difference would overflow): float math, sub-µs digits lost
        rel = (ints.astype(np.float64) - float(origin_us)) + np.where(valid, fracs, 0.0)
    rel[~valid] = np.nan
    return rel, origin_us


#: A timestamp this far (µs) before the median of a trace's event timestamps is an outlier:
#: 24 hours.  Real traces span seconds to minutes; the outliers seen are placeholders at
#: ``ts`` 0.0 beside timestamps ~1e12 (µs since boot) or ~1.7e15 (µs since the epoch).
OUTLIER_BEFORE_MEDIAN_US = 86_400_000_000


def choose_origin(ints: np.ndarray, fracs: np.ndarray, meta: np.ndarray) -> tuple[int, np.ndarray]:
    """The trace origin (integer µs) and the events whose timestamp is an outlier.

    Rule (docs/origin.md): take the median of the integer µs of every non-metadata event
    with a timestamp; a timestamp more than :data:`OUTLIER_BEFORE_MEDIAN_US` (24 h) before
    that median is an outlier.  The origin is the smallest timestamp of a non-metadata
    event that is not an outlier (metadata rows, ``ph`` M, name threads and processes;
    their ``ts`` is often 0.0 or a thread's creation time, not an event).  Returns (origin,
    mask of non-metadata events with an outlier timestamp).  Numpy only: one median and a
    few passes.
    """
    valid = ~np.isnan(fracs)
    ev = valid & ~meta
    outlier = np.zeros(ints.shape[0], dtype=bool)
    if not ev.any():
        return (int(ints[valid].min()) if valid.any() else 0), outlier
    med = int(np.median(ints[ev]))
    low = valid & (ints < med - OUTLIER_BEFORE_MEDIAN_US)
    ok = ev & ~low
    origin = int(ints[ok].min())
    return origin, low & ~meta
