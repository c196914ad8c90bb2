"""The protobuf wire format, read with numpy across many messages at once.

XPlane files hold millions of small messages (events, their stats) of a few fields each.
:func:`scan` reads the next field of *every* message still open in one round of numpy
operations (tags, varints, fixed values, lengths), so the Python interpreter runs once per
field *position* (a message's first field, its second ...), not once per field.  What cannot be
spread across messages -- the repeated field that chains one line's events, one after the other
-- is followed by :func:`chain_run`: at every byte that could start an event the length is decoded
as if one did, and the chain from the first event is found by pointer doubling (log2 of its length
numpy rounds).  The few other fields of the big messages are walked by :func:`walk`, one Python
step per field.  :func:`ragged_arange` and :func:`intern_ranges` gather and compare byte ranges
of the file in numpy.

Every read is bounded by the end of the message it is in (the file's end at the top): a length,
varint or fixed value that runs past it, a varint over 10 bytes, a wire type protobuf 3 does
not use, or a known field of the wrong wire type raises :class:`WireError` with the byte offset.
Nothing recurses: the reader descends a fixed number of levels (space, plane, line, event, stat),
so input nested ten thousand deep costs no stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .schema import FIELDS, FIXED32, FIXED64, LEN, VARINT, VARINT_MAX, WIRE_NAMES, WIRE_TYPES

#: when no more than this many messages are still open after :data:`_ROUNDS_BEFORE_SCALAR`
#: rounds, their remaining fields are walked one by one (a message of a million stats would
#: otherwise cost a million numpy rounds)
_SCALAR_BELOW = 64
_ROUNDS_BEFORE_SCALAR = 16
#: messages read per chunk by :func:`scan`
_SCAN_CHUNK = 1 << 19
#: a message over this many bytes has its chained runs (a line's events) followed in numpy
_CHAIN_BYTES = 1 << 12
#: a chained run shorter than this ends chaining in its message (runs cut up by other fields)
_CHAIN_MIN = 16
#: bytes per chunk in :func:`hash_ranges` and :func:`intern_ranges` (bounds the index arrays)
_CHUNK_BYTES = 1 << 24


class WireError(Exception):
    """Bytes that are not the message they should be: ``offset`` is the byte of the file where
    the problem is, ``problem`` says what it is."""

    def __init__(self, offset: int, problem: str) -> None:
        super().__init__(f"byte {offset:,}: {problem}")
        self.offset = int(offset)
        self.problem = problem


def _expected(message: str) -> np.ndarray:
    """Per field number below 64: the wire type the field must have (255: any, not read)."""
    out = np.full(64, 255, dtype=np.uint8)
    for num, (_, wire) in FIELDS[message].items():
        out[num] = wire
    return out


_EXPECTED = {m: _expected(m) for m in FIELDS}


def varints(u8: np.ndarray, pos: np.ndarray, end: np.ndarray, what: str = "varint") -> tuple[np.ndarray, np.ndarray]:
    """The varints starting at ``pos`` (int64 offsets), none allowed to run to ``end`` (int64,
    exclusive, per varint): (uint64 values, int64 sizes in bytes).  A value over 64 bits keeps
    its low 64 bits, as protobuf does.  Bytes are read clamped to the buffer and the bounds
    checked once at the end."""
    last = u8.size - 1
    b = u8[np.minimum(pos, last)]
    val = (b & 0x7F).astype(np.uint64)
    size = np.ones(pos.size, dtype=np.int64)
    idx = np.flatnonzero(b >= 0x80)
    for k in range(1, VARINT_MAX):
        if not idx.size:
            break
        b = u8[np.minimum(pos[idx] + k, last)]
        val[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        size[idx] += 1
        idx = idx[b >= 0x80]
    over = pos + size > end
    if over.any():
        raise WireError(int(pos[np.argmax(over)]), f"a {what} runs past the end of its message")
    if idx.size:
        raise WireError(int(pos[idx[0]]), f"a {what} is longer than {VARINT_MAX} bytes (corrupt)")
    return val, size


def _fixed(u8: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned values of ``width`` bytes at ``pos`` (bounds already checked)."""
    val = np.zeros(pos.size, dtype=np.uint64)
    for k in range(width):
        val |= u8[pos + k].astype(np.uint64) << np.uint64(8 * k)
    return val


