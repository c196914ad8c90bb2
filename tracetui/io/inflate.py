"""Decompress a trace file (gzip, zstd) in bounded steps, under a :class:`~.limits.Budget`.

gzip: every member; an intact file by ISA-L (``isal``, about 2x zlib's speed), a file cut
short or corrupt part way again by zlib, whose decompressor can be copied to keep what
precedes the damage.  zstd: every frame, through the ``compression.zstd`` API (Python 3.14's
standard library, else ``backports.zstd``: ``pip install tracetui[zstd]``).  Each call
inflates at most :data:`OUT_STEP` bytes and the budget is checked after it, so a bomb stops
within one step of the limit it passes (expansion, cap or memory).

A stream that ends early (the profiler was killed while writing) or whose data is corrupt
part way is not an error here: every byte that could be decompressed is returned with
``truncated`` set (``error`` says why when the data was corrupt), so the JSON layer can
recover the complete events before the cut.  The pieces are gathered as they come into one
buffer that grows in place (:class:`Joined`: the content is never held twice, as the pieces
and their join were: 1.2 GB at the peak for 565 MB of JSON); trailing padding longer than
:data:`~.padding.PADDING_KEPT` is held back as pieces and dropped, never joined, and counted.

:class:`Stream` is the same in small: one stream read a step at a time, for the head reader
(:func:`~tracetui.io.formats.read_head`), which inflates only the head.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from typing import Any

from isal import isal_zlib

from ..errors import TraceFileError
from .containers import GZIP_MAGIC, ZSTD_MAGIC, ZSTD_MISSING, zstd_module
from .limits import Budget
from .padding import PADDING_KEPT, content_end

#: compressed bytes fed per step (zlib, zstd; ISA-L takes 64 of them): how exactly a corrupt byte is placed
IN_STEP = 1 << 16
#: most bytes inflated per call: bounds how far past a limit inflating can go
OUT_STEP = 1 << 22
#: step used to pin down where corrupt gzip data starts
_MIN_STEP = 256


@dataclass
class Inflated:
    """What a compressed file decompressed to."""

    data: bytes
    #: the stream ended before its end marker, or was corrupt (bytes after that are lost)
    truncated: bool
    #: the decoder's message when the data was corrupt (not just cut short); None otherwise
    error: str | None
    #: compressed bytes that could be used
    used: int
    #: bytes after the last member/frame that are neither another one nor zero padding (ignored)
    trailing: int
    #: trailing padding (whitespace, NUL) dropped beyond ``PADDING_KEPT``
    padding: int = 0


def inflate(path: str, raw: bytes, compression: str, budget: Budget) -> Inflated:
    """The content of ``raw`` compressed with ``compression`` ("gzip", "zstd"), under ``budget``."""
    if compression == "zstd":
        out, got = _unzstd(path, raw, budget)
    else:
        out, got = _gunzip_whole(path, raw, budget) or _gunzip(path, raw, budget)
    got.data, got.padding = out.finish()
    return got


class Joined:
    """Decompressed pieces joined as they come: each is copied into one ``BytesIO`` whose
    buffer grows in place (``realloc``, pages moved, not copied) and is handed out without a
    copy (``getvalue``), so a piece is freed once added.  Pieces that are all padding
    (whitespace, NUL) are held back as they are until content follows them; at the end the
    trailing padding beyond :data:`~.padding.PADDING_KEPT` is dropped (never joined)."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.written = 0  #: bytes in ``buf``
        self.last = b""  #: the last piece written (it holds content)
        self.pending: list[bytes] = []  #: pieces of padding after it, not written yet
        self.pending_len = 0

    def add(self, piece: bytes) -> None:
        if not content_end(piece):
            self.pending.append(piece)
            self.pending_len += len(piece)
            return
        for p in self.pending:
            self.buf.write(p)
        self.written += self.pending_len + self.buf.write(piece)
        self.pending, self.pending_len, self.last = [], 0, piece

    def finish(self) -> tuple[bytes, int]:
        """(the content with at most ``PADDING_KEPT`` bytes of trailing padding, the padding
        bytes dropped)."""
        end = self.written - len(self.last) + content_end(self.last)
        keep = end + PADDING_KEPT
        total = self.written + self.pending_len
        if keep < self.written:
            self.buf.truncate(keep)
        for p in self.pending:
            room = keep - self.buf.tell()
            if room <= 0:
                break
            self.buf.write(p[:room] if len(p) > room else p)
        self.pending = []
        data = self.buf.getvalue()
        self.buf = io.BytesIO()
        return data, max(0, total - keep)


def _inflate_piece(d: Any, piece: memoryview, budget: Budget, total: int, used: int) -> list[bytes]:
    """Decompress one input piece in output steps of at most ``OUT_STEP`` bytes; the budget is
    checked after each (``total``: bytes out before this piece; ``used``: compressed bytes
    before it)."""
    chunks = []
    buf = piece
    while True:
        chunk = d.decompress(buf, OUT_STEP)
        if chunk:
            chunks.append(chunk)
            total += len(chunk)
        buf = d.unconsumed_tail
        budget.check(total, used + len(piece) - len(buf))
        if d.eof or not buf:
            return chunks


def _gunzip_whole(path: str, raw: bytes, budget: Budget) -> tuple[Joined, Inflated] | None:
    """The common case, fast: every member of an intact gzip file inflated by ISA-L.  None
    when the data is cut short or corrupt, so :func:`_gunzip` redoes it with zlib."""
    try:
        return _inflate_members(path, raw, budget, fast=True)
    except isal_zlib.error:
        return None


def _gunzip(path: str, raw: bytes, budget: Budget) -> tuple[Joined, Inflated]:
    """Decompress every gzip member in bounded steps; stop at a cut or corrupt data."""
    got = _inflate_members(path, raw, budget, fast=False)
    assert got is not None
    return got


