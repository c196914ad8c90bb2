"""Read a trace file's bytes: plain or gzip (detected by magic bytes, not file name).

A gzip stream that ends early (the profiler was killed while writing) or whose data is
corrupt part way is not an error here: every byte that could be decompressed is returned
and ``gzip_truncated`` is set (``gzip_error`` says why when the data was corrupt), so the
JSON layer can recover the complete events before the cut.

Memory: a file that cannot fit is refused *before* the machine starts swapping.  Plain
files are checked from their size; gzip files from their size first, then while they are
inflated (in bounded steps), so a file that decompresses 50x (or a gzip bomb) stops as
soon as it passes the limit.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from isal import isal_zlib

from ..errors import TraceFileError, TraceTooLargeError
from ..units import bytes_rounded

GZIP_MAGIC = b"\x1f\x8b"

#: Bytes of memory loading needs per byte of decompressed JSON: the text plus ~1.5x for
#: decoding and columns.  Refuse early instead of swapping.
MEMORY_FACTOR = 2.5

#: compressed bytes fed to zlib per step; one step inflates to at most ~1032x this
_IN_STEP = 1 << 16
#: most bytes inflated per zlib call: bounds how far past the memory limit inflating can go
_OUT_STEP = 1 << 22
#: step used to pin down where corrupt gzip data starts
_MIN_STEP = 256


@dataclass
class FileBytes:
    """The decompressed content of one trace file."""

    path: str
    data: bytes
    compressed: bool
    #: the gzip stream ended before its end marker, or was corrupt (bytes after that are lost)
    gzip_truncated: bool = False
    #: size on disk, in bytes
    file_size: int = 0
    #: zlib's message when the gzip data was corrupt (not just cut short); None otherwise
    gzip_error: str | None = None
    #: compressed bytes that could be used (== file_size for an intact file)
    gzip_bytes_read: int = 0
    #: bytes after the last gzip member that are neither gzip nor zero padding (ignored)
    gzip_trailing: int = 0


def _cgroup_available(root: str = "/sys/fs/cgroup") -> int | None:
    """Memory left under this process's cgroup limit (v2, then v1), or None when unlimited."""
    for limit_f, usage_f in ((f"{root}/memory.max", f"{root}/memory.current"),
                             (f"{root}/memory/memory.limit_in_bytes", f"{root}/memory/memory.usage_in_bytes")):
        try:
            with open(limit_f, "rb") as fh:
                raw = fh.read().strip()
            if raw == b"max":
                return None
            limit = int(raw)
            with open(usage_f, "rb") as fh:
                usage = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if limit >= 1 << 60:  # v1 writes a huge number for "no limit"
            return None
        return max(limit - usage, 0)
    return None


