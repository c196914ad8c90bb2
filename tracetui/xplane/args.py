"""Every event's args as JSON: the Kineto model keeps one blob of JSON objects
(``args_blob`` + ``args_offsets``) and decodes an event's when it is asked for.

An event's args are *rows* (:class:`ArgRows`: event, key, what the value is); the writer
(:func:`write_blob`) sorts them by event (numpy) and writes each row as one piece,
``{"key":value`` or ``,"key":value`` (quoted for a string, ``}`` after an event's last): integers
are formatted and the pieces of integer rows put together by numpy's string functions; strings
come from the file itself (plain printable ASCII, sliced verbatim) or from a pool of texts made
once (:class:`TextPool`: escaped strings, floats, arrays).  Slicing and joining are ``map`` over
the rows in C: no Python bytecode runs per row or per event.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from operator import add

import msgspec
import numpy as np

from .wire import ragged_arange

#: what a row's value is: a text of the pool (``start``: its index), a string of the file
#: (``start``: its offset), an int64 or a uint64 (``start``: the value, or its bits)
SRC_POOL, SRC_FILE, SRC_INT, SRC_UINT = 0, 1, 2, 3
#: blobs up to this size are returned as bytes; bigger ones live in an anonymous memory map
_MAP_BYTES = 1 << 24
#: rows joined per pass (bounds the lists of pieces)
_ROWS_PER_PASS = 1 << 18
_SUFFIXES = (b"", b'"', b"}", b'"}')
#: 10**k for k = 0..19 (the decimal digits of a uint64)
_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)


class TextPool:
    """Texts made once (bytes objects), referred to by their index."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def texts(self, pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Add ``pieces``: their (int64 indexes, int64 lengths)."""
        base = len(self.pieces)
        self.pieces.extend(pieces)
        return (np.arange(base, base + len(pieces), dtype=np.int64),
                np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))


def decimal_lengths(values: np.ndarray, unsigned: bool = False) -> np.ndarray:
    """The length of each int64 (or, ``unsigned``, uint64 bits) written in decimal (int64)."""
    u = values.view(np.uint64)
    if unsigned:
        return np.maximum(1, np.searchsorted(_POW10, u, side="right"))
    neg = values < 0
    mag = np.where(neg, ~u + np.uint64(1), u)
    return np.maximum(1, np.searchsorted(_POW10, mag, side="right")) + neg


def float_texts(pool: TextPool, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JSON texts of float64 values (shortest round trip); NaN and infinities as strings."""
    text = values.astype("S32")
    bad = ~np.isfinite(values)
    if bad.any():
        text[bad] = np.strings.add(np.strings.add(b'"', text[bad]), b'"')
    return pool.texts(text.tolist())


def json_texts(pool: TextPool, values: list) -> tuple[np.ndarray, np.ndarray]:
    """JSON texts of a few Python values (strings, lists), encoded by msgspec."""
    enc = msgspec.json.encode
    return pool.texts([enc(v) for v in values])


def plain_ascii(u8: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Bool per byte range: printable ASCII without ``"`` or ``\\``, so the bytes can stand
    between quotes in JSON as they are."""
    out = np.ones(starts.size, dtype=bool)
    nz = np.flatnonzero(lens > 0)
    step = 1 << 22
    ends = np.cumsum(lens[nz])
    a = 0
    while a < nz.size:
        base = int(ends[a - 1]) if a else 0
        b = max(int(np.searchsorted(ends, base + step, side="right")), a + 1)
        sel = nz[a:b]
        flat = u8[ragged_arange(starts[sel], lens[sel])]
        bad = ((flat < 0x20) | (flat > 0x7E) | (flat == 0x22) | (flat == 0x5C)).astype(np.uint8)
        heads = np.concatenate(([0], np.cumsum(lens[sel])[:-1]))
        out[sel] = np.maximum.reduceat(bad, heads) == 0
        a = b
    return out


@dataclass
class ArgRows:
    """One row per arg: ``event`` (int64), ``key`` (int32 into the writer's keys), ``src``
    (uint8: :data:`SRC_POOL` or :data:`SRC_FILE`, a string copied from the file: quoted),
    ``start``/``length`` (int64, of the value's text in its source)."""

    event: np.ndarray
    key: np.ndarray
    src: np.ndarray
    start: np.ndarray
    length: np.ndarray

    @classmethod
    def of(cls, event: np.ndarray, key, src: int, start: np.ndarray, length: np.ndarray) -> ArgRows:
        n = event.size
        return cls(event.astype(np.int64), np.broadcast_to(np.asarray(key, dtype=np.int32), (n,)).copy(),
                   np.full(n, src, dtype=np.uint8), start.astype(np.int64), length.astype(np.int64))

    @classmethod
    def concat(cls, parts: list[ArgRows]) -> ArgRows:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) if parts else np.zeros(0, dt)
                     for f, dt in (("event", np.int64), ("key", np.int32), ("src", np.uint8), ("start", np.int64),
                                   ("length", np.int64))))


