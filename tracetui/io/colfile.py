"""One file of raw numpy columns plus a JSON header, written atomically and read back
verified: the on-disk form of every cache entry (Kineto traces, Execution Traces, links).

File layout (little-endian)::

    b"TTUIKC03"  u64 header length  u32 CRC-32 of the header  u32 0  header (JSON)  padding  sections ...

The JSON header holds the entry's ``kind`` (``"kineto"``, ``"et"``, ``"link"``), the small
things (names, lanes, metadata, warnings, stats, the caller's ``extra`` dict) and, for
every numpy column, a section (offset, dtype, shape, CRC-32 of its bytes).  Sections are
64-byte aligned; raw byte blobs (args, ET node texts) are page aligned.  Loading checks
the header's CRC, then reads the sections into private anonymous memory and checks each
one's CRC (ISA-L's CRC-32, ~18 GB/s: 2 ms for the 38 MB entry of a 216k-event trace)
before building arrays as views into that memory.  The fields a caller lets wait
(``defer``: a big Kineto trace's columns) are read the same way when first used
(:class:`Deferred`): a reopen reads the header and the small fields, so a 2M-event trace
opens in tens of milliseconds instead of reading its whole 400 MB entry, and what is
never used (an args blob of 200 MB, link columns) is never read.

A file is not trusted: any flipped byte is found by the checksums
(:class:`CacheCorruptError`, never a wrong column; a deferred field found damaged when it is
first read comes from the caller's ``recover``), and nothing of the file stays mapped, so
a file truncated or rewritten while a process uses its columns cannot kill it with SIGBUS
(a mapped file that shrinks does).  Columns are writable numpy arrays that never write back.

Values: None, bool, int, float (non-finite ones too), str, numpy arrays and scalars,
bytes-like blobs, lists, tuples, dicts, and the dataclasses the caller names in
``classes`` (by class name), nested.  Big lists of Python scalars (``pids``, ``tids``,
flow columns) are stored as int32 codes + their unique values (or as an int64 column when
every value is an int), never as millions of JSON items.

Anything unexpected while reading raises :class:`CacheFormatError`; callers treat that
as "no cache" and rebuild (and say so when it is :class:`CacheCorruptError`: a damaged
file, not merely an old one).  Values of types this module does not know raise
:class:`CacheFormatError` on save (nothing is written).
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import stat
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
from isal.isal_zlib import crc32

from ..errors import TraceFileError
from .files import write_atomically
from .interning import Codes

__all__ = ["MAGIC", "FORMAT_VERSION", "CacheFormatError", "CacheCorruptError", "Deferred", "save_fields",
           "load_fields", "read_header"]

MAGIC = b"TTUIKC03"
#: magic of every version of the format: another version is an old entry, not a damaged one
_MAGIC_FAMILY = b"TTUIKC"
FORMAT_VERSION = 3
#: magic, header length, header CRC-32, reserved
_PREAMBLE = struct.Struct("<8sQII")
_ALIGN = 64
_PAGE = mmap.ALLOCATIONGRANULARITY
#: lists at least this long are stored as columns (codes or int64), not JSON
_COLUMN_MIN = 256
#: a deferrable field whose sections hold at least this many bytes is read on first use
DEFER_BYTES = 1 << 16
#: types of the header's JSON values that stand for themselves
_SCALARS = {str, int, float, bool, type(None)}


class CacheFormatError(Exception):
    """The cache file is missing, stale, corrupt, or a value cannot be stored."""


class CacheCorruptError(CacheFormatError):
    """The cache file is damaged: a checksum differs, it is shorter or longer than its
    header says, or its structure does not hold together."""


# --------------------------------------------------------------------------- encode
class _Writer:
    def __init__(self, classes: dict[str, type], list_codes: dict[int, tuple[np.ndarray, list[Any]]] | None = None
                 ) -> None:
        self.classes = classes
        self.sections: list[dict[str, Any]] = []
        self.payloads: list[Any] = []  # ndarray or bytes-like, in section order
        #: id(list) -> (codes, values) of lists the build already interned
        self.list_codes = list_codes or {}

    def add_array(self, arr: np.ndarray) -> int:
        if arr.dtype.hasobject:
            raise CacheFormatError("object arrays are not stored")
        arr = np.ascontiguousarray(arr)
        self.sections.append({"dtype": arr.dtype.str, "shape": list(arr.shape), "nbytes": int(arr.nbytes)})
        self.payloads.append(arr)
        return len(self.sections) - 1

    def add_bytes(self, data: Any) -> int:
        mv = memoryview(data).cast("B")
        self.sections.append({"dtype": "bytes", "shape": [mv.nbytes], "nbytes": mv.nbytes, "page": True})
        self.payloads.append(mv)
        return len(self.sections) - 1

    def encode(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else {"$f": repr(v)}
        if isinstance(v, np.ndarray):
            return {"$a": self.add_array(v)}
        if isinstance(v, (np.integer, np.bool_)):
            return self.encode(v.item())
        if isinstance(v, np.floating):
            return self.encode(float(v))
        if isinstance(v, (bytes, bytearray, memoryview, mmap.mmap)):
            return {"$b": self.add_bytes(v)}
        if isinstance(v, list):
            if len(v) >= _COLUMN_MIN:
                known = self.list_codes.get(id(v))
                if known is not None and len(known[0]) == len(v):
                    # interned by the build: stored as they are (0.7 s of a 2M-event save)
                    return {"$c": self.add_array(np.asarray(known[0], dtype=np.int32)),
                            "u": [self.encode(x) for x in known[1]]}
                col = self._column(v)
                if col is not None:
                    return col
            return [self.encode(x) for x in v]
        if isinstance(v, tuple):
            return {"$t": [self.encode(x) for x in v]}
        if isinstance(v, dict):
            return {"$d": [[self.encode(k), self.encode(x)] for k, x in v.items()]}
        if dataclasses.is_dataclass(v) and self.classes.get(type(v).__name__) is type(v):
            return {"$o": type(v).__name__,
                    "f": {f.name: self.encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        raise CacheFormatError(f"cannot store a value of type {type(v).__name__}")

    def _column(self, v: list) -> Any:
        """A long list of scalars as codes + uniques, or as an int64 column; None: not a column.

        numpy and a dict do the factorizing: the parse does not import pandas (0.3 s)."""
        types = set(map(type, v))
        if not types <= {int, str, type(None)}:
            return None
        if types == {int}:
            try:
                arr = np.fromiter(v, dtype=np.int64, count=len(v))
            except OverflowError:
                return None
            uniq, codes = np.unique(arr, return_inverse=True)
            if len(uniq) * 2 <= len(v):
                return {"$c": self.add_array(codes.astype(np.int32)), "u": uniq.tolist()}
            return {"$i": self.add_array(arr)}
        index = Codes()
        codes = np.fromiter(map(index.__getitem__, v), dtype=np.int32, count=len(v))
        if len(index) * 2 > len(v) and types != {str}:
            return None
        return {"$c": self.add_array(codes), "u": [self.encode(x) for x in index]}


def save_fields(path: str | os.PathLike[str], kind: str, fields: dict[str, Any], *, classes: dict[str, type],
                extra: dict[str, Any] | None = None,
                list_codes: dict[int, tuple[np.ndarray, list[Any]]] | None = None) -> int:
    """Write ``fields`` (name -> value) as an entry of ``kind`` to ``path`` atomically (temp
    file in the same folder + rename, mode 0600).

    ``classes``: the dataclasses that may occur among the values, by class name.
    ``extra`` (JSON-able) is stored in the header and checked by :func:`load_fields`.
    ``list_codes``: ``id(list) -> (codes, values)`` of long lists already interned.
    Returns the number of bytes written.  Raises ``OSError`` or :class:`CacheFormatError`.
    """
    w = _Writer(classes, list_codes)
    encoded = {name: w.encode(v) for name, v in fields.items()}
    header: dict[str, Any] = {"format": FORMAT_VERSION, "kind": kind, "extra": extra or {}, "fields": encoded,
                              "sections": w.sections}
    # offsets depend on the header length, which depends on the offsets: fix the width
    for sec in w.sections:
        sec["off"] = 0
    for sec, payload in zip(w.sections, w.payloads):
        sec["crc"] = crc32(memoryview(payload).cast("B") if isinstance(payload, np.ndarray) else payload)
    probe = msgspec.json.encode(header)
    width = len(probe) + 32 * len(w.sections) + 64
    pos = _PREAMBLE.size + width
    # the columns side by side (one read brings them all back), then the page-aligned blobs
    for sec in sorted(w.sections, key=lambda sec: bool(sec.get("page"))):
        align = _PAGE if sec.get("page") else _ALIGN
        pos = -(-pos // align) * align
        sec["off"] = pos
        pos += sec["nbytes"]
    header["size"] = pos
    head = msgspec.json.encode(header)
    if len(head) > width:  # pragma: no cover - the width above leaves room for every offset
        raise CacheFormatError("header grew past its reserved size")
    head = head + b" " * (width - len(head))

    def pieces():
        yield _PREAMBLE.pack(MAGIC, width, crc32(head), 0)
        yield head
        at = _PREAMBLE.size + width
        for sec, payload in sorted(zip(w.sections, w.payloads), key=lambda sp: sp[0]["off"]):
            if sec["off"] > at:
                yield b"\0" * (sec["off"] - at)
            yield memoryview(payload).cast("B") if isinstance(payload, np.ndarray) else payload
            at = sec["off"] + sec["nbytes"]

    write_atomically(path, pieces(), private=True)
    return pos


# --------------------------------------------------------------------------- decode
def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a cache file (cheap: reads only the header bytes)."""
    with open(path, "rb") as fh:
        return _read_header(fh.fileno(), os.fstat(fh.fileno()).st_size)