def available_memory_bytes() -> int | None:
    """Memory this process can still use (bytes): MemAvailable from /proc/meminfo, lowered
    to what the cgroup limit leaves when there is one; None where neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        avail = None
    cg = _cgroup_available()
    if cg is not None:
        avail = cg if avail is None else min(avail, cg)
    return avail


def _check_memory(path: str, expected_bytes: int, avail: int | None) -> None:
    if avail is not None and expected_bytes * MEMORY_FACTOR > avail:
        raise TraceTooLargeError(
            path,
            f"needs about {bytes_rounded(expected_bytes * MEMORY_FACTOR)} of memory to load "
            f"but only {bytes_rounded(avail)} is available",
        )


@dataclass
class _Gunzipped:
    data: bytes
    truncated: bool
    error: str | None
    used: int
    trailing: int


def _inflate_piece(d, piece: memoryview, room: float) -> list[bytes]:
    """Decompress one input piece in output steps of at most ``_OUT_STEP`` bytes.

    Stops (returns early) once more than ``room`` bytes came out: the caller refuses the file.
    """
    chunks = []
    got = 0
    buf = piece
    while True:
        chunk = d.decompress(buf, _OUT_STEP)
        if chunk:
            chunks.append(chunk)
            got += len(chunk)
        buf = d.unconsumed_tail
        if d.eof or not buf or got > room:
            return chunks


def _too_large(path: str, total: int, pos: int, n: int, avail: int | None) -> TraceTooLargeError:
    return TraceTooLargeError(
        path, f"decompresses to more than {bytes_rounded(total)} (stopped at compressed byte {pos:,} "
              f"of {n:,}); loading it needs over {bytes_rounded(total * MEMORY_FACTOR)} of memory "
              f"but only {bytes_rounded(avail)} is available")


def _gunzip_whole(path: str, raw: bytes, avail: int | None) -> _Gunzipped | None:
    """The common case, fast: every member of an intact gzip file inflated by ISA-L
    (``isal``, about 2x zlib's speed), with the same memory bound.  Returns None when the
    data is cut short or corrupt, so :func:`_gunzip` redoes it with zlib, whose
    decompressor can be copied to keep what precedes the damage."""
    try:
        return _inflate_members(path, raw, avail, fast=True)
    except isal_zlib.error:
        return None


def _gunzip(path: str, raw: bytes, avail: int | None) -> _Gunzipped:
    """Decompress every gzip member in bounded steps; stop at a cut or corrupt data."""
    got = _inflate_members(path, raw, avail, fast=False)
    assert got is not None
    return got


def _inflate_members(path: str, raw: bytes, avail: int | None, *, fast: bool) -> _Gunzipped | None:
    """Inflate gzip member after member in bounded steps.  ``fast``: ISA-L in big input
    pieces, None at a cut (errors propagate); else zlib, which redoes a corrupt piece in
    small steps to keep what precedes the damage and reports a cut or corrupt end."""
    limit = None if avail is None else avail / MEMORY_FACTOR
    out: list[bytes] = []
    total = 0
    pos = 0
    n = len(raw)
    view = memoryview(raw)
    truncated = False
    error = None
    while pos < n:
        d = isal_zlib.decompressobj(16 + zlib.MAX_WBITS) if fast else zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            step = _IN_STEP * 64 if fast else _IN_STEP
            while pos < n and not d.eof:
                piece = view[pos:pos + step]
                saved = None if fast else d.copy()
                try:
                    chunks = _inflate_piece(d, piece, float("inf") if limit is None else limit - total)
                except zlib.error:
                    if saved is None or step == _MIN_STEP:
                        raise
                    # corrupt data in this piece: redo it in small steps to keep what precedes the damage
                    d, step = saved, _MIN_STEP
                    continue
                pos += len(piece) - len(d.unused_data)
                for chunk in chunks:
                    out.append(chunk)
                    total += len(chunk)
                if limit is not None and total > limit:
                    raise _too_large(path, total, pos, n, avail)
            tail = d.flush()
            if tail:
                out.append(tail)
                total += len(tail)
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
        # trailing zero padding after the last member is legal and ignored
        if not bytes(view[pos:]).strip(b"\x00"):
            pos = n
        break
    if truncated and not total:
        raise TraceFileError(path, f"gzip stream ends after {n:,} bytes, before any data could be decompressed")
    return _Gunzipped(b"".join(out), truncated, error, pos, n - pos if not truncated else 0)


def read_trace_bytes(path: str | os.PathLike[str]) -> FileBytes:
    """Return the (decompressed) bytes of ``path``.

    Raises :class:`TraceFileError` if it cannot be read, :class:`TraceTooLargeError` if
    loading it would need more memory than is available.
    """
    p = os.fspath(path)
    try:
        if os.path.isdir(p):
            raise TraceFileError(p, "is a directory, not a trace file")
        size = os.path.getsize(p)
        avail = available_memory_bytes()
        # a gzip file inflates to at least its own size: refuse hopeless files before reading
        _check_memory(p, size, avail)
        with open(p, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise TraceFileError(p, "no such file") from None
    except IsADirectoryError:
        raise TraceFileError(p, "is a directory, not a trace file") from None
    except PermissionError:
        raise TraceFileError(p, "permission denied") from None
    except OSError as exc:
        raise TraceFileError(p, f"cannot be read ({exc.strerror or exc})") from None
    if raw.startswith(GZIP_MAGIC):
        room = None if avail is None else max(avail - len(raw), 0)
        g = _gunzip_whole(p, raw, room) or _gunzip(p, raw, room)
        return FileBytes(p, g.data, True, g.truncated, size, g.error, g.used, g.trailing)
    return FileBytes(p, raw, False, False, size)


def write_atomically(target: str | os.PathLike[str], pieces: Iterable[bytes | memoryview]) -> None:
    """Write ``pieces`` to ``target`` through a temp file in the same folder (``.tmp-*``,
    which cache pruning removes when left behind) renamed over it: readers see the old
    file or the whole new one, never a part.  On any error the temp file is removed."""
    target = os.fspath(target)
    suffix = os.path.splitext(target)[1]
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=os.path.dirname(target) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def kind_of_keys(has_events: bool, has_nodes: bool, has_schema: bool) -> str | None:
    """The one rule that tells the two formats apart by their top-level keys: "kineto" for
    ``traceEvents`` without an ET's ``nodes`` + ``schema``, "et" for ``nodes`` + ``schema``
    without ``traceEvents``, None when the keys do not tell.  Used on a document's first
    bytes (:func:`sniff_head`) and by each loader on the keys it decoded, to name the other
    format when it is given the wrong kind of file."""
    et_keys = has_nodes and has_schema
    if has_events and not et_keys:
        return "kineto"
    if et_keys and not has_events:
        return "et"
    return None


def sniff_head(head: bytes) -> str | None:
    """The kind of trace the first bytes of a JSON document announce: "kineto" (a bare
    array of events, or an object whose keys say so, :func:`kind_of_keys`), "et", or None
    when the head alone does not tell (callers decide with the whole document, or not at
    all)."""
    head = head.lstrip()
    if head[:1] == b"[":
        return "kineto"
    if head[:1] != b"{":
        return None
    return kind_of_keys(b'"traceEvents"' in head, b'"nodes"' in head, b'"schema"' in head)