def int_rows(event: np.ndarray, key, values: np.ndarray, unsigned: bool = False) -> ArgRows:
    """Rows of integer values (int64, or uint64 bits when ``unsigned``)."""
    return ArgRows.of(event, key, SRC_UINT if unsigned else SRC_INT, values.view(np.int64),
                      decimal_lengths(values.view(np.int64), unsigned))


def write_blob(n_events: int, rows: ArgRows, keys: list[str], pool: TextPool, data: bytes):
    """(blob, int64 offsets of length n + 1): event ``i``'s args are
    ``blob[offsets[i]:offsets[i + 1]]``, a JSON object of its rows in the order given (rows of
    one event keep their order), empty for an event without rows.  ``data``: the file's bytes
    (the source of :data:`SRC_FILE` rows)."""
    order = np.argsort(rows.event, kind="stable")
    ev = rows.event[order]
    n = ev.size
    first = np.ones(n, dtype=bool)
    first[1:] = ev[1:] != ev[:-1]
    last = np.ones(n, dtype=bool)
    last[:-1] = ev[1:] != ev[:-1]
    src = rows.src[order]
    is_str = src == SRC_FILE
    # prefixes: 4 per key (',' or '{' before, '"' after for a string copied from the file)
    enc = [msgspec.json.encode(k) for k in keys]
    prefixes = [lead + e + b":" + q for e in enc for lead in (b",", b"{") for q in (b"", b'"')]
    pre_s, suf_s = np.array(prefixes), np.array(_SUFFIXES)
    pre = rows.key[order].astype(np.int64) * 4 + first * 2 + is_str
    suf = last * 2 + is_str
    del first, last, is_str
    per_row = np.fromiter(map(len, prefixes), np.int64, len(prefixes))[pre] + rows.length[order] + \
        np.fromiter(map(len, _SUFFIXES), np.int64, len(_SUFFIXES))[suf]
    offsets = np.zeros(n_events + 1, dtype=np.int64)
    if n:
        np.cumsum(np.bincount(ev, weights=per_row, minlength=n_events).astype(np.int64), out=offsets[1:])
    del per_row, ev
    size = int(offsets[-1])
    mm = mmap.mmap(-1, size) if size > _MAP_BYTES else None
    parts: list[bytes] = []
    pool_obj = np.empty(len(pool.pieces), dtype=object)
    pool_obj[:] = pool.pieces
    for a in range(0, n, _ROWS_PER_PASS):
        o = order[a:a + _ROWS_PER_PASS]
        p, f, s_, start = pre[a:a + _ROWS_PER_PASS], src[a:a + _ROWS_PER_PASS], suf[a:a + _ROWS_PER_PASS], rows.start[o]
        frag = np.empty(o.size, dtype=object)
        num = np.flatnonzero((f == SRC_INT) | (f == SRC_UINT))
        if num.size:  # integers: formatted and put together by numpy, one piece per row
            v = start[num]
            text = v.astype("S20")
            u = f[num] == SRC_UINT
            if u.any():
                text[u] = v[u].view(np.uint64).astype("S20")
            frag[num] = np.strings.add(np.strings.add(pre_s[p[num]], text), suf_s[s_[num]]).tolist()
        ps = np.flatnonzero(f == SRC_POOL)
        if ps.size:  # texts of the pool recur (refs, parsed details): one piece per distinct (prefix, text, suffix)
            combo = (p[ps] * len(pool.pieces) + start[ps]) * len(_SUFFIXES) + s_[ps]
            uniq, inv = np.unique(combo, return_inverse=True)
            u_suf, rest = uniq % len(_SUFFIXES), uniq // len(_SUFFIXES)
            u_pre, u_text = rest // max(len(pool.pieces), 1), rest % max(len(pool.pieces), 1)
            made = np.empty(uniq.size, dtype=object)
            made[:] = list(map(add, map(add, map(prefixes.__getitem__, u_pre.tolist()), pool_obj[u_text].tolist()),
                               map(_SUFFIXES.__getitem__, u_suf.tolist())))
            frag[ps] = made[inv.reshape(-1)]
        fs = np.flatnonzero(f == SRC_FILE)
        if fs.size:  # strings of the file: sliced
            b0 = start[fs]
            vals = map(data.__getitem__, map(slice, b0.tolist(), (b0 + rows.length[o[fs]]).tolist()))
            frag[fs] = list(map(add, map(add, map(prefixes.__getitem__, p[fs].tolist()), vals),
                                map(_SUFFIXES.__getitem__, s_[fs].tolist())))
        piece = b"".join(frag.tolist())
        if mm is not None:
            mm.write(piece)
        else:
            parts.append(piece)
    if mm is None:
        return b"".join(parts), offsets
    mm.seek(0)
    return mm, offsets
