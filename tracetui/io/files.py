"""Read a trace file's bytes: plain, gzip or zstd (told apart by magic bytes, not the file
name: :mod:`.containers`), within the limits of :mod:`.limits`.

Only regular files are read (:func:`open_regular`: a FIFO, a device, a socket is refused at
once, and the open never blocks), up to the size they had when opened.  A file tracetui does
not read (zip, bzip2, xz, lz4, tar, UTF-16/32 text) is refused in one line saying what it is
and what to do.

Memory: a file that cannot fit is refused *before* the machine starts swapping.  Plain files
are checked from their size; compressed files from their size first, then while they are
inflated in bounded steps (:mod:`.inflate`), so a file that decompresses 50x stops as soon as
it passes the memory limit, and a decompression bomb (past 256 MB at over 200x) long before.

Padding: trailing whitespace and NUL padding longer than :data:`~.padding.PADDING_KEPT` (a
preallocated file, a stream of spaces) is never held: a plain file is scanned backwards from
its end in C-speed blocks and read only up to its content; a compressed file's padding is
dropped before its pieces are joined.  ``FileBytes.padding`` counts what was left out.

A compressed stream that ends early or is corrupt part way is not an error here: every byte
that could be decompressed is returned and ``gzip_truncated`` is set, so the JSON layer can
recover the complete events before the cut.

Files for the user are written with :func:`write_atomically` (the old file stays when a
write fails).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import LoadWarning, TraceFileError
from . import limits
from .containers import UTF8_BOM, compression_of, unreadable
from .limits import Budget
from .padding import PADDING_KEPT, content_end

#: bytes of a file's start that say what it is (a tar header ends at 262)
_MAGIC_BYTES = 1024
#: first and largest block of the backward scan for trailing padding
_SCAN_FIRST, _SCAN_LAST = 1 << 16, 1 << 24


@dataclass
class FileBytes:
    """The (decompressed) content of one trace file.  The ``gzip_*`` fields describe the
    compressed stream, gzip or zstd (``compression``)."""

    path: str
    data: bytes
    #: "gzip", "zstd", or None for a plain file
    compression: str | None
    #: the stream ended before its end marker, or was corrupt (bytes after that are lost)
    gzip_truncated: bool = False
    #: size on disk, in bytes
    file_size: int = 0
    #: the decoder's message when the data was corrupt (not just cut short); None otherwise
    gzip_error: str | None = None
    #: compressed bytes that could be used (== file_size for an intact file)
    gzip_bytes_read: int = 0
    #: bytes after the last member or frame that are neither another one nor zero padding (ignored)
    gzip_trailing: int = 0
    #: trailing whitespace/NUL padding beyond ``PADDING_KEPT`` that was not read (or was dropped)
    padding: int = 0

    @property
    def compressed(self) -> bool:
        return self.compression is not None


def trace_path(path: object) -> str:
    """``path`` as a ``str``: a ``str``, ``bytes`` (decoded as the file system does) or any
    ``os.PathLike``; anything else raises :class:`TraceFileError` saying what is wanted
    (never a bare ``TypeError`` from deep inside a loader)."""
    try:
        p = os.fspath(path)  # type: ignore[arg-type]
    except TypeError:
        raise TraceFileError(None, f"a trace path must be a str, bytes or os.PathLike, not "
                                   f"{type(path).__name__}") from None
    return os.fsdecode(p) if isinstance(p, bytes) else p


#: what a path that is not a regular file is, by ``stat.S_IFMT``
_NOT_REGULAR = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a named pipe (FIFO)",
                stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a named pipe (FIFO)" ...);
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return _NOT_REGULAR.get(stat.S_IFMT(mode), "not a regular file")


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading, only when it is a regular file: a FIFO, a device
    (``/dev/zero``), a socket or a folder raises :class:`TraceFileError` at once.  The
    open itself never blocks (``O_NONBLOCK``: opening a FIFO with no writer would wait
    forever), and the check is made on the opened file (``fstat``), so a path swapped
    after a first look is still caught."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceFileError(path, "no such file" if not os.path.islink(path) else
                             "is a symbolic link to a file that does not exist") from None
    except IsADirectoryError:
        raise TraceFileError(path, "is a directory, not a trace file") from None
    except PermissionError:
        raise TraceFileError(path, "permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TraceFileError(path, "is a symbolic link loop") from None
        raise TraceFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        what = not_regular(os.fstat(fd).st_mode)
        if what == "a directory":
            raise TraceFileError(path, "is a directory, not a trace file")
        if what is not None:
            raise TraceFileError(path, f"is {what}, not a regular file: only trace files are read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_trace_bytes(path: str | os.PathLike[str]) -> FileBytes:
    """Return the (decompressed) bytes of ``path``.

    Only a regular file is read (:func:`open_regular`), and only as many bytes as it had
    when it was opened.  Raises :class:`TraceFileError` if it cannot be read or is of a kind
    tracetui does not read (:func:`~.containers.unreadable`), and
    :class:`~tracetui.errors.TraceTooLargeError` past a limit (:class:`~.limits.Budget`).
    """
    p = trace_path(path)
    with open_regular(p) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            first = os.pread(fh.fileno(), min(size, _MAGIC_BYTES), 0)
            compression = compression_of(first)
            problem = unreadable(first)
            if problem:
                raise TraceFileError(p, problem)
            avail = limits.available_memory_bytes()
            padding = 0
            if compression:
                length = size  # inflates to at least its own size: refuse hopeless files before reading
            else:
                length, padding = _padded_length(fh.fileno(), size)
            Budget(p, size, avail).check_plain(length)
            # as many bytes as it had when opened: a file still growing (a profiler writing) is
            # read as it was, and a file that claims 0 bytes reads none
            raw = fh.read(length)
        except OSError as exc:
            raise TraceFileError(p, f"cannot be read ({exc.strerror or exc})") from None
    if not compression:
        return FileBytes(p, _without_bom(raw), None, False, size, padding=padding)
    from .inflate import inflate

    g = inflate(p, raw, compression, Budget(p, size, None if avail is None else max(avail - len(raw), 0)))
    del raw
    problem = unreadable(first, g.data[:_MAGIC_BYTES])
    if problem:
        raise TraceFileError(p, problem)
    return FileBytes(p, _without_bom(g.data), compression, g.truncated, size, g.error, g.used, g.trailing,
                     g.padding)


def padding_warning(fb: FileBytes, prefix: str = "") -> list[LoadWarning]:
    """The warning every loader gives when trailing padding was skipped (none otherwise);
    ``prefix``: put before the message (the ET loader names its file)."""
    if not fb.padding:
        return []
    where = f"{len(fb.data):,}{' (decompressed)' if fb.compressed else ''}"
    return [LoadWarning("padding", f"{prefix}{fb.padding:,} bytes of padding (whitespace or NUL) after byte "
                                   f"{where} were skipped", fb.padding)]


def _padded_length(fd: int, size: int) -> tuple[int, int]:
    """(bytes of a plain file to read, bytes of trailing padding left unread): the file is
    scanned backwards from its end in blocks growing from 64 KiB to 16 MiB (read into reused
    buffers: bounded memory), and only :data:`~.padding.PADDING_KEPT` bytes of the padding
    after its content are read."""
    if size <= PADDING_KEPT:
        return size, 0
    end, step = size, _SCAN_FIRST
    buffers: dict[int, bytearray] = {}
    while end > 0:
        start = max(0, end - step)
        buf = buffers.get(end - start) or buffers.setdefault(end - start, bytearray(end - start))
        if _pread_into(fd, buf, start) < len(buf):
            return size, 0  # the file shrank: read what is there
        at = content_end(buf)
        if at:
            end = start + at
            break
        end = start
        step = min(step * 4, _SCAN_LAST)
    keep = min(size, end + PADDING_KEPT)
    return keep, size - keep


def _pread_into(fd: int, buf: bytearray, offset: int) -> int:
    if hasattr(os, "preadv"):
        return os.preadv(fd, [buf], offset)
    data = os.pread(fd, len(buf), offset)  # pragma: no cover - no preadv (macOS before 11)
    buf[:len(data)] = data  # pragma: no cover
    return len(data)  # pragma: no cover


def _without_bom(data: bytes) -> bytes:
    """``data`` with a leading UTF-8 byte order mark (Windows editors write one; JSON
    decoders refuse it) turned into three spaces: the same length, so every byte offset
    in a message is still the file's."""
    return b"   " + data[3:] if data.startswith(UTF8_BOM) else data


