"""Every event's args as JSON: the Kineto model keeps one blob of JSON objects
(``args_blob`` + ``args_offsets``) and decodes an event's when it is asked for.

An event's args are *rows* (:class:`ArgRows`: event, key, where the value's text is); the
writer (:func:`write_blob`) sorts them by event (numpy) and joins, for each row, three byte
strings -- ``{"key":`` or ``,"key":`` (with an opening quote for a string), the value, and the
closing quote and brace -- taken from two sources: the file itself (stat strings of plain
printable ASCII, sliced verbatim) and a pool of texts made once (:class:`TextPool`: the keys,
numbers formatted by numpy, strings that needed escaping, arrays).  The slicing and joining are
``map``/``zip`` over the rows in C: no Python bytecode runs per row or per event.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from itertools import chain

import msgspec
import numpy as np

from .wire import ragged_arange

#: where a row's value text is
SRC_POOL, SRC_FILE = 0, 1
#: blobs up to this size are returned as bytes; bigger ones live in an anonymous memory map
_MAP_BYTES = 1 << 24
#: rows joined per pass (bounds the lists of pieces)
_ROWS_PER_PASS = 1 << 18
_SUFFIXES = (b"", b'"', b"}", b'"}')


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

    def fixed(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add the elements of a numpy bytes array (``S<w>``; ``tolist`` drops the padding)."""
        return self.texts(arr.tolist())


def int_texts(pool: TextPool, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal texts of int64 or uint64 values, formatted by numpy."""
    return pool.fixed(values.astype("S21"))


def float_texts(pool: TextPool, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JSON texts of float64 values (shortest round trip); NaN and infinities as strings."""
    text = values.astype("S32")
    bad = ~np.isfinite(values)
    if bad.any():
        text[bad] = np.char.add(np.char.add(b'"', text[bad]), b'"')
    return pool.fixed(text)


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
    is_file = rows.src[order] == SRC_FILE
    # prefixes: 4 per key (',' or '{' before, '"' after for a string copied from the file)
    enc = [msgspec.json.encode(k) for k in keys]
    prefixes = [lead + e + b":" + q for e in enc for lead in (b",", b"{") for q in (b"", b'"')]
    p_len = np.fromiter(map(len, prefixes), dtype=np.int64, count=len(prefixes))
    s_len = np.fromiter(map(len, _SUFFIXES), dtype=np.int64, count=len(_SUFFIXES))
    pre = rows.key[order].astype(np.int64) * 4 + first * 2 + is_file
    suf = last * 2 + is_file
    start, length = rows.start[order], rows.length[order]
    total_row = p_len[pre] + length + s_len[suf]
    offsets = np.zeros(n_events + 1, dtype=np.int64)
    if n:
        np.cumsum(np.bincount(ev, weights=total_row, minlength=n_events).astype(np.int64), out=offsets[1:])
    size = int(offsets[-1])
    mm = mmap.mmap(-1, size) if size > _MAP_BYTES else None
    parts: list[bytes] = []
    pool_obj = np.empty(len(pool.pieces), dtype=object)
    pool_obj[:] = pool.pieces
    for a in range(0, n, _ROWS_PER_PASS):
        b = min(a + _ROWS_PER_PASS, n)
        vals = np.empty(b - a, dtype=object)
        f = np.flatnonzero(is_file[a:b])
        p = np.flatnonzero(~is_file[a:b])
        vals[p] = pool_obj[start[a:b][p]]
        fs = start[a:b][f]
        vals[f] = list(map(data.__getitem__, map(slice, fs.tolist(), (fs + length[a:b][f]).tolist())))
        piece = b"".join(chain.from_iterable(zip(map(prefixes.__getitem__, pre[a:b].tolist()), vals.tolist(),
                                                 map(_SUFFIXES.__getitem__, suf[a:b].tolist()))))
        if mm is not None:
            mm.write(piece)
        else:
            parts.append(piece)
    if mm is None:
        return b"".join(parts), offsets
    mm.seek(0)
    return mm, offsets
