"""Every event's args as JSON, written with numpy: the Kineto model keeps one blob of JSON
objects (``args_blob`` + ``args_offsets``) and decodes an event's when it is asked for.

An event's args are *rows* (:class:`ArgRows`: event, key, where the value's text is); the
writer (:func:`write_blob`) sorts them by event and copies, for each row, three byte ranges --
``{"key":`` or ``,"key":`` (with an opening quote for a string), the value, and the closing quote
and brace -- from two sources: the file itself (stat strings of plain printable ASCII, copied
verbatim) and a pool of texts made once (:class:`TextPool`: the keys, numbers formatted by numpy,
strings that needed escaping, arrays).  No Python step per row or per event.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import msgspec
import numpy as np

from .wire import gather_ranges, ragged_arange

#: where a row's value text is
SRC_POOL, SRC_FILE = 0, 1
#: blobs up to this size are returned as bytes; bigger ones live in an anonymous memory map
_MAP_BYTES = 1 << 24
#: rows written per pass (bounds the segment arrays)
_ROWS_PER_PASS = 1 << 20
_SUFFIXES = (b"", b'"', b"}", b'"}')


class TextPool:
    """Texts appended once, referred to by (start, length) in :meth:`array`."""

    def __init__(self) -> None:
        self._parts: list[np.ndarray] = []
        self._size = 0

    def _add(self, arr: np.ndarray) -> int:
        base = self._size
        self._parts.append(arr)
        self._size += arr.size
        return base

    def texts(self, pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """Add ``pieces``: their (int64 starts, int64 lengths)."""
        lens = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        base = self._add(np.frombuffer(b"".join(pieces), dtype=np.uint8))
        starts = base + np.concatenate(([0], np.cumsum(lens)[:-1])) if lens.size else np.zeros(0, np.int64)
        return starts.astype(np.int64), lens

    def fixed(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add a numpy bytes array (``S<w>``, NUL padded): each element's (start, length)."""
        if not arr.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        width = arr.dtype.itemsize
        base = self._add(np.ascontiguousarray(arr).view(np.uint8).reshape(-1))
        return base + np.arange(arr.size, dtype=np.int64) * width, np.char.str_len(arr).astype(np.int64)

    def array(self) -> np.ndarray:
        return np.concatenate(self._parts) if self._parts else np.zeros(0, np.uint8)


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


def write_blob(n_events: int, rows: ArgRows, keys: list[str], pool: TextPool, file_u8: np.ndarray):
    """(blob, int64 offsets of length n + 1): event ``i``'s args are
    ``blob[offsets[i]:offsets[i + 1]]``, a JSON object of its rows in the order given (rows of
    one event keep their order), empty for an event without rows."""
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
    p_start, p_len = pool.texts([lead + e + b":" + q for e in enc for lead in (b",", b"{") for q in (b"", b'"')])
    s_start, s_len = pool.texts(list(_SUFFIXES))
    pool_u8 = pool.array()
    pre = rows.key[order].astype(np.int64) * 4 + first * 2 + is_file
    suf = last * 2 + is_file
    total_row = p_len[pre] + rows.length[order] + s_len[suf]
    per_event = np.bincount(ev, weights=total_row, minlength=n_events).astype(np.int64) if n else \
        np.zeros(n_events, dtype=np.int64)
    offsets = np.zeros(n_events + 1, dtype=np.int64)
    np.cumsum(per_event, out=offsets[1:])
    size = int(offsets[-1])
    blob: bytes | mmap.mmap
    mm = mmap.mmap(-1, size) if size > _MAP_BYTES else None
    out = np.frombuffer(mm, dtype=np.uint8) if mm is not None else np.empty(size, dtype=np.uint8)
    row_end = np.cumsum(total_row)
    for a in range(0, n, _ROWS_PER_PASS):
        b = min(a + _ROWS_PER_PASS, n)
        o = order[a:b]
        dst = row_end[a:b] - total_row[a:b]
        pl, vl = p_len[pre[a:b]], rows.length[o]
        # prefix and suffix from the pool; the value from the pool or the file
        gather_ranges(out, dst, pool_u8, p_start[pre[a:b]], pl)
        gather_ranges(out, dst + pl + vl, pool_u8, s_start[suf[a:b]], s_len[suf[a:b]])
        f = is_file[a:b]
        gather_ranges(out, (dst + pl)[~f], pool_u8, rows.start[o][~f], vl[~f])
        gather_ranges(out, (dst + pl)[f], file_u8, rows.start[o][f], vl[f])
    if mm is None:
        blob = out.tobytes()
    else:
        del out
        blob = mm
    return blob, offsets
