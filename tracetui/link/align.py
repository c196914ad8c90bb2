"""Align two sequences of name ids by order, in O(n log n): the order step of the ET link.

:func:`align_names` pairs equal names of ``a`` and ``b`` keeping both orders (a common
subsequence, not always the longest).  It works like *patience diff*:

1. equal names at both ends of a range pair up (common prefix and suffix);
2. names that occur exactly once in both halves of the range pair up along their longest
   increasing run (found with a binary search per name), and each gap between two such
   pairs is a new, smaller range;
3. a range with no such name is aligned exactly (a longest common subsequence, bit-parallel)
   when it is small (at most :data:`EXACT_CELLS` cells: at most ~32 machine steps per item),
   else greedily: equal names pair up, and where they differ the side whose name comes
   back sooner (within :data:`LOOKAHEAD` items) skips ahead.

Each range splits into disjoint smaller ones, and each step costs a sort of its range, so
the whole costs O(n log n) for n = len(a) + len(b) in practice (the exact and greedy steps
cost O(n) per range).  ``difflib.SequenceMatcher``, used before, was
quadratic: 10 s on a 30-iteration ResNet pair.
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

#: ranges with at most this many (len(a) x len(b)) cells are aligned exactly (a longest
#: common subsequence, bit-parallel: cells / 64 machine steps, so at most ~32 steps per
#: item of the range: linear overall)
EXACT_CELLS = 4_000_000
#: how far the greedy step looks ahead for a name that comes back
LOOKAHEAD = 64


def align_names(a: np.ndarray, b: np.ndarray,
                fixed: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(ia, ib)`` (int64, both increasing) with ``a[ia] == b[ib]``.

    ``fixed``: pairs already known (both increasing), kept as they are (and returned): only
    the ranges between them are aligned."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    fa, fb = (np.zeros(0, np.int64), np.zeros(0, np.int64)) if fixed is None else map(np.asarray, fixed)
    out_a: list[int] = fa.tolist()
    out_b: list[int] = fb.tolist()
    stack = _gaps(0, a.size, 0, b.size, fa, fb)
    while stack:
        a0, a1, b0, b1 = stack.pop()
        # common prefix and suffix
        n = min(a1 - a0, b1 - b0)
        if n:
            same = a[a0:a0 + n] == b[b0:b0 + n]
            k = n if same.all() else int(np.argmin(same))
            out_a.extend(range(a0, a0 + k))
            out_b.extend(range(b0, b0 + k))
            a0, b0 = a0 + k, b0 + k
            n = min(a1 - a0, b1 - b0)
            if n:
                same = a[a1 - n:a1][::-1] == b[b1 - n:b1][::-1]
                k = n if same.all() else int(np.argmin(same))
                out_a.extend(range(a1 - k, a1))
                out_b.extend(range(b1 - k, b1))
                a1, b1 = a1 - k, b1 - k
        if a0 >= a1 or b0 >= b1:
            continue
        chain = _unique_chain(a[a0:a1], b[b0:b1])
        if chain is None:
            ia, ib = _small_or_greedy(a[a0:a1], b[b0:b1])
            out_a.extend((ia + a0).tolist())
            out_b.extend((ib + b0).tolist())
            continue
        ca, cb = chain[0] + a0, chain[1] + b0
        out_a.extend(ca.tolist())
        out_b.extend(cb.tolist())
        stack.extend(_gaps(a0, a1, b0, b1, ca, cb))
    ia = np.asarray(out_a, dtype=np.int64)
    ib = np.asarray(out_b, dtype=np.int64)
    o = np.argsort(ia, kind="stable")
    return ia[o], ib[o]


def _gaps(a0: int, a1: int, b0: int, b1: int, ca: np.ndarray, cb: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The ranges between consecutive pairs ``(ca, cb)`` inside [a0, a1) x [b0, b1), both
    sides non-empty."""
    starts_a = np.concatenate([[a0], ca + 1]).tolist()
    ends_a = np.concatenate([ca, [a1]]).tolist()
    starts_b = np.concatenate([[b0], cb + 1]).tolist()
    ends_b = np.concatenate([cb, [b1]]).tolist()
    return [(sa, ea, sb, eb) for sa, ea, sb, eb in zip(starts_a, ends_a, starts_b, ends_b) if sa < ea and sb < eb]


