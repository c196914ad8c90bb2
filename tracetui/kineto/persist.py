"""Save a :class:`KinetoTrace` to one cache file and read it back in milliseconds.

The file format -- raw numpy columns plus a JSON header, a CRC-32 per section, read back
into private memory -- is :mod:`tracetui.io.colfile`'s (entries of kind ``"kineto"``);
this module says which fields of a trace are stored and checks that the columns read
back fit together (:func:`_check`).  Lists the build already interned (``pids``,
``tids``) are stored as their codes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.colfile import (
    FORMAT_VERSION,
    MAGIC,
    CacheCorruptError,
    CacheFormatError,
    Deferred,
    load_fields,
    read_header,
    save_fields,
)
from .lanes import Lane
from .sniff import FORMAT_NAME
from .trace import FlowTable, GpuLinkStats, KinetoTrace

__all__ = ["FORMAT_VERSION", "MAGIC", "CacheCorruptError", "CacheFormatError", "KIND", "CLASSES", "load_trace_file",
           "read_header", "save_trace", "trace_from_fields"]

KIND = FORMAT_NAME
#: the dataclasses a Kineto entry holds
CLASSES: dict[str, type] = {c.__name__: c for c in (Lane, GpuLinkStats, FlowTable, LoadWarning)}
#: the fields a reopened trace reads on first use (``KinetoTrace.__getattr__``), not when the
#: entry is opened: every field without a class-level default (an attribute missing from the
#: instance must reach ``__getattr__``); only those of a big entry's columns and lists are
#: deferred (:func:`~tracetui.io.colfile.load_fields`), each read and checked when first used
DEFERRED = frozenset(f.name for f in dataclasses.fields(KinetoTrace)
                     if not f.name.startswith("_") and not hasattr(KinetoTrace, f.name))


def save_trace(trace: KinetoTrace, path: str | os.PathLike[str], *, extra: dict[str, Any] | None = None) -> int:
    """Write ``trace`` to ``path`` atomically (temp file in the same folder + rename).

    ``extra`` (JSON-able) is stored in the header and checked by :func:`load_trace_file`.
    Returns the number of bytes written.  Raises ``OSError`` or :class:`CacheFormatError`.
    """
    fields = {f.name: getattr(trace, f.name) for f in dataclasses.fields(KinetoTrace) if not f.name.startswith("_")}
    return save_fields(path, KIND, fields, classes=CLASSES, extra=extra, list_codes=trace._list_codes)


def load_trace_file(path: str | os.PathLike[str], *, expect: dict[str, Any] | None = None) -> KinetoTrace:
    """Read a file written by :func:`save_trace` back into a :class:`KinetoTrace`.

    ``expect``: every key must equal the stored ``extra`` value, else the file is stale.
    Raises :class:`CacheCorruptError` when the file is damaged (checksums, size,
    structure), :class:`CacheFormatError` when it is stale or of another format version,
    ``OSError`` when it cannot be read.
    """
    return trace_from_fields(load_fields(path, {KIND: CLASSES}, expect=expect, defer={KIND: DEFERRED})[1])


def trace_from_fields(values: dict[str, Any]) -> KinetoTrace:
    """The trace from the fields of a Kineto entry, checked (:class:`CacheCorruptError`
    when they do not fit together).  Fields given as :class:`~tracetui.io.colfile.Deferred`
    are read on first use; their checks run then."""
    deferred = {k: v for k, v in values.items() if isinstance(v, Deferred)}
    if not deferred.keys() <= DEFERRED:
        raise CacheCorruptError(f"fields that cannot be read later: {', '.join(sorted(deferred.keys() - DEFERRED))}")
    try:
        trace = KinetoTrace(**values)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CacheCorruptError(f"cannot rebuild the trace ({type(exc).__name__}: {exc})") from None
    if deferred:
        for k in deferred:
            del trace.__dict__[k]
        trace.__dict__["_deferred"] = deferred
    _check(trace, deferred)
    return trace


def _shape(t: KinetoTrace, deferred: dict[str, Deferred], name: str) -> tuple[int, ...] | None:
    """The shape of a field (``(len,)`` of a list or a blob) without reading a deferred one."""
    if name in deferred:
        return deferred[name].shape
    v = getattr(t, name)
    if v is None:
        return None
    return v.shape if isinstance(v, np.ndarray) else (len(v),)


def _check(t: KinetoTrace, deferred: dict[str, Deferred]) -> None:
    """Cheap structural checks: lengths here (from the header for deferred fields), values
    (offsets, id ranges: a few vector passes) when each field is read."""
    per_event = ("dur", "kind", "ph", "name_id", "cat_id", "correlation", "external_id", "rf_id", "seq",
                 "fwd_tid", "device", "stream", "lane_of", "launch_of", "fwd_of", "pids", "tids")
    per_node = ("depth", "cpu_op_of")
    shape = {name: _shape(t, deferred, name) for name in (*per_event, *per_node, "ts", "parent", "nopy_parent",
                                                          "args_offsets", "child_start", "args_blob", "names",
                                                          "cats", "child_index")}
    if shape["ts"] is None or shape["parent"] is None or None in (shape["args_blob"], shape["names"], shape["cats"],
                                                                  shape["child_index"]):
        raise CacheCorruptError("columns without a length")
    n, nn = shape["ts"][0], shape["parent"][0]
    bad = [c for c in per_event if shape[c] != (n,)]
    bad += [c for c in per_node if shape[c] != (nn,)]
    if shape["nopy_parent"] is not None and shape["nopy_parent"] != (nn,):
        bad.append("nopy_parent")
    if shape["args_offsets"] != (n + 1,) or shape["child_start"] != (nn + 1,):
        bad.append("offsets")
    if bad:
        raise CacheCorruptError(f"column lengths do not match: {', '.join(bad)}")
    if nn - n != len(t.lanes):
        raise CacheCorruptError("tree arrays do not match")
    for name, check in _value_checks(n, nn, shape).items():
        if name in deferred:
            deferred[name].check = check
        else:
            check(getattr(t, name))


def _value_checks(n: int, nn: int, shape: dict[str, Any]) -> dict[str, Callable[[Any], None]]:
    """Per field, the check of its values (bounds from the header: no other field is read)."""
    blob, names, cats, kids = shape["args_blob"][0], shape["names"][0], shape["cats"][0], shape["child_index"][0]

    def fail(what: str) -> None:
        raise CacheCorruptError(what)

    def below(limit: int, what: str) -> Callable[[Any], None]:
        return lambda v: fail(what) if v.size and int(v.max()) >= limit else None

    def offsets(v: np.ndarray) -> None:
        if n and (int(v[-1]) > blob or int(v[0]) != 0):
            fail("args offsets out of range")

    def flows(fl: FlowTable) -> None:
        if not (fl.ph.shape[0] == fl.ts.shape[0] == len(fl.cat) == len(fl.flow_id) == len(fl.pid) == len(fl.tid)):
            fail("flow columns do not match")

    def child_start(v: np.ndarray) -> None:
        if int(v[-1]) != kids:
            fail("tree arrays do not match")

    return {"args_offsets": offsets, "name_id": below(names, "name ids out of range"),
            "cat_id": below(cats, "category ids out of range"), "flows": flows, "child_start": child_start,
            "parent": below(nn, "tree ids out of range"), "child_index": below(nn, "tree ids out of range")}


def save(trace: KinetoTrace, target: str | os.PathLike[str], extra: dict[str, Any]) -> int:
    """:func:`save_trace`, as :class:`~tracetui.io.formats.CacheSpec` calls it."""
    return save_trace(trace, target, extra=extra)


def restore(values: dict[str, Any], path: str) -> KinetoTrace:
    """:func:`trace_from_fields`, as :class:`~tracetui.io.formats.CacheSpec` calls it."""
    return trace_from_fields(values)
