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
from typing import Any

from ..errors import LoadWarning
from ..io.colfile import (
    FORMAT_VERSION,
    MAGIC,
    CacheCorruptError,
    CacheFormatError,
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
    return trace_from_fields(load_fields(path, {KIND: CLASSES}, expect=expect)[1])


def trace_from_fields(values: dict[str, Any]) -> KinetoTrace:
    """The trace from the fields of a Kineto entry, checked (:class:`CacheCorruptError`
    when they do not fit together)."""
    try:
        trace = KinetoTrace(**values)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CacheCorruptError(f"cannot rebuild the trace ({type(exc).__name__}: {exc})") from None
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
        raise CacheCorruptError(f"column lengths do not match: {', '.join(bad)}")
    if n and (int(t.args_offsets[-1]) > len(t.args_blob) or int(t.args_offsets[0]) != 0
              or int(t.name_id.max()) >= len(t.names) or int(t.cat_id.max()) >= len(t.cats)):
        raise CacheCorruptError("args offsets or name ids out of range")
    fl = t.flows
    if not (fl.ph.shape[0] == fl.ts.shape[0] == len(fl.cat) == len(fl.flow_id) == len(fl.pid) == len(fl.tid)):
        raise CacheCorruptError("flow columns do not match")
    if int(t.child_start[-1]) != t.child_index.shape[0] or nn - n != len(t.lanes):
        raise CacheCorruptError("tree arrays do not match")
    if nn and (int(t.parent.max()) >= nn or (t.child_index.size and int(t.child_index.max()) >= nn)):
        raise CacheCorruptError("tree ids out of range")


def save(trace: KinetoTrace, target: str | os.PathLike[str], extra: dict[str, Any]) -> int:
    """:func:`save_trace`, as :class:`~tracetui.io.formats.CacheSpec` calls it."""
    return save_trace(trace, target, extra=extra)


def restore(values: dict[str, Any], path: str) -> KinetoTrace:
    """:func:`trace_from_fields`, as :class:`~tracetui.io.formats.CacheSpec` calls it."""
    return trace_from_fields(values)