def signed(v: np.ndarray) -> np.ndarray:
    """int64 values of varints written from int64s (two's complement over 64 bits)."""
    return v.view(np.int64)


@dataclass
class Round:
    """One field of each of some messages (or, after the switch to walking, several fields of
    a few messages, in order).  ``msg``: int64 index of the message; ``num``: field number
    (int64); ``wire``: wire type; ``value``: uint64, the varint or fixed value, or the length of a
    length-delimited field; ``pos``: int64 byte offset of a length-delimited field's payload."""

    msg: np.ndarray
    num: np.ndarray
    wire: np.ndarray
    value: np.ndarray
    pos: np.ndarray

    def of(self, num: int) -> np.ndarray:
        """The positions in this round of field ``num``."""
        return np.flatnonzero(self.num == num)


def scan(u8: np.ndarray, starts: np.ndarray, ends: np.ndarray, message: str) -> Iterator[Round]:
    """Every field of the messages ``starts[i]:ends[i]`` (int64 offsets into ``u8``), in rounds:
    round k holds the k-th field of each message that has one, a chunk of :data:`_SCAN_CHUNK`
    messages at a time (bounded temporaries).  Raises :class:`WireError` on bytes that are not
    a ``message`` (see the module docstring)."""
    for a in range(0, starts.size, _SCAN_CHUNK):
        for r in _scan(u8, starts[a:a + _SCAN_CHUNK], ends[a:a + _SCAN_CHUNK], message):
            if a:
                r.msg = r.msg + a
            yield r


def _scan(u8: np.ndarray, starts: np.ndarray, ends: np.ndarray, message: str) -> Iterator[Round]:
    expected = _EXPECTED[message]
    idx = np.flatnonzero(starts < ends)
    cur, end = starts[idx].astype(np.int64), ends[idx].astype(np.int64)
    rounds = 0
    while idx.size:
        if idx.size <= _SCALAR_BELOW and rounds >= _ROUNDS_BEFORE_SCALAR:
            yield _walked(u8, idx, cur, end, message)
            return
        rounds += 1
        tag, tsize = varints(u8, cur, end, f"field tag of an {message}")
        at = cur
        cur = cur + tsize
        num = (tag >> np.uint64(3)).astype(np.int64)
        wire = (tag & np.uint64(7)).astype(np.uint8)
        _check_wire(num, wire, at, expected, message)
        value = np.zeros(idx.size, dtype=np.uint64)
        pos = cur.copy()
        for w, width in ((VARINT, 0), (FIXED64, 8), (FIXED32, 4), (LEN, 0)):
            sel = np.flatnonzero(wire == w)
            if not sel.size:
                continue
            c, e = cur[sel], end[sel]
            if w == VARINT:
                value[sel], size = varints(u8, c, e, f"varint of an {message}")
                cur[sel] = c + size
            elif w == LEN:
                length, size = varints(u8, c, e, f"length of a field of an {message}")
                start = c + size
                room = e - start
                over = length > room.astype(np.uint64)
                if over.any():
                    k = int(np.argmax(over))
                    raise WireError(int(at[sel[k]]), f"field {int(num[sel[k]])} of an {message} declares "
                                    f"{int(length[k]):,} bytes, more than the {int(room[k]):,} left in its message")
                value[sel] = length
                pos[sel] = start
                cur[sel] = start + length.astype(np.int64)
            else:
                over = c + width > e
                if over.any():
                    k = int(np.argmax(over))
                    raise WireError(int(at[sel[k]]), f"a {width * 8}-bit value of an {message} runs past the end "
                                    "of its message")
                value[sel] = _fixed(u8, c, width)
                cur[sel] = c + width
        yield Round(idx, num, wire, value, pos)
        more = cur < end
        idx, cur, end = idx[more], cur[more], end[more]


