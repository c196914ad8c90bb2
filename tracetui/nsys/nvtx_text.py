"""NVTX range texts parsed in numpy: the names of PyTorch's ``emit_nvtx`` ops, their sequence
numbers, op ids and input sizes, and each range's args as JSON, from one byte string of
all texts of a block and their lengths (no Python object per row; strings only per
distinct name).

``emit_nvtx`` writes ``<op>[, seq = N][, op_id = N][, sizes = [[2, 3], []]][, input_op_ids =
[(1,0), ...]]`` (:data:`~.schema.EMIT_NVTX_PARTS`).  A text is an op's when a digit follows
``seq = `` or ``op_id = `` (a number of at most 18 digits, no leading zero: valid JSON, as
written), or ``[`` follows ``sizes = ``; its name is the text before the first part found.
``Input Dims`` is the sizes text itself (JSON) when it holds only brackets, digits, commas,
spaces and minus signs with balanced brackets; ``input_op_ids`` is kept as a string when it
holds only those and parentheses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..kineto import schema as ks
from . import schema

#: digits of a number kept as JSON (int64 holds 18 for sure)
MAX_DIGITS = 18
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"):ord("9") + 1] = True
_SIZES_CHARS = np.zeros(256, dtype=bool)
_SIZES_CHARS[np.frombuffer(b"[]0123456789, -", dtype=np.uint8)] = True
_INPUT_IDS_CHARS = _SIZES_CHARS.copy()
_INPUT_IDS_CHARS[np.frombuffer(b"()", dtype=np.uint8)] = True


def _byte_at(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``buf[pos]`` where ``0 <= pos < len(buf)``, else 0 (never out of range)."""
    if not buf.shape[0]:
        return np.zeros(pos.shape[0], dtype=np.uint8)
    return np.where((pos >= 0) & (pos < buf.shape[0]), buf[np.clip(pos, 0, buf.shape[0] - 1)], 0)


def find_first(buf: np.ndarray, start: np.ndarray, end: np.ndarray, pattern: bytes,
               cand: np.ndarray | None = None) -> np.ndarray:
    """Per row (bytes ``buf[start:end]``), the absolute position of the first ``pattern`` that
    lies wholly in the row, -1 where none.  ``cand``: positions where the pattern's first two
    bytes may start (all of them when None)."""
    k = len(pattern)
    if cand is None:
        cand = np.flatnonzero(buf[:max(buf.shape[0] - 1, 0)] == pattern[0])
    for j, b in enumerate(pattern):
        cand = cand[cand + j < buf.shape[0]]
        cand = cand[buf[cand + j] == b]
    out = np.full(start.shape[0], -1, dtype=np.int64)
    if not cand.size:
        return out
    row = np.searchsorted(start, cand, side="right") - 1
    inside = (row >= 0) & (cand + k <= end[np.maximum(row, 0)])
    cand, row = cand[inside], row[inside]
    if not cand.size:
        return out
    first = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))  # rows are non-decreasing in cand
    out[row[first]] = cand[first]
    return out


