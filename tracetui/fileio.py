"""Read a trace file's bytes: plain or gzip (detected by magic bytes, not file name).

A gzip stream that ends early (the profiler was killed while writing) is not an
error here: every byte that could be decompressed is returned and ``truncated``
is set, so the JSON layer can recover the complete events before the cut.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

from .errors import TraceFileError, TraceTooLargeError

GZIP_MAGIC = b"\x1f\x8b"

#: Bytes of decompressed JSON we accept per byte of available memory.  Loading
#: needs roughly the text plus ~1x more for columns; refuse early instead of swapping.
MEMORY_FACTOR = 2.5


@dataclass
class FileBytes:
    """The decompressed content of one trace file."""

    path: str
    data: bytes
    compressed: bool
    #: the gzip stream ended before its end marker (bytes after the cut are lost)
    gzip_truncated: bool = False
    #: size on disk, in bytes
    file_size: int = 0


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None where it cannot be read."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _check_memory(path: str, expected_bytes: int) -> None:
    avail = available_memory_bytes()
    if avail is not None and expected_bytes * MEMORY_FACTOR > avail:
        raise TraceTooLargeError(
            path,
            f"needs about {expected_bytes * MEMORY_FACTOR / 2**30:.1f} GiB of memory to load "
            f"but only {avail / 2**30:.1f} GiB is available",
        )


def _gunzip(path: str, raw: bytes) -> tuple[bytes, bool]:
    """Decompress every gzip member; return (data, truncated)."""
    out: list[bytes] = []
    pos = 0
    truncated = False
    while pos < len(raw):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(raw[pos:]))
            out.append(d.flush())
        except zlib.error as exc:
            if not out:
                raise TraceFileError(path, f"not a valid gzip stream ({exc})", position="byte 0") from None
            truncated = True
            break
        if not d.eof:
            truncated = True
            break
        unused = d.unused_data
        pos = len(raw) - len(unused)
        # trailing zero padding after a member is legal and ignored
        if not unused.strip(b"\x00"):
            break
        if not unused.startswith(GZIP_MAGIC):
            break
    return b"".join(out), truncated


def read_trace_bytes(path: str | os.PathLike[str]) -> FileBytes:
    """Return the (decompressed) bytes of ``path``; raise :class:`TraceFileError` if unreadable."""
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        if os.path.isdir(p):
            raise TraceFileError(p, "is a directory, not a trace file")
        with open(p, "rb") as fh:
            head = fh.read(2)
            if head == GZIP_MAGIC:
                # gzip of JSON traces compresses ~10-20x: estimate before inflating
                _check_memory(p, size * 12)
            else:
                _check_memory(p, size)
            fh.seek(0)
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
        data, truncated = _gunzip(p, raw)
        return FileBytes(p, data, True, truncated, size)
    return FileBytes(p, raw, False, False, size)