def _check_wire(num: np.ndarray, wire: np.ndarray, at: np.ndarray, expected: np.ndarray, message: str) -> None:
    """A wire type protobuf 3 does not use, field number 0, or a known field of the wrong wire
    type: :class:`WireError` at the first."""
    want = expected[np.minimum(num, 63)]
    bad = ~np.isin(wire, list(WIRE_TYPES)) | (num == 0) | ((num < 64) & (want != 255) & (want != wire))
    if not bad.any():
        return
    k = int(np.argmax(bad))
    n, w = int(num[k]), int(wire[k])
    if n == 0:
        raise WireError(int(at[k]), f"field number 0 in an {message} (corrupt)")
    if w not in WIRE_TYPES:
        raise WireError(int(at[k]), f"wire type {w} ({WIRE_NAMES[w]}) in field {n} of an {message}: not used by "
                        "XPlane (corrupt)")
    name, want_w = FIELDS[message][n]
    raise WireError(int(at[k]), f"field {n} ({name}) of an {message} has wire type {w} ({WIRE_NAMES[w]}), "
                    f"not {want_w} ({WIRE_NAMES[want_w]})")


def _walked(u8: np.ndarray, idx: np.ndarray, cur: np.ndarray, end: np.ndarray, message: str) -> Round:
    """The remaining fields of a few messages (``idx``, from ``cur`` to ``end``), walked one by one."""
    buf = u8.data.cast("B") if isinstance(u8, np.ndarray) else u8
    parts = [walk(buf, int(c), int(e), message) for c, e in zip(cur.tolist(), end.tolist())]
    msg = np.concatenate([np.full(p.num.size, m, dtype=np.int64) for m, p in zip(idx.tolist(), parts)])
    return Round(msg, *(np.concatenate([getattr(p, f) for p in parts]) for f in ("num", "wire", "value", "pos")))


@dataclass
class Fields:
    """The fields of one message, in order (the columns of :class:`Round` without ``msg``)."""

    num: np.ndarray
    wire: np.ndarray
    value: np.ndarray
    pos: np.ndarray

    def of(self, num: int) -> np.ndarray:
        return np.flatnonzero(self.num == num)


def walk(buf, start: int, end: int, message: str, chain: int | None = None, u8: np.ndarray | None = None) -> Fields:
    """The fields of one message ``buf[start:end]`` (``buf``: bytes or a byte memoryview), one
    Python step per field; a one-byte tag and a one-byte length are read without a call.

    ``chain``: the number of a repeated length-delimited field (a line's events): a run of it
    is followed by :func:`chain_run` in numpy (``u8``: the same bytes) instead of one step per
    element, in a message over :data:`_CHAIN_BYTES` bytes.  Raises :class:`WireError` as
    :func:`scan` does."""
    chain_tag = (chain << 3 | LEN) if chain is not None and u8 is not None and end - start > _CHAIN_BYTES else -1
    segments: list[Fields] = []
    nums: list[int] = []
    wires: list[int] = []
    vals: list[int] = []
    poss: list[int] = []
    add_n, add_w, add_v, add_p = nums.append, wires.append, vals.append, poss.append
    want = _EXPECTED[message].tolist()
    where = "the file" if message == "XSpace" else "its message"
    p = start
    while p < end:
        at = p
        t = buf[p]
        if t == chain_tag:
            run, p = chain_run(u8, p, end, chain_tag)
            if run.num.size:
                segments += [_fields(nums, wires, vals, poss), run]
                nums, wires, vals, poss = [], [], [], []
                add_n, add_w, add_v, add_p = nums.append, wires.append, vals.append, poss.append
            if run.num.size < _CHAIN_MIN:  # short runs between other fields: walk the rest
                chain_tag = -1
            if p >= end:
                break
            at = p
            t = buf[p]
        if t < 0x80:
            p += 1
        else:
            t, p = _varint(buf, p, end, f"field tag of an {message}")
        w, num = t & 7, t >> 3
        if w == 3 or w == 4 or w > 5 or num == 0 or (num < 64 and want[num] != 255 and want[num] != w):
            _check_wire(np.array([num]), np.array([w], dtype=np.uint8), np.array([at]), _EXPECTED[message], message)
        if w == LEN:
            if p >= end:
                raise WireError(at, f"field {num} of an {message} runs past the end of {where}")
            n = buf[p]
            if n < 0x80:
                p += 1
            else:
                n, p = _varint(buf, p, end, f"length of field {num} of an {message}")
            if n > end - p:
                raise WireError(at, f"field {num} of an {message} declares {n:,} bytes, more than the {end - p:,} "
                                f"left in {where}" + (" (the file is cut short?)" if message == "XSpace" else ""))
            add_p(p)
            p += n
        elif w == VARINT:
            n, p = _varint(buf, p, end, f"varint of field {num} of an {message}")
            add_p(p)
        else:
            width = 8 if w == FIXED64 else 4
            if p + width > end:
                raise WireError(at, f"a {width * 8}-bit value of an {message} runs past the end of {where}")
            n = int.from_bytes(buf[p:p + width], "little")
            add_p(p)
            p += width
        add_n(num)
        add_w(w)
        add_v(n)
    last = _fields(nums, wires, vals, poss)
    if not segments:
        return last
    segments.append(last)
    return Fields(*(np.concatenate([getattr(f, c) for f in segments]) for c in ("num", "wire", "value", "pos")))