def _inflate_members(path: str, raw: bytes, budget: Budget, *, fast: bool) -> tuple[Joined, Inflated] | None:
    """Inflate gzip member after member in bounded steps.  ``fast``: ISA-L in big input
    pieces, None at a cut (errors propagate); else zlib, which redoes a corrupt piece in
    small steps to keep what precedes the damage and reports a cut or corrupt end."""
    out = Joined()
    total = pos = 0
    n = len(raw)
    view = memoryview(raw)
    truncated = False
    error = None
    while pos < n:
        d = isal_zlib.decompressobj(16 + zlib.MAX_WBITS) if fast else zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            step = IN_STEP * 64 if fast else IN_STEP
            while pos < n and not d.eof:
                piece = view[pos:pos + step]
                saved = None if fast else d.copy()
                try:
                    chunks = _inflate_piece(d, piece, budget, total, pos)
                except zlib.error:
                    if saved is None or step == _MIN_STEP:
                        raise
                    # corrupt data in this piece: redo it in small steps to keep what precedes the damage
                    d, step = saved, _MIN_STEP
                    continue
                pos += len(piece) - len(d.unused_data)
                for chunk in chunks:
                    out.add(chunk)
                total += sum(map(len, chunks))
                del chunks
            tail = d.flush()
            if tail:
                out.add(tail)
                total += len(tail)
                budget.check(total, pos)
        except zlib.error as exc:
            if not total:
                raise TraceFileError(path, f"not a valid gzip stream ({exc})", position=f"byte {pos}") from None
            truncated, error = True, str(exc)
            break
        if not d.eof:
            if fast:
                return None
            truncated = True
            break
        if bytes(view[pos:pos + 2]) == GZIP_MAGIC:
            continue  # another member
        pos = _after_zero_padding(view, pos)
        break
    if truncated and not total:
        raise TraceFileError(path, f"gzip stream ends after {n:,} bytes, before any data could be decompressed")
    return out, Inflated(b"", truncated, error, pos, n - pos if not truncated else 0)


def _after_zero_padding(view: memoryview, pos: int) -> int:
    """``len(view)`` when only zero bytes follow ``pos`` (padding after the last member or
    frame is legal and ignored), else ``pos``."""
    return len(view) if not bytes(view[pos:]).strip(b"\x00") else pos


def _is_zstd_frame(view: memoryview, pos: int) -> bool:
    """A zstd frame or a skippable frame (``0x184D2A5?``) starts at ``pos``."""
    head = bytes(view[pos:pos + 4])
    return head == ZSTD_MAGIC or (len(head) == 4 and head[0] & 0xF0 == 0x50 and head[1:] == b"\x2a\x4d\x18")


def _unzstd(path: str, raw: bytes, budget: Budget) -> tuple[Joined, Inflated]:
    """Decompress every zstd frame in bounded steps; stop at a cut or corrupt data."""
    zstd = zstd_module()
    if zstd is None:
        raise TraceFileError(path, ZSTD_MISSING)
    out = Joined()
    total = pos = 0
    n = len(raw)
    view = memoryview(raw)
    truncated = False
    error = None
    while pos < n:
        d = zstd.ZstdDecompressor()
        try:
            while not d.eof:
                piece = b""
                if d.needs_input:
                    if pos >= n:
                        break
                    piece = view[pos:pos + IN_STEP]
                    pos += len(piece)
                chunk = d.decompress(piece, OUT_STEP)
                if chunk:
                    out.add(chunk)
                    total += len(chunk)
                budget.check(total, pos)
        except zstd.ZstdError as exc:
            if not total:
                raise TraceFileError(path, f"not a valid zstd stream ({exc})", position=f"byte {pos}") from None
            truncated, error = True, str(exc)
            break
        if not d.eof:
            truncated = True
            break
        pos -= len(d.unused_data)
        if _is_zstd_frame(view, pos):
            continue  # another frame
        pos = _after_zero_padding(view, pos)
        break
    if truncated and not total:
        raise TraceFileError(path, f"zstd stream ends after {n:,} bytes, before any data could be decompressed")
    return out, Inflated(b"", truncated, error, pos, n - pos if not truncated else 0)


class Stream:
    """One compressed stream (a gzip member, a zstd frame) read a bounded step at a time:
    :meth:`inflate` gives at most ``n`` bytes per call.  ``errors``: the decoder's exception
    classes."""

    def __init__(self, compression: str) -> None:
        self.gzip = compression == "gzip"
        if self.gzip:
            self._d: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self.errors: tuple[type[BaseException], ...] = (zlib.error,)
        else:
            zstd = zstd_module()
            if zstd is None:  # pragma: no cover - the head reader checks first
                raise ImportError(ZSTD_MISSING)
            self._d = zstd.ZstdDecompressor()
            self.errors = (zstd.ZstdError,)
        self._tail = b""

    def inflate(self, data: bytes, n: int) -> bytes:
        """Feed ``data`` (``b""``: go on with the input already fed) and return at most ``n`` bytes."""
        if not self.gzip:
            return self._d.decompress(data, n)
        out = self._d.decompress(self._tail + data if self._tail else data, n)
        self._tail = self._d.unconsumed_tail
        return out

    @property
    def needs_input(self) -> bool:
        """Whether every byte fed so far has been inflated (more output needs more input)."""
        return not self._tail if self.gzip else self._d.needs_input

    @property
    def eof(self) -> bool:
        return self._d.eof

    @property
    def unused_data(self) -> bytes:
        """Bytes fed after the end of the stream (another member or frame, or padding)."""
        return self._d.unused_data