def _once(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Names occurring exactly once in ``x`` (sorted) and their positions."""
    vals, first, counts = np.unique(x, return_index=True, return_counts=True)
    keep = counts == 1
    return vals[keep], first[keep]


def _unique_chain(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs of names unique in both ``a`` and ``b``, along their longest increasing run."""
    va, pa = _once(a)
    vb, pb = _once(b)
    common, ia, ib = np.intersect1d(va, vb, assume_unique=True, return_indices=True)
    if not common.size:
        return None
    pa, pb = pa[ia], pb[ib]
    # a unique name whose neighbours differ on both sides is a coincidence more often than
    # a match (short random runs): only pairs with a matching neighbour split the range
    before = (pa > 0) & (pb > 0)
    after = (pa < a.size - 1) & (pb < b.size - 1)
    ctx = (before & (a[np.maximum(pa - 1, 0)] == b[np.maximum(pb - 1, 0)])) | (
        after & (a[np.minimum(pa + 1, a.size - 1)] == b[np.minimum(pb + 1, b.size - 1)]))
    pa, pb = pa[ctx], pb[ctx]
    if not pa.size:
        return None
    o = np.argsort(pa)
    keep = longest_increasing(pb[o])
    return pa[o][keep], pb[o][keep]


def longest_increasing(x: np.ndarray) -> np.ndarray:
    """Indices of a longest strictly increasing subsequence of ``x`` (patience sorting)."""
    vals = x.tolist()
    tails: list[int] = []  # value at the end of the best run of each length
    tail_at: list[int] = []  # index of that value
    prev = [-1] * len(vals)
    for i, v in enumerate(vals):
        k = bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_at.append(i)
        else:
            tails[k] = v
            tail_at[k] = i
        prev[i] = tail_at[k - 1] if k else -1
    out: list[int] = []
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        out.append(i)
        i = prev[i]
    return np.asarray(out[::-1], dtype=np.int64)


def _small_or_greedy(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if a.size * b.size <= EXACT_CELLS:
        return _lcs(a.tolist(), b.tolist())
    return _greedy(a.tolist(), b.tolist())


def _lcs(a: list[int], b: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Exact longest common subsequence, bit-parallel (one Python integer of len(b) bits
    per row of the table, Hyyro's row update): len(a) * len(b) / 64 machine steps."""
    m = len(b)
    full = (1 << m) - 1
    match: dict[int, int] = {}
    for j, x in enumerate(b):
        match[x] = match.get(x, 0) | (1 << j)
    rows = [full]
    v = full
    for x in a:
        u = v & match.get(x, 0)
        v = ((v + u) | (v - u)) & full
        rows.append(v)

    def length(i: int, j: int) -> int:  # LCS of a[:i] and b[:j]
        return j - (rows[i] & ((1 << j) - 1)).bit_count()

    ia: list[int] = []
    ib: list[int] = []
    i, j = len(a), m
    cur = length(i, j)
    while cur > 0:
        if a[i - 1] == b[j - 1] and length(i - 1, j - 1) == cur - 1:
            i, j, cur = i - 1, j - 1, cur - 1
            ia.append(i)
            ib.append(j)
        elif length(i - 1, j) == cur:
            i -= 1
        else:
            j -= 1
    return np.asarray(ia[::-1], dtype=np.int64), np.asarray(ib[::-1], dtype=np.int64)


def _greedy(a: list[int], b: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Pair equal names in step; on a difference, skip the side whose name returns sooner."""
    ia: list[int] = []
    ib: list[int] = []
    i = j = 0
    n, m = len(a), len(b)
    while i < n and j < m:
        if a[i] == b[j]:
            ia.append(i)
            ib.append(j)
            i += 1
            j += 1
            continue
        dj = _ahead(b, j, a[i])
        di = _ahead(a, i, b[j])
        if dj is None and di is None:
            i += 1
            j += 1
        elif di is None or (dj is not None and dj <= di):
            j += dj
        else:
            i += di
    return np.asarray(ia, dtype=np.int64), np.asarray(ib, dtype=np.int64)


def _ahead(seq: list[int], start: int, value: int) -> int | None:
    """Distance from ``start`` to the next ``value`` within :data:`LOOKAHEAD` items."""
    try:
        return seq.index(value, start, start + LOOKAHEAD) - start
    except ValueError:
        return None
