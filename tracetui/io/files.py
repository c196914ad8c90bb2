"""Read a trace file's bytes: plain or gzip (detected by magic bytes, not file name).

A gzip stream that ends early (the profiler was killed while writing) or whose data is
corrupt part way is not an error here: every byte that could be decompressed is returned
and ``gzip_truncated`` is set (``gzip_error`` says why when the data was corrupt), so the
JSON layer can recover the complete events before the cut.

Only regular files are read (:func:`open_regular`: a FIFO, a device, a socket is refused at
once, and the open never blocks), up to the size they had when opened.

Memory: a file that cannot fit is refused *before* the machine starts swapping.  Plain
files are checked from their size; gzip files from their size first, then while they are
inflated (in bounded steps), so a file that decompresses 50x (or a gzip bomb) stops as
soon as it passes the limit.  The limit is the tightest of MemAvailable, what every cgroup
above the process leaves (v2 and v1, nested), ``ulimit -v``/``-d`` and
``$TRACETUI_MEMORY_LIMIT_MB`` (:func:`available_memory_bytes`).

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

from isal import isal_zlib

from .. import config
from ..errors import TraceFileError, TraceTooLargeError
from ..units import bytes_rounded

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"

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


#: (limit, usage, reclaimable page cache in memory.stat) file names of cgroup v2 and v1
_CGROUP_FILES = {"v2": ("memory.max", "memory.current", b"inactive_file"),
                 "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes", b"total_inactive_file")}


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None


def _cgroup_level_left(folder: str, version: str) -> int | None:
    """Memory left under the limit of one cgroup folder (limit - usage + its inactive page
    cache, which the kernel reclaims before it kills), or None when it sets no limit."""
    limit_f, usage_f, cache_key = _CGROUP_FILES[version]
    raw = _read_text(os.path.join(folder, limit_f))
    if raw is None or raw.strip() in ("", "max"):
        return None
    try:
        limit = int(raw.strip())
        usage = int((_read_text(os.path.join(folder, usage_f)) or "0").strip() or 0)
    except ValueError:
        return None
    if limit >= 1 << 60:  # v1 writes a huge number for "no limit"
        return None
    reclaimable = 0
    for line in (_read_text(os.path.join(folder, "memory.stat")) or "").splitlines():
        name, _, value = line.partition(" ")
        if name.encode() == cache_key and value.strip().isdigit():
            reclaimable = int(value)
            break
    return max(limit - usage + min(reclaimable, usage), 0)


def _cgroup_mounts(mountinfo: str) -> dict[str, tuple[str, str]]:
    """{"v2" or "v1": (mount point, root of the mount inside the hierarchy)} from
    /proc/self/mountinfo (v1: the hierarchy holding the memory controller)."""
    out: dict[str, tuple[str, str]] = {}
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, after = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(after) < 3:
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        if after[0] == "cgroup2":
            out.setdefault("v2", (point, root))
        elif after[0] == "cgroup" and "memory" in after[2].split(","):
            out.setdefault("v1", (point, root))
    return out


def cgroup_memory_left(proc_cgroup: str, mountinfo: str, prefix: str = "") -> int | None:
    """Memory this process can still take before a cgroup limit stops it (bytes), or None
    when no limit is set: the tightest over the process's own cgroup and every cgroup above
    it (limits nest: Slurm job > step > task, ``systemd-run -p MemoryMax``, a container), for
    cgroup v2 and v1.  ``proc_cgroup`` and ``mountinfo`` are the texts of
    /proc/self/cgroup and /proc/self/mountinfo; ``prefix`` is put before every mount point
    (tests)."""
    mounts = _cgroup_mounts(mountinfo)
    best: int | None = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        version = "v2" if hid == "0" and controllers == "" else "v1" if "memory" in controllers.split(",") else None
        if version is None or version not in mounts:
            continue
        point, root = mounts[version]
        # the mount shows the hierarchy from ``root`` down (a container's own cgroup)
        if root == "/":
            rel = path
        elif path == root or path.startswith(root + "/"):
            rel = path[len(root):]
        else:  # the process's cgroup lies outside what the mount shows: its root is the nearest
            rel = "/"
        folder = os.path.normpath(prefix + point + "/" + rel.strip("/"))
        top = os.path.normpath(prefix + point)
        while True:
            left = _cgroup_level_left(folder, version)
            if left is not None:
                best = left if best is None else min(best, left)
            if folder == top or len(folder) <= len(top):
                break
            folder = os.path.dirname(folder)
    return best


def _rlimit_left() -> int | None:
    """Address space left under ``ulimit -v`` (RLIMIT_AS) or the data limit (RLIMIT_DATA),
    from the sizes in /proc/self/status; None when neither is set."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return None
    status = _read_text("/proc/self/status") or ""
    sizes = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmSize", "VmData") and value.split() and value.split()[0].isdigit():
            sizes[key] = int(value.split()[0]) * 1024
    best = None
    for limit_id, key in ((resource.RLIMIT_AS, "VmSize"), (getattr(resource, "RLIMIT_DATA", None), "VmData")):
        if limit_id is None:
            continue
        soft = resource.getrlimit(limit_id)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        left = max(soft - sizes.get(key, 0), 0)
        best = left if best is None else min(best, left)
    return best


def available_memory_bytes() -> int | None:
    """Memory this process can still use (bytes): the tightest of MemAvailable from
    /proc/meminfo, what the limits of the process's cgroups leave (:func:`cgroup_memory_left`)
    and what ``ulimit -v``/``-d`` leaves; None where none of them can be read."""
    found = []
    for line in (_read_text("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:") and len(line.split()) > 1 and line.split()[1].isdigit():
            found.append(int(line.split()[1]) * 1024)
            break
    proc_cgroup = _read_text("/proc/self/cgroup")
    mountinfo = _read_text("/proc/self/mountinfo")
    if proc_cgroup and mountinfo:
        cg = cgroup_memory_left(proc_cgroup, mountinfo)
        if cg is not None:
            found.append(cg)
    rl = _rlimit_left()
    if rl is not None:
        found.append(rl)
    if config.env("TRACETUI_MEMORY_LIMIT_MB"):
        found.append(config.env_megabytes("TRACETUI_MEMORY_LIMIT_MB", float("inf")))
    return min(found) if found else None


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
    when it was opened.  Raises :class:`TraceFileError` if it cannot be read,
    :class:`TraceTooLargeError` if loading it would need more memory than is available.
    """
    p = trace_path(path)
    with open_regular(p) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            avail = available_memory_bytes()
            # a gzip file inflates to at least its own size: refuse hopeless files before reading
            _check_memory(p, size, avail)
            # as many bytes as it had when opened: a file still growing (a profiler writing) is
            # read as it was, and a file that claims 0 bytes reads none
            raw = fh.read(size)
        except OSError as exc:
            raise TraceFileError(p, f"cannot be read ({exc.strerror or exc})") from None
    if raw.startswith(GZIP_MAGIC):
        room = None if avail is None else max(avail - len(raw), 0)
        g = _gunzip_whole(p, raw, room) or _gunzip(p, raw, room)
        return FileBytes(p, _without_bom(g.data), True, g.truncated, size, g.error, g.used, g.trailing)
    return FileBytes(p, _without_bom(raw), False, False, size)


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