def _pread(fd: int, buf: Any, offset: int) -> None:
    """Fill ``buf`` from ``fd`` at ``offset``; a file shorter than that is damaged."""
    view = memoryview(buf).cast("B")
    got = 0
    while got < view.nbytes:
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            raise CacheCorruptError(f"file ends at byte {offset + got}, before the data it lists")
        got += n


def _read_header(fd: int, size: int) -> dict[str, Any]:
    pre = os.pread(fd, _PREAMBLE.size, 0)
    if len(pre) < len(_MAGIC_FAMILY) or not pre.startswith(_MAGIC_FAMILY):
        raise CacheCorruptError("not a tracetui cache file (bad magic)")
    if pre[:len(MAGIC)] != MAGIC:
        if pre[len(_MAGIC_FAMILY):len(MAGIC)].isdigit():
            raise CacheFormatError("written by another version of the cache format")
        raise CacheCorruptError("not a tracetui cache file (bad magic)")
    if len(pre) != _PREAMBLE.size:
        raise CacheCorruptError("file ends inside its preamble")
    _, width, want, _ = _PREAMBLE.unpack(pre)
    if width > size - _PREAMBLE.size:
        raise CacheCorruptError("header length past the end of the file")
    head = bytearray(width)
    _pread(fd, head, _PREAMBLE.size)
    if crc32(head) != want:
        raise CacheCorruptError("the header's checksum differs")
    try:
        header = msgspec.json.decode(head)
    except msgspec.DecodeError as exc:  # pragma: no cover - the checksum matched
        raise CacheCorruptError(f"header is not valid JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise CacheFormatError("unknown cache format version")
    if header.get("size") != size:
        raise CacheCorruptError(f"file is {size} bytes, header says {header.get('size')}")
    return header


class _Reader:
    """The sections of one cache file, read into private anonymous memory and checked.

    Eager (every entry but a big Kineto trace's deferred fields): every section is read
    once and its CRC-32 compared with the header's; the blob sections get an anonymous
    mapping of their own (slicing one gives ``bytes``, like the freshly loaded blob),
    every other section lands in one buffer the arrays view (one read covers them all:
    they lie side by side).  Lazy (``eager=False``): nothing is read here; each section
    is read and checked when a value first needs it (:meth:`section`), from ``fd``,
    which this reader then owns (closed once every :class:`Deferred` is read, or with
    the reader)."""

    def __init__(self, fd: int, size: int, sections: list[dict[str, Any]], classes: dict[str, type],
                 eager: bool = True) -> None:
        self.sections = sections
        self.classes = classes
        self.blobs: dict[int, Any] = {}
        self.fd = fd
        self.lock = threading.RLock()
        self.pending = 0  #: deferred values not read yet
        self._closer: Any = None
        #: for a lazy reader: the entry's path, the trace it holds (for messages), and what
        #: gives a field whose sections are found damaged (None: an error says so)
        self.entry = self.label = ""
        self.recover: Callable[[str, Exception], Any] | None = None
        spans = []
        for sec in sections:
            try:
                off, n = int(sec["off"]), int(sec["nbytes"])
            except (KeyError, TypeError, ValueError):
                raise CacheCorruptError("a section without offset or size") from None
            if off < 0 or n < 0 or off + n > size:
                raise CacheCorruptError("a section lies past the end of the file")
            spans.append((off, n))
        self.mm: Any = None
        if not eager:
            return
        cols = [(off, n) for (off, n), sec in zip(spans, sections) if sec.get("dtype") != "bytes" and n]
        lo = min((off for off, _ in cols), default=0)
        hi = max((off + n for off, n in cols), default=0)
        self.mm = mmap.mmap(-1, max(hi, 1))
        if hi > lo:
            _pread(fd, memoryview(self.mm)[lo:hi], lo)
        for k, ((off, n), sec) in enumerate(zip(spans, sections)):
            if sec.get("dtype") == "bytes":
                buf = mmap.mmap(-1, n) if n else b""
                if n:
                    _pread(fd, buf, off)
                self.blobs[k] = buf
            else:
                buf = memoryview(self.mm)[off:off + n]
            if crc32(buf) != sec.get("crc"):
                raise CacheCorruptError(f"the checksum of section {k} differs")

    def section(self, k: int) -> Any:
        """Section ``k`` of a lazy reader, read into private memory and checked (each section
        belongs to one value, read once): an anonymous mapping for a blob, a numpy byte
        array otherwise."""
        with self.lock:
            sec = self.sections[k]
            n = int(sec["nbytes"])
            if sec.get("dtype") == "bytes":
                buf: Any = mmap.mmap(-1, n) if n else b""
            else:
                buf = np.empty(n, dtype=np.uint8)
            if n:
                if self.fd < 0:  # pragma: no cover - every section of a closed reader was read
                    raise CacheCorruptError("the entry was closed before all of it was read")
                _pread(self.fd, buf, int(sec["off"]))
            if crc32(buf) != sec.get("crc"):
                raise CacheCorruptError(f"the checksum of section {k} differs")
            return buf

    def keep_open(self, deferred: int) -> None:
        """This reader owns its file from now on, for ``deferred`` values still to read."""
        self.pending = deferred
        self._closer = weakref.finalize(self, os.close, self.fd)

    def damaged(self, name: str, exc: Exception) -> Any:
        """Field ``name`` could not be read (``exc``): the entry is removed, and the field
        comes from :attr:`recover`, else :class:`~tracetui.errors.TraceFileError` says so."""
        _remove_if_same(self.entry, self.fd)
        if self.recover is not None:
            return self.recover(name, exc)
        raise TraceFileError(self.label or self.entry, f"its cached copy was damaged while in use ({exc}); the "
                                                       f"entry was removed: open the trace again") from None

    def one_read(self) -> None:
        """A deferred value was read: close the file after the last one."""
        self.pending -= 1
        if self.pending <= 0 and self._closer is not None:
            self._closer()
            self.fd = -1

    def array(self, k: int) -> np.ndarray:
        sec = self.sections[k]
        dt = np.dtype(sec["dtype"])
        shape = tuple(sec["shape"])
        count = math.prod(shape)
        if self.mm is None:
            if dt.hasobject or count * dt.itemsize != sec["nbytes"]:
                raise CacheCorruptError("column size does not match the file")
            return self.section(k).view(dt).reshape(shape)
        if count * dt.itemsize != sec["nbytes"] or sec["off"] + sec["nbytes"] > len(self.mm):
            raise CacheCorruptError("column size does not match the file")
        return np.frombuffer(self.mm, dtype=dt, count=count, offset=sec["off"]).reshape(shape)

    def blob(self, k: int) -> Any:
        sec = self.sections[k]
        if sec["dtype"] != "bytes" or sec["off"] % _PAGE or (self.mm is not None and k not in self.blobs):
            raise CacheCorruptError("bad bytes section")
        return self.blobs[k] if self.mm is not None else self.section(k)

    def decode(self, v: Any) -> Any:
        if isinstance(v, list):
            if set(map(type, v)) <= _SCALARS:  # names, plain JSON: nothing tagged inside
                return v
            return [self.decode(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "$a" in v:
            return self.array(v["$a"])
        if "$c" in v:
            uniq = np.empty(len(v["u"]), dtype=object)
            uniq[:] = [self.decode(x) for x in v["u"]]
            codes = self.array(v["$c"])
            if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= len(uniq)):
                raise CacheCorruptError("code out of range")
            return uniq[codes].tolist()
        if "$i" in v:
            return self.array(v["$i"]).tolist()
        if "$b" in v:
            return self.blob(v["$b"])
        if "$t" in v:
            return tuple(self.decode(x) for x in v["$t"])
        if "$d" in v:
            return {_hashable(self.decode(k)): self.decode(x) for k, x in v["$d"]}
        if "$f" in v:
            return float(v["$f"])
        if "$o" in v:
            cls = self.classes.get(v["$o"])
            if cls is None:
                raise CacheCorruptError(f"unknown class {v['$o']!r}")
            return cls(**{k: self.decode(x) for k, x in v["f"].items()})
        raise CacheCorruptError("unknown tagged value")


class Deferred:
    """A field of an entry read on first use (:func:`load_fields` with ``defer``): its
    sections are read into private memory and their CRC-32s checked when :meth:`value` is
    first called, not when the entry is opened.  ``shape``: the field's shape (a column's;
    ``(rows,)`` of a list, ``(bytes,)`` of a blob; None for other values) without reading it;
    ``check(value)``, when set, raises :class:`CacheCorruptError` for a value that does not
    fit the rest of the entry.

    A section found damaged then (the file was changed in place while in use) is never
    used: the entry is removed and the value comes from ``recover(name)`` (the caller reads
    the trace again from its file), or, without one, :class:`~tracetui.errors.TraceFileError`
    says so in one line."""

    __slots__ = ("_reader", "_encoded", "name", "shape", "nbytes", "check", "_value", "_done")

    def __init__(self, reader: _Reader, name: str, encoded: Any, shape: tuple[int, ...] | None, nbytes: int) -> None:
        self._reader, self.name, self._encoded, self.shape, self.nbytes = reader, name, encoded, shape, nbytes
        self.check: Callable[[Any], None] | None = None
        self._value: Any = None
        self._done = False

    def value(self) -> Any:
        """The field, read and checked on the first call."""
        if self._done:
            return self._value
        reader = self._reader
        with reader.lock:
            if self._done:
                return self._value
            try:
                value = reader.decode(self._encoded)
                if self.check is not None:
                    self.check(value)
            except (CacheFormatError, OSError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                value = reader.damaged(self.name, exc)
            self._value, self._done = value, True
            self._encoded = None
            reader.one_read()
        return value


def _remove_if_same(entry: str, fd: int) -> None:
    """Unlink ``entry`` when it is still the file open as ``fd`` (not a newer entry written since)."""
    try:
        if fd >= 0 and os.path.samestat(os.stat(entry), os.fstat(fd)):
            os.unlink(entry)
    except OSError:
        pass


def _sections_of(v: Any, out: list[int]) -> list[int]:
    """The sections an encoded value refers to (appended to ``out``)."""
    if isinstance(v, dict):
        for tag in ("$a", "$c", "$i", "$b"):
            if tag in v and isinstance(v[tag], int):
                out.append(v[tag])
        for x in v.values():
            if isinstance(x, (dict, list)):
                _sections_of(x, out)
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)):
                _sections_of(x, out)
    return out


def _shape_of(v: Any, sections: list[dict[str, Any]]) -> tuple[int, ...] | None:
    """The shape of an encoded column (``(rows,)`` of a list, ``(bytes,)`` of a blob) from
    the header alone; None for any other value."""
    if isinstance(v, dict):
        for tag in ("$a", "$c", "$i", "$b"):
            k = v.get(tag)
            if isinstance(k, int) and 0 <= k < len(sections):
                shape = sections[k].get("shape")
                if not isinstance(shape, list) or not all(isinstance(x, int) for x in shape):
                    return None
                return tuple(shape) if tag == "$a" else tuple(shape[:1])
    return None


def _hashable(k: Any) -> Any:
    if isinstance(k, list):
        return tuple(_hashable(x) for x in k)
    return k


def load_fields(path: str | os.PathLike[str], kinds: dict[str, dict[str, type]], *,
                expect: dict[str, Any] | None = None, defer: dict[str, frozenset[str]] | None = None,
                defer_bytes: int | None = None, label: str | None = None,
                recover: Callable[[str, Exception], Any] | None = None) -> tuple[str, dict[str, Any]]:
    """(kind, fields) of an entry written by :func:`save_fields`.

    ``kinds``: the kinds of entry wanted, each with the dataclasses its values may hold.
    ``expect``: every key must equal the stored ``extra`` value, else the file is stale.
    ``defer``: per kind, the fields that may be read on first use: each of them whose
    sections hold at least ``defer_bytes`` (default :data:`DEFER_BYTES`) bytes is a :class:`Deferred` (read and checked
    by its ``value()``; the file stays open until then).  A deferred field found damaged
    then comes from ``recover(name, error)`` (the entry removed first); without it
    :class:`~tracetui.errors.TraceFileError` names ``label`` (the trace) in one line.
    Raises :class:`CacheCorruptError` when the file is damaged (checksums, size,
    structure), :class:`CacheFormatError` when it is stale, of another kind or of another
    format version, ``OSError`` when it cannot be read.  The caller checks that the
    values fit together (lengths, ranges) and raises :class:`CacheCorruptError` if not.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    owned = False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CacheCorruptError("not a regular file")
        size = st.st_size
        if size == 0:
            raise CacheCorruptError("empty file")
        header = _read_header(fd, size)
        kind = header.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            raise CacheFormatError(f"holds a {kind!r} entry, not one of {', '.join(kinds)}")
        extra = header.get("extra") or {}
        for k, want in (expect or {}).items():
            if extra.get(k) != want:
                raise CacheFormatError(f"stale: {k} differs")
        lazy = (defer or {}).get(kind, frozenset())
        least = DEFER_BYTES if defer_bytes is None else defer_bytes
        try:
            sections = header["sections"]
            reader = _Reader(fd, size, sections, kinds[kind], eager=not lazy)
            reader.entry, reader.label, reader.recover = os.fspath(path), label or "", recover
            fields: dict[str, Any] = {}
            deferred = 0
            for k, v in header["fields"].items():
                refs = _sections_of(v, []) if k in lazy else []
                nbytes = sum(int(sections[i]["nbytes"]) for i in refs)
                if refs and nbytes >= least:
                    fields[k] = Deferred(reader, k, v, _shape_of(v, sections), nbytes)
                    deferred += 1
                else:
                    fields[k] = reader.decode(v)
            if deferred:
                reader.keep_open(deferred)
                owned = True
            return kind, fields
        except CacheFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise CacheCorruptError(f"cannot rebuild the entry ({type(exc).__name__}: {exc})") from None
    finally:
        if not owned:
            os.close(fd)