def write_atomically(target: str | os.PathLike[str], pieces: Iterable[bytes | memoryview], *,
                     durable: bool = False, private: bool = False) -> None:
    """Write ``pieces`` to ``target`` through a temp file in the same folder (``.tmp-*``,
    which cache pruning removes when left behind) renamed over it: readers see the old
    file or the whole new one, never a part, and a write that fails (a full disk, a file
    size limit, an interrupt) leaves the old file as it was.  On any error the temp file is
    removed.  The new file gets the mode a plain ``open`` would give it (0666 less the
    umask), or the mode of the file it replaces; ``private``: 0600 (the cache: copies of
    traces).  ``durable``: the data is flushed to disk before the rename (exports; the
    cache, rebuilt when lost, skips it)."""
    target = os.fspath(target)
    suffix = os.path.splitext(target)[1]
    folder = os.path.dirname(target) or "."
    fd, tmp = _create_temp(folder, suffix)
    try:
        try:
            os.fchmod(fd, 0o600 if private else os.stat(target).st_mode & 0o7777)
        except OSError:
            pass  # no old file (or not ours): the umask decided the mode
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def gzip_pieces(chunks: Iterable[bytes | memoryview], level: int = 9) -> Iterator[bytes]:
    """``chunks`` compressed as one gzip member (header time 0, no file name: the same bytes
    for the same input), piece by piece, for :func:`write_atomically`."""
    comp = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        yield comp.compress(chunk)
    yield comp.flush()


def file_chunks(path: str | os.PathLike[str], size: int = 1 << 22) -> Iterator[bytes]:
    """The bytes of ``path`` in pieces of ``size``."""
    with open(path, "rb") as fh:
        while chunk := fh.read(size):
            yield chunk


def _create_temp(folder: str, suffix: str) -> tuple[int, str]:
    """A new ``.tmp-*`` file in ``folder`` opened for writing, created with mode 0666 so
    that the umask applies (``tempfile.mkstemp`` makes 0600 files)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(folder, f".tmp-{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {folder}")


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
