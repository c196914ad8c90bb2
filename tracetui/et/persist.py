"""Save an :class:`ETTrace` to one cache file and read it back without parsing the ET.

The file format -- raw numpy columns plus a JSON header, a CRC-32 per section, read back
into private memory -- is :mod:`tracetui.io.colfile`'s (entries of kind ``"et"``), the
same as the Kineto entries'.  An entry holds every attribute of the loaded trace
(:data:`tracetui.et.trace.STATE`): the columns, the tree arrays, the names, the warnings
and the blob of each node's JSON text that :meth:`ETTrace.node` decodes on demand.
Reading one back checks that the columns fit together (:func:`_check`) before any of
them is used.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.colfile import CacheCorruptError, load_fields, save_fields
from .decode import RawColumn
from .sniff import FORMAT_NAME
from .trace import ETTrace

__all__ = ["KIND", "CLASSES", "save_et", "load_et_file", "et_from_fields"]

KIND = FORMAT_NAME
#: the dataclasses an ET entry holds
CLASSES: dict[str, type] = {c.__name__: c for c in (RawColumn, LoadWarning)}
#: columns with one value per node
_PER_NODE = ("_file_index", "ids", "parent_ids", "rf_id", "seq_id", "fw_parent", "tid", "fw_tid", "scope", "name_ids",
             "op_schema_ids", "parent", "depth")


def save_et(et: ETTrace, path: str | os.PathLike[str], *, extra: dict[str, Any] | None = None) -> int:
    """Write ``et`` to ``path`` atomically; returns the bytes written.  Raises ``OSError``
    or :class:`~tracetui.io.colfile.CacheFormatError` (a value that cannot be stored)."""
    return save_fields(path, KIND, et.state(), classes=CLASSES, extra=extra)


def load_et_file(path: str | os.PathLike[str], trace_path: str, *, expect: dict[str, Any] | None = None) -> ETTrace:
    """The ETTrace stored at ``path`` (a cache entry written by :func:`save_et`) for the
    trace file ``trace_path``.  Raises as :func:`~tracetui.io.colfile.load_fields` does,
    and :class:`~tracetui.io.colfile.CacheCorruptError` when the columns do not fit."""
    return et_from_fields(load_fields(path, {KIND: CLASSES}, expect=expect)[1], trace_path)


def et_from_fields(values: dict[str, Any], trace_path: str) -> ETTrace:
    """The ETTrace of ``trace_path`` from the fields of an ET entry, checked
    (:class:`~tracetui.io.colfile.CacheCorruptError` when they do not fit together)."""
    try:
        et = ETTrace.from_state(trace_path, values)
        _check(et)
    except CacheCorruptError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise CacheCorruptError(f"cannot rebuild the Execution Trace ({type(exc).__name__}: {exc})") from None
    return et


def _check(et: ETTrace) -> None:
    """Cheap structural checks (lengths, offsets, index ranges), a few vector passes."""
    n = int(et.ids.shape[0]) if isinstance(et.ids, np.ndarray) else -1
    bad = [c for c in _PER_NODE if not isinstance(getattr(et, c), np.ndarray) or getattr(et, c).shape != (n,)]
    raw = et._raw
    if not isinstance(raw, RawColumn) or raw.offsets.shape != (n + 1,) or et.child_start.shape != (n + 1,):
        bad.append("offsets")
    if bad:
        raise CacheCorruptError(f"column lengths do not match: {', '.join(bad)}")
    if not isinstance(et.names, list) or not isinstance(et.op_schemas, list) or not isinstance(et.warnings, list):
        raise CacheCorruptError("names or warnings are not lists")
    off = raw.offsets
    if int(off[0]) != 0 or int(off[-1]) > len(raw.blob) or (n and (np.diff(off) < 0).any()):
        raise CacheCorruptError("node text offsets out of range")
    if n and (int(et._file_index.min()) < 0 or int(et._file_index.max()) >= n
              or int(et.name_ids.min()) < 0 or int(et.name_ids.max()) >= len(et.names)
              or int(et.op_schema_ids.min()) < 0 or int(et.op_schema_ids.max()) >= len(et.op_schemas)
              or int(et.parent.min()) < -1 or int(et.parent.max()) >= n):
        raise CacheCorruptError("node ids out of range")
    ci = et.child_index
    if int(et.child_start[-1]) != ci.shape[0]:
        raise CacheCorruptError("tree arrays do not match")
    if ci.size and (int(ci.min()) < 0 or int(ci.max()) >= n):
        raise CacheCorruptError("tree ids out of range")


def save(et: ETTrace, target: str | os.PathLike[str], extra: dict[str, Any]) -> int:
    """:func:`save_et`, as :class:`~tracetui.io.formats.CacheSpec` calls it."""
    return save_et(et, target, extra=extra)


restore = et_from_fields