def _fields(nums: list[int], wires: list[int], vals: list[int], poss: list[int]) -> Fields:
    return Fields(np.array(nums, dtype=np.int64), np.array(wires, dtype=np.uint8), np.array(vals, dtype=np.uint64),
                  np.array(poss, dtype=np.int64))


def chain_run(u8: np.ndarray, start: int, end: int, tag: int) -> tuple[Fields, int]:
    """The run of length-delimited fields with the one-byte ``tag`` that starts at ``start``
    (a line's events), found in numpy: at every byte equal to ``tag`` the length varint is
    decoded as if a field started there, giving where the next would start; the chain from
    ``start`` is then followed by pointer doubling (``log2`` of its length rounds over the
    candidates).  Gives the run's fields and where it stops: at the first field of another
    tag, at ``end``, or at an element whose length is bad (:func:`walk` then reads it again and
    says what is wrong)."""
    cand = np.flatnonzero(u8[start:end] == tag).astype(np.int64) + start
    c = cand.size
    length, size, ok = varints_lenient(u8, cand + 1, end)
    room = end - (cand + 1 + size)
    ok &= length <= np.maximum(room, 0).astype(np.uint64)
    nxt = np.where(ok, cand + 1 + size + length.astype(np.int64), end)
    j = np.searchsorted(cand, nxt)
    hit = ok & (j < c)
    hit[hit] = cand[j[hit]] == nxt[hit]
    jump = np.append(np.where(hit, j, c), c)
    chain = np.zeros(1, dtype=np.int64)
    while True:  # chain holds its first 2**k elements; jump goes 2**k ahead
        more = jump[chain]
        more = more[more != c]
        chain = np.concatenate((chain, more))
        if more.size < chain.size - more.size or not more.size:
            break
        jump = jump[jump]
    if not ok[chain[-1]]:  # the last one's length is bad: walk reads it and says what is wrong
        resume = int(cand[chain[-1]])
        chain = chain[:-1]
    else:
        resume = int(nxt[chain[-1]])
    pos = cand[chain] + 1 + size[chain]
    return Fields(np.full(chain.size, tag >> 3, dtype=np.int64), np.full(chain.size, LEN, dtype=np.uint8),
                  length[chain], pos), resume


