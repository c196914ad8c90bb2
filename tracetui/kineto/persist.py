"""Save a :class:`KinetoTrace` to one file of raw columns and map it back in milliseconds.

File layout (little-endian)::

    b"TTUIKC01"  u64 header length  header (JSON)  padding  sections ...

The JSON header holds the small things (names, lanes, metadata, warnings, stats, the
caller's ``extra`` dict) and, for every numpy column, a section (offset, dtype, shape).
Sections are 64-byte aligned; the args blob section is page aligned so it can be mapped
on its own.  Loading maps the file (copy-on-write: columns are writable numpy arrays
that never write back) and builds arrays as views into the mapping, so reopening costs
a header decode plus a few list rebuilds, and pages are read only when touched.

Big per-event lists of Python scalars (``pids``, ``tids``, flow columns) are stored as
int32 codes + their unique values (or as an int64 column when every value is an int),
never as millions of JSON items.

Anything unexpected while reading raises :class:`CacheFormatError`; callers treat that
as "no cache" and rebuild.  Values of types this module does not know raise
:class:`CacheFormatError` on save (nothing is written).
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import struct
from typing import Any

import msgspec
import numpy as np

from ..errors import LoadWarning
from ..io.files import write_atomically
from ..io.interning import Codes
from .lanes import Lane
from .trace import FlowTable, GpuLinkStats, KinetoTrace

MAGIC = b"TTUIKC01"
FORMAT_VERSION = 1
_ALIGN = 64
_PAGE = mmap.ALLOCATIONGRANULARITY
#: lists at least this long are stored as columns (codes or int64), not JSON
_COLUMN_MIN = 256
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_CLASSES: dict[str, type] = {c.__name__: c for c in (Lane, GpuLinkStats, FlowTable, LoadWarning)}


class CacheFormatError(Exception):
    """The cache file is missing, stale, corrupt, or a value cannot be stored."""


# --------------------------------------------------------------------------- encode
class _Writer:
    def __init__(self, list_codes: dict[int, tuple[np.ndarray, list[Any]]] | None = None) -> None:
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
        if dataclasses.is_dataclass(v) and type(v).__name__ in _CLASSES and _CLASSES[type(v).__name__] is type(v):
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


def save_trace(trace: KinetoTrace, path: str | os.PathLike[str], *, extra: dict[str, Any] | None = None) -> int:
    """Write ``trace`` to ``path`` atomically (temp file in the same folder + rename).

    ``extra`` (JSON-able) is stored in the header and checked by :func:`load_trace_file`.
    Returns the number of bytes written.  Raises ``OSError`` or :class:`CacheFormatError`.
    """
    w = _Writer(trace._list_codes)
    fields = {f.name: w.encode(getattr(trace, f.name))
              for f in dataclasses.fields(KinetoTrace) if not f.name.startswith("_")}
    header: dict[str, Any] = {"format": FORMAT_VERSION, "extra": extra or {}, "fields": fields,
                              "sections": w.sections}
    # offsets depend on the header length, which depends on the offsets: fix the width
    for sec in w.sections:
        sec["off"] = 0
    probe = msgspec.json.encode(header)
    width = len(probe) + 32 * len(w.sections) + 64
    pos = len(MAGIC) + 8 + width
    for sec in w.sections:
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
        yield MAGIC
        yield struct.pack("<Q", width)
        yield head
        at = len(MAGIC) + 8 + width
        for sec, payload in zip(w.sections, w.payloads):
            if sec["off"] > at:
                yield b"\0" * (sec["off"] - at)
            yield memoryview(payload).cast("B") if isinstance(payload, np.ndarray) else payload
            at = sec["off"] + sec["nbytes"]

    write_atomically(path, pieces())
    return pos


# --------------------------------------------------------------------------- decode
def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a cache file (cheap: reads only the header bytes)."""
    with open(path, "rb") as fh:
        return _read_header(fh, os.fstat(fh.fileno()).st_size)