def number_at(buf: np.ndarray, pos: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(digits, value) of the decimal number starting at each ``pos`` (-1: none) before ``end``:
    0 digits where there is none, a leading zero or more than :data:`MAX_DIGITS` digits."""
    n = pos.shape[0]
    nd = np.zeros(n, dtype=np.int64)
    val = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(pos >= 0)
    p, e = pos[rows], end[rows]
    count = np.zeros(rows.shape[0], dtype=np.int64)
    value = np.zeros(rows.shape[0], dtype=np.int64)
    live = np.arange(rows.shape[0])
    for k in range(MAX_DIGITS + 1):  # one digit of every number still going per step
        at = p[live] + k
        byte = _byte_at(buf, np.where(at < e[live], at, -1))
        more = _DIGIT[byte]
        live = live[more]
        if not live.size:
            break
        count[live] += 1
        value[live] = value[live] * 10 + (byte[more].astype(np.int64) - ord("0"))
    lead_zero = (count > 1) & (_byte_at(buf, p) == ord("0"))
    good = (count >= 1) & (count <= MAX_DIGITS) & ~lead_zero
    nd[rows[good]] = count[good]
    val[rows[good]] = value[good]
    return nd, val


def spans_ok(buf: np.ndarray, start: np.ndarray, end: np.ndarray, allowed: np.ndarray,
             brackets: bool) -> np.ndarray:
    """Per span ``[start, end)`` (start -1: none): non-empty, every byte in ``allowed``, and
    with ``brackets``: starts with ``[`` and its brackets balance, never closing more than open."""
    has = (start >= 0) & (end > start)
    out = np.zeros(start.shape[0], dtype=bool)
    idx = np.flatnonzero(has)
    if not idx.size:
        return out
    s, e = start[idx], end[idx]
    inside = np.zeros(buf.shape[0] + 1, dtype=np.int32)
    np.add.at(inside, s, 1)
    np.add.at(inside, e, -1)
    span = np.cumsum(inside[:-1]) > 0
    bad_pos = np.flatnonzero(span & ~allowed[buf])
    bad = np.zeros(idx.size, dtype=bool)
    if bad_pos.size:
        bad[np.searchsorted(s, bad_pos, side="right") - 1] = True
    if brackets:
        step = (buf == ord("[")).astype(np.int64) - (buf == ord("]"))
        depth = np.concatenate(([0], np.cumsum(step)))  # depth[i]: before byte i
        base = depth[s]
        # the lowest depth after each byte of the span (spans are disjoint and in order)
        bounds = np.stack([s, e], axis=1).reshape(-1)
        lowest = np.minimum.reduceat(np.concatenate((depth[1:], [np.iinfo(np.int64).max])), bounds)[0::2]
        bad |= (buf[s] != ord("[")) | (lowest < base) | (depth[e] != base)
    out[idx] = ~bad
    return out


#: an odd multiplier and its inverse modulo 2**64: the polynomial hash of a span
_HASH_P = 0x100000001B3
_HASH_P_INV = pow(_HASH_P, -1, 2**64)


_POWERS: dict[int, np.ndarray] = {}


def _powers(base: int, n: int) -> np.ndarray:
    """``base ** i`` modulo 2**64 for ``i < n`` (kept, and grown, across blocks)."""
    have = _POWERS.get(base)
    if have is None or have.shape[0] < n:
        out = np.full(max(n, 2 * (have.shape[0] if have is not None else 0)), base, dtype=np.uint64)
        out[0] = 1
        have = _POWERS[base] = np.cumprod(out, dtype=np.uint64)  # wraps modulo 2**64
    return have[:n]


def intern_spans(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, list[bytes]]:
    """(int32 code per span, the distinct byte strings, in order of first appearance by hash):
    spans are grouped by a polynomial hash modulo 2**64 of their bytes and their length, and
    every span is then compared byte for byte with its group's first (exact: on a collision,
    the spans are grouped by a dict of their bytes)."""
    n = start.shape[0]
    if not n:
        return np.zeros(0, dtype=np.int32), []
    lens = end - start
    size = buf.shape[0] + 1
    pre = np.zeros(size, dtype=np.uint64)
    np.cumsum(buf.astype(np.uint64) * _powers(_HASH_P, size)[:-1], out=pre[1:])
    h = (pre[end] - pre[start]) * _powers(_HASH_P_INV, size)[start]
    h ^= lens.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    rep = first[inv]
    same = lens == lens[rep]
    if same.all():
        mine = gather_positions(start, lens)
        theirs = gather_positions(start[rep], lens)
        same = bool((buf[mine] == buf[theirs]).all()) if mine.size else True
    else:
        same = False
    if same:
        return inv.astype(np.int32), [buf[start[i]:end[i]].tobytes() for i in first.tolist()]
    index: dict[bytes, int] = {}  # pragma: no cover - a 64-bit hash collision between two names
    codes = np.fromiter((index.setdefault(buf[a:b].tobytes(), len(index)) for a, b in
                         zip(start.tolist(), end.tolist())), dtype=np.int32, count=n)
    return codes, list(index)


def gather_positions(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + lens[i] - 1`` of every range, concatenated."""
    lens = lens.astype(np.int64)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    out_start = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - np.repeat(out_start - starts, lens)


def gather_ranges(src: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The bytes ``src[starts[i]:starts[i] + lens[i]]`` of every range, concatenated."""
    return src[gather_positions(starts, lens)]


@dataclass
class ParsedTexts:
    """What a block of range texts says: per row, whether it is an emit_nvtx op, the name's
    code (into ``names``), the sequence number and op id (-1 none), and the args JSON."""

    is_op: np.ndarray
    name: np.ndarray
    names: list[bytes]
    seq: np.ndarray
    op_id: np.ndarray
    args: bytes
    args_lens: np.ndarray


def _const(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The constants' bytes joined and where each starts."""
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(np.int64)
    return np.frombuffer(b"".join(parts), dtype=np.uint8), starts


def _key(name: str) -> bytes:
    return b"," + json.dumps(name).encode() + b":"


def parse_texts(text: bytes, lens: np.ndarray, is_range: np.ndarray, domain_json: list[bytes],
                domain_code: np.ndarray) -> ParsedTexts:
    """Parse one block: ``text`` holds the rows' texts back to back (``lens`` bytes each);
    ``is_range``: rows that are ranges (marks are never ops); ``domain_code``: per row an
    index into ``domain_json`` (each ``,"domain":"<name>"`` or empty)."""
    buf = np.frombuffer(text, dtype=np.uint8)
    n = lens.shape[0]
    end = np.cumsum(lens.astype(np.int64))
    start = end - lens
    commas = np.flatnonzero(buf[:max(buf.shape[0] - 1, 0)] == ord(","))
    commas = commas[buf[commas + 1] == ord(" ")]
    pos = [find_first(buf, start, end, p.encode(), commas) for p in schema.EMIT_NVTX_PARTS]
    p_seq, p_op, p_sizes, p_inputs = pos
    seq_at = np.where(p_seq >= 0, p_seq + len(schema.EMIT_NVTX_SEQ), -1)
    op_at = np.where(p_op >= 0, p_op + len(schema.EMIT_NVTX_OP_ID), -1)
    seq_nd, seq = number_at(buf, seq_at, end)
    op_nd, op_id = number_at(buf, op_at, end)
    sizes_at = np.where(p_sizes >= 0, p_sizes + len(schema.EMIT_NVTX_SIZES), -1)
    sizes_start_ok = (sizes_at >= 0) & (sizes_at < end) & (_byte_at(buf, sizes_at) == ord("["))
    is_op = is_range & ((seq_nd > 0) | (op_nd > 0) | sizes_start_ok)
    name_end = end.copy()
    for p in pos:
        name_end = np.where(is_op & (p >= 0), np.minimum(name_end, p), name_end)
    codes, names = intern_spans(buf, start, name_end)
    seq = np.where(is_op, seq, -1)
    op_id = np.where(is_op, op_id, -1)
    # args: "{" + pieces (each ",key:value") + "}", the first piece's comma dropped
    sizes_end = np.where(p_inputs > p_sizes, p_inputs, end)
    sizes_ok = is_op & spans_ok(buf, np.where(sizes_start_ok, sizes_at, -1), sizes_end, _SIZES_CHARS, True)
    inputs_at = np.where(p_inputs >= 0, p_inputs + len(schema.EMIT_NVTX_INPUT_OP_IDS), -1)
    inputs_ok = is_op & spans_ok(buf, inputs_at, end, _INPUT_IDS_CHARS, False)
    consts = [b"{", _key(ks.EXTERNAL_ID), _key(ks.SEQUENCE_NUMBER), _key(ks.INPUT_DIMS),
              _key(schema.INPUT_OP_IDS) + b'"', b'"', b"}", *domain_json]
    cbuf, cstart = _const(consts)
    src = np.concatenate((buf, cbuf))
    off = buf.shape[0]

    def const(i: int, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(n, off + cstart[i], dtype=np.int64), np.where(present, len(consts[i]), 0)

    op_has, seq_has = is_op & (op_nd > 0), is_op & (seq_nd > 0)
    ranges = [const(0, np.ones(n, dtype=bool)),
              const(1, op_has), (op_at, np.where(op_has, op_nd, 0)),
              const(2, seq_has), (seq_at, np.where(seq_has, seq_nd, 0)),
              const(3, sizes_ok), (sizes_at, np.where(sizes_ok, sizes_end - sizes_at, 0)),
              const(4, inputs_ok), (inputs_at, np.where(inputs_ok, end - inputs_at, 0)), const(5, inputs_ok),
              (off + cstart[7 + domain_code], np.array([len(d) for d in domain_json], dtype=np.int64)[domain_code]),
              const(6, np.ones(n, dtype=bool))]
    starts = np.stack([r[0] for r in ranges], axis=1)
    sizes = np.stack([r[1] for r in ranges], axis=1).astype(np.int64)
    # the first key after "{" loses its comma (every key piece starts with one)
    keyed = sizes[:, 1:-1] > 0
    first = np.where(keyed.any(axis=1), np.argmax(keyed, axis=1) + 1, -1)
    rows = np.flatnonzero(first >= 0)
    starts[rows, first[rows]] += 1
    sizes[rows, first[rows]] -= 1
    args = gather_ranges(src, np.where(sizes > 0, starts, 0).reshape(-1), sizes.reshape(-1))
    return ParsedTexts(is_op, codes, names, seq, op_id, args.tobytes(), sizes.sum(axis=1))
