"""Reading a snapshot's history while it is unpickled, so its entries are never all held at once.

The C unpickler builds every object of a pickle before it returns: a snapshot's history entries
(a dict and a frames list each) take 4 to 8 times the file's bytes.  A list that is not exactly
a ``list`` gets its items from the unpickler through its own ``extend`` (PEP 307), a thousand at a
time as the standard pickler batches them.  So the history of the first device that has one is
given to the unpickler as such a list (:class:`StreamList`), whose ``extend`` turns each batch into
columns at once and empties the entries (the unpickler's memo keeps the emptied objects: 140
bytes or so an entry, not the 600 of a full one, until :mod:`.prune` drops them).

The list gets there by one change to the byte stream, found without running anything:
:func:`find_point` walks the pickle's frames (protocols 4-5: the standard pickler writes every
opcode inside ``FRAME``\\ s of ~64 KiB; large strings between them), finds the one
``device_traces`` key, and reads the few opcodes after it (``EMPTY_LIST`` for the outer list, a
``MARK``, an ``EMPTY_LIST`` per device: empty ones are skipped) to the ``EMPTY_LIST`` of the first
device whose list has items.  :class:`Spliced` serves the file with that one byte replaced by a
``BINPERSID`` of a random token (the frame's length adjusted): the unpickler asks
``persistent_load`` for it, which answers the :class:`StreamList` (any other persistent id is
refused as before).  Every byte before it is the file's own, so if the unpickler asks for the
token, the replaced byte was that ``EMPTY_LIST`` opcode and the objects built are the file's, the
list aside.  If it never asks (the key was data inside a string) or the list does not end up in
``device_traces``, the caller reads the file again without the change.  Protocols 2-3 (no frames)
and every other layout are read whole.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from .prune import MemoPruner

#: the key's opcode as the standard pickler writes it (SHORT_BINUNICODE, 13 bytes)
KEY = b"\x8c\x0ddevice_traces"
_FRAME, _MEMOIZE, _EMPTY_LIST, _MARK, _EMPTY_DICT = 0x95, 0x94, 0x5D, 0x28, 0x7D
#: opcodes the standard pickler writes between frames (payloads too large for one): their length bytes
_LARGE = {0x8D: 8, 0x8E: 8, 0x96: 8, ord("X"): 4, ord("B"): 4}
#: bytes read per step of the key search
_STEP = 1 << 24


@dataclass(frozen=True)
class Point:
    """Where the history list of ``device`` starts: the file offset of its ``EMPTY_LIST``
    (``at``), inside the frame whose header is at ``frame`` (``frame_len`` content bytes)."""

    at: int
    frame: int
    frame_len: int
    device: int


def _frames(fh: BinaryIO, size: int) -> list[tuple[int, int]] | None:
    """(header offset, content length) of every frame, or None when the pickle is not framed
    as the standard pickler frames (then nothing is streamed)."""
    out = []
    pos = 2
    while pos < size:
        fh.seek(pos)
        head = fh.read(9)
        if not head:
            return None
        op = head[0]
        if op == _FRAME and len(head) == 9:
            n = struct.unpack("<Q", head[1:9])[0]
            if pos + 9 + n > size:
                return None
            out.append((pos, n))
            pos += 9 + n
        elif op in _LARGE and len(head) >= 1 + _LARGE[op]:
            k = _LARGE[op]
            pos += 1 + k + int.from_bytes(head[1:1 + k], "little")
        else:
            return None
    return out if pos == size else None


def _find_key(fh: BinaryIO, size: int) -> int | None:
    """The offset of the one ``device_traces`` key (None: absent or more than once)."""
    found, pos, tail = [], 0, b""
    fh.seek(0)
    while pos < size and len(found) < 2:
        chunk = fh.read(_STEP)
        if not chunk:
            break
        data = tail + chunk
        base = pos - len(tail)
        i = data.find(KEY)
        while i >= 0 and len(found) < 2:
            if base + i not in found:
                found.append(base + i)
            i = data.find(KEY, i + 1)
        tail = data[-(len(KEY) - 1):]
        pos += len(chunk)
    return found[0] if len(found) == 1 else None


def find_point(fh: BinaryIO, size: int) -> Point | None:
    """Where to give the unpickler a :class:`StreamList` (module docstring), or None."""
    fh.seek(0)
    if fh.read(2) not in (b"\x80\x04", b"\x80\x05"):
        return None
    frames = _frames(fh, size)
    key = _find_key(fh, size) if frames else None
    if key is None:
        return None
    # the frame holding the key; the opcodes after it, within that frame and the next ones
    starts = [f[0] for f in frames]
    import bisect

    k = bisect.bisect_right(starts, key) - 1
    if k < 0 or not starts[k] + 9 <= key < starts[k] + 9 + frames[k][1]:
        return None

    def logical(pos: int, want: int = 600):
        """(offset, byte) of up to ``want`` opcode bytes from ``pos`` on, frame headers skipped."""
        for lo0, n in frames[k:]:
            lo, hi = max(pos, lo0 + 9), lo0 + 9 + n
            if lo >= hi:
                continue
            fh.seek(lo)
            for j, b in enumerate(fh.read(min(hi - lo, want))):
                yield lo + j, b
            want -= min(hi - lo, want)
            if want <= 0:
                return

    seq = list(logical(key + len(KEY)))[:600]
    b = [x[1] for x in seq]
    j = 0
    if j < len(b) and b[j] == _MEMOIZE:
        j += 1
    if not (j + 1 < len(b) and b[j] == _EMPTY_LIST and b[j + 1] == _MEMOIZE):
        return None
    j += 2  # the outer list
    if j < len(b) and b[j] == _MARK:
        j += 1  # its items come as a MARK ... APPENDS batch
    device = 0
    while j + 2 < len(b) and b[j] == _EMPTY_LIST and b[j + 1] == _MEMOIZE:
        if b[j + 2] in (_MARK, _EMPTY_DICT):  # a list with items: the history to stream
            at = seq[j][0]
            i = bisect.bisect_right(starts, at) - 1
            return Point(at, frames[i][0], frames[i][1], device)
        device += 1
        j += 2
    return None


class Spliced:
    """The file as the unpickler reads it with the one change (module docstring): ``read(n)``
    of the virtual stream; ``physical(pos)`` turns a position of it into the file's."""

    def __init__(self, fh: BinaryIO, size: int, point: Point, inject: bytes) -> None:
        self.fh = fh
        self.extra = len(inject) - 1
        self.size = size + self.extra
        header = bytes((_FRAME,)) + struct.pack("<Q", point.frame_len + self.extra)
        self.pieces: list[tuple[int, int] | bytes] = [(0, point.frame), header, (point.frame + 9, point.at), inject,
                                                      (point.at + 1, size)]
        self.at = point.at
        self.k = 0  # piece being read
        self.off = 0  # bytes of it read

    def physical(self, pos: int) -> int:
        return pos if pos <= self.at else pos - self.extra

    def read(self, n: int) -> bytes:
        out = []
        while n > 0 and self.k < len(self.pieces):
            p = self.pieces[self.k]
            if isinstance(p, bytes):
                part = p[self.off:self.off + n]
            else:
                lo, hi = p
                self.fh.seek(lo + self.off)
                part = self.fh.read(min(n, hi - lo - self.off))
                if not part:
                    break
            out.append(part)
            n -= len(part)
            self.off += len(part)
            if self.off >= (len(p) if isinstance(p, bytes) else p[1] - p[0]):
                self.k, self.off = self.k + 1, 0
        return b"".join(out)

    def readinto(self, view: memoryview) -> int:
        data = self.read(view.nbytes)
        view[:len(data)] = data
        return len(data)


class StreamList(list):
    """The history list the unpickler fills: each batch goes to ``consume`` at once, nothing is
    kept (so the list stays empty); ``pruner`` (:mod:`.prune`), when given, is told of each
    batch before it is consumed and may then drop the spent objects from the unpickler's memo."""

    def __init__(self, consume: Callable[[list[Any]], None], pruner: MemoPruner | None = None) -> None:
        super().__init__()
        self.consume = consume
        self.pruner = pruner
        self.batches = 0

    def extend(self, items: Any) -> None:  # noqa: D102 - the unpickler's APPENDS
        self.batches += 1
        items = list(items)
        if self.pruner is not None:
            self.pruner.spent(items)
        self.consume(items)
        if self.pruner is not None:
            self.pruner.maybe_prune()

    def append(self, item: Any) -> None:  # the unpickler's APPEND
        self.extend([item])


def token() -> str:
    """A persistent id no file can name in advance (16 hex digits)."""
    return secrets.token_hex(8)


def injection(pid: str) -> bytes:
    """``SHORT_BINUNICODE pid`` + ``BINPERSID``: what replaces the list's ``EMPTY_LIST``."""
    raw = pid.encode()
    return bytes((0x8C, len(raw))) + raw + b"Q"