def _read_header(fh, size: int) -> dict[str, Any]:
    pre = fh.read(len(MAGIC) + 8)
    if len(pre) != len(MAGIC) + 8 or pre[: len(MAGIC)] != MAGIC:
        raise CacheFormatError("not a tracetui cache file (bad magic)")
    (width,) = struct.unpack("<Q", pre[len(MAGIC):])
    if width > size:
        raise CacheFormatError("header length past the end of the file")
    try:
        header = msgspec.json.decode(fh.read(width))
    except msgspec.DecodeError as exc:
        raise CacheFormatError(f"header is not valid JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise CacheFormatError("unknown cache format version")
    if header.get("size") != size:
        raise CacheFormatError(f"file is {size} bytes, header says {header.get('size')}")
    return header


class _Reader:
    def __init__(self, fh, mm: mmap.mmap, sections: list[dict[str, Any]]) -> None:
        self.fh = fh
        self.mm = mm
        self.sections = sections

    def array(self, k: int) -> np.ndarray:
        sec = self.sections[k]
        dt = np.dtype(sec["dtype"])
        shape = tuple(sec["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if count * dt.itemsize != sec["nbytes"] or sec["off"] + sec["nbytes"] > len(self.mm):
            raise CacheFormatError("column size does not match the file")
        return np.frombuffer(self.mm, dtype=dt, count=count, offset=sec["off"]).reshape(shape)

    def blob(self, k: int) -> Any:
        sec = self.sections[k]
        n, off = sec["nbytes"], sec["off"]
        if sec["dtype"] != "bytes" or off % _PAGE or off + n > len(self.mm):
            raise CacheFormatError("bad bytes section")
        if n == 0:
            return b""
        # its own read-only mapping: slicing it gives bytes, like the freshly loaded blob
        return mmap.mmap(self.fh.fileno(), n, access=mmap.ACCESS_READ, offset=off)

    def decode(self, v: Any) -> Any:
        if isinstance(v, list):
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
                raise CacheFormatError("code out of range")
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
            cls = _CLASSES.get(v["$o"])
            if cls is None:
                raise CacheFormatError(f"unknown class {v['$o']!r}")
            return cls(**{k: self.decode(x) for k, x in v["f"].items()})
        raise CacheFormatError("unknown tagged value")


def _hashable(k: Any) -> Any:
    if isinstance(k, list):
        return tuple(_hashable(x) for x in k)
    return k


def load_trace_file(path: str | os.PathLike[str], *, expect: dict[str, Any] | None = None) -> KinetoTrace:
    """Map a file written by :func:`save_trace` back into a :class:`KinetoTrace`.

    ``expect``: every key must equal the stored ``extra`` value, else the file is stale.
    Raises :class:`CacheFormatError` (or ``OSError``) when the file cannot be used.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        header = _read_header(fh, size)
        extra = header.get("extra") or {}
        for k, want in (expect or {}).items():
            if extra.get(k) != want:
                raise CacheFormatError(f"stale: {k} differs")
        if size == 0:
            raise CacheFormatError("empty file")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        reader = _Reader(fh, mm, header["sections"])
        try:
            values = {k: reader.decode(v) for k, v in header["fields"].items()}
            trace = KinetoTrace(**values)
        except CacheFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CacheFormatError(f"cannot rebuild the trace ({type(exc).__name__}: {exc})") from None
    _check(trace)
    return trace


def _check(t: KinetoTrace) -> None:
    """Cheap structural checks (lengths, offsets, id ranges), a few vector passes."""
    n, nn = t.n_events, t.n_nodes
    per_event = ("dur", "kind", "ph", "name_id", "cat_id", "correlation", "external_id", "rf_id", "seq",
                 "fwd_tid", "device", "stream", "lane_of", "launch_of", "fwd_of")
    per_node = ("depth", "cpu_op_of")
    bad = [c for c in per_event if getattr(t, c).shape != (n,)]
    bad += [c for c in per_node if getattr(t, c).shape != (nn,)]
    if t.nopy_parent is not None and t.nopy_parent.shape != (nn,):
        bad.append("nopy_parent")
    if len(t.pids) != n or len(t.tids) != n:
        bad.append("pids/tids")
    if t.args_offsets.shape != (n + 1,) or t.child_start.shape != (nn + 1,):
        bad.append("offsets")
    if bad:
        raise CacheFormatError(f"column lengths do not match: {', '.join(bad)}")
    if n and (int(t.args_offsets[-1]) > len(t.args_blob) or int(t.args_offsets[0]) != 0
              or int(t.name_id.max()) >= len(t.names) or int(t.cat_id.max()) >= len(t.cats)):
        raise CacheFormatError("args offsets or name ids out of range")
    fl = t.flows
    if not (fl.ph.shape[0] == fl.ts.shape[0] == len(fl.cat) == len(fl.flow_id) == len(fl.pid) == len(fl.tid)):
        raise CacheFormatError("flow columns do not match")
    if int(t.child_start[-1]) != t.child_index.shape[0] or nn - n != len(t.lanes):
        raise CacheFormatError("tree arrays do not match")
    if nn and (int(t.parent.max()) >= nn or (t.child_index.size and int(t.child_index.max()) >= nn)):
        raise CacheFormatError("tree ids out of range")