def varints_lenient(u8: np.ndarray, pos: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`varints` that does not raise: (uint64 values, int64 sizes, bool ok) where ok is
    False for a varint that runs to ``end`` or over 10 bytes."""
    n = pos.size
    val = np.zeros(n, dtype=np.uint64)
    size = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(pos < end)
    p = pos[idx]
    for k in range(VARINT_MAX):
        if not idx.size:
            break
        b = u8[p]
        val[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        done = b < 0x80
        size[idx[done]] = k + 1
        ok[idx[done]] = True
        more = ~done & (p + 1 < end)
        idx, p = idx[more], p[more] + 1
    return val, size, ok


def _varint(buf, p: int, end: int, what: str) -> tuple[int, int]:
    """One varint at ``p``: (value, offset after it)."""
    start, value, shift = p, 0, 0
    while True:
        if p >= end:
            raise WireError(start, f"a {what} runs past the end of its message")
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFF_FFFF_FFFF_FFFF, p
        shift += 7
        if shift >= 7 * VARINT_MAX:
            raise WireError(start, f"a {what} is longer than {VARINT_MAX} bytes (corrupt)")


def ragged_arange(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lens)])`` without a Python step."""
    keep = lens > 0
    starts, lens = starts[keep].astype(np.int64), lens[keep].astype(np.int64)
    if not lens.size:
        return np.zeros(0, dtype=np.int64)
    total = int(lens.sum())
    step = np.ones(total, dtype=np.int64)
    heads = np.cumsum(lens)[:-1]
    step[0] = starts[0]
    step[heads] = starts[1:] - (starts[:-1] + lens[:-1] - 1)
    return np.cumsum(step)


#: an odd multiplier for the polynomial hash of byte ranges (mod 2**64)
_HASH_BASE = np.uint64(0x100000001B3)


def hash_ranges(u8: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each byte range (uint64; length mixed in), in numpy."""
    n = starts.size
    out = lens.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    if not n or not int(lens.max(initial=0)):
        return out
    powers = np.cumprod(np.full(int(lens.max()), _HASH_BASE, dtype=np.uint64))
    ends = np.cumsum(lens)
    a = 0
    while a < n:
        base = int(ends[a - 1]) if a else 0
        b = max(int(np.searchsorted(ends, base + _CHUNK_BYTES, side="right")), a + 1)
        ln = lens[a:b].astype(np.int64)
        nz = np.flatnonzero(ln > 0)
        if nz.size:
            flat = ragged_arange(starts[a:b][nz], ln[nz])
            within = flat - np.repeat(starts[a:b][nz].astype(np.int64) - 0, ln[nz])
            terms = u8[flat].astype(np.uint64) * powers[within]
            heads = np.concatenate(([0], np.cumsum(ln[nz])[:-1]))
            out[a + nz] += np.add.reduceat(terms, heads)
        a = b
    return out


def intern_ranges(u8: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal byte ranges get equal codes: (int32 code per range, int64 index of the first range
    of each code), codes in first-seen order.  Hashes find the candidates, then every range is
    compared byte for byte with its code's first range (a collision splits the codes exactly)."""
    n = starts.size
    if not n:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    h = hash_ranges(u8, starts, lens)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    rep = first[inv]
    if not _same_bytes(u8, starts, rep, lens):  # a hash collision (never seen): intern exactly
        seen: dict[bytes, int] = {}
        buf = u8.data.cast("B")
        inv = np.fromiter((seen.setdefault(bytes(buf[s:s + m]), len(seen)) for s, m in
                           zip(starts.tolist(), lens.tolist())), dtype=np.int64, count=n)
        _, first = np.unique(inv, return_index=True)
        rep = first[inv]
    # renumber in first-seen order
    order = np.argsort(first, kind="stable")
    code_of = np.empty(order.size, dtype=np.int32)
    code_of[order] = np.arange(order.size, dtype=np.int32)
    return code_of[inv], first[order].astype(np.int64)


def _same_bytes(u8: np.ndarray, starts: np.ndarray, rep: np.ndarray, lens: np.ndarray) -> bool:
    """Does every range hold the same bytes as the range ``rep[i]`` (same lengths included)?"""
    if not np.array_equal(lens, lens[rep]):
        return False
    other = rep != np.arange(rep.size)
    if not other.any():
        return True
    s, r, ln = starts[other], starts[rep[other]], lens[other]
    ends = np.cumsum(ln)
    a = 0
    while a < s.size:
        base = int(ends[a - 1]) if a else 0
        b = max(int(np.searchsorted(ends, base + _CHUNK_BYTES, side="right")), a + 1)
        if not np.array_equal(u8[ragged_arange(s[a:b], ln[a:b])], u8[ragged_arange(r[a:b], ln[a:b])]):
            return False
        a = b
    return True
