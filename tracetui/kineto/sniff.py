"""Is this file a Kineto (PyTorch profiler / Chrome trace JSON) trace, and which rank wrote it?

Recognition reads only the file's head (:class:`~tracetui.io.formats.Head`): a bare JSON
array of events, or an object whose first keys say so (``traceEvents`` without an ET's
``nodes`` + ``schema``: :mod:`tracetui.io.jsonkind`).  A JSON object whose head
does not tell -- cut short inside its header, or a header longer than the head -- is a
*maybe*: the loader then says where the file ends or what it lacks.  Light: msgspec only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..io.files import read_trace_bytes
from ..io.formats import Head, Recognition, read_head
from ..io.jsonkind import head_kind, json_kind

#: the format's name (``tracetui.formats``), also the kind of its cache entries
FORMAT_NAME = "kineto"
#: bytes of (decompressed) content read for a rank's ``distributedInfo``
RANK_HEAD_BYTES = 4 << 20
_PID = re.compile(rb'"pid"\s*:\s*(\d+)')


def recognise(head: Head) -> Recognition:
    """YES for a Kineto trace by its first keys (or a bare array); MAYBE for a JSON object
    whose head does not tell but that is no ET; NO otherwise."""
    if head_kind(head.text) == "kineto":
        return Recognition.YES
    if not head.text and not head.whole:
        return Recognition.MAYBE  # blank beyond the head (padding, or a gzip bomb): the loader's read says which
    return Recognition.MAYBE if json_kind(head) == "kineto" else Recognition.NO


def identify(path: str, head: Head) -> dict[str, Any]:
    """A rank's facts from ``distributedInfo`` (``rank``, ``world_size``, ``backend``: read
    from the first 4 MiB of content, or from the end of the document when the profiler wrote
    it after ``traceEvents``) and the CPU ``pids`` seen in the first MiB."""
    text = head.text if head.whole else read_head(path, RANK_HEAD_BYTES).text
    info = _distributed_info(text)
    if info is None and len(text) >= RANK_HEAD_BYTES:
        info = _distributed_info(read_trace_bytes(path).data[-(1 << 20):])
    info = info or {}
    out: dict[str, Any] = {"rank": info["rank"] if isinstance(info.get("rank"), int) else None,
                           "world_size": info.get("world_size") if isinstance(info.get("world_size"), int) else None,
                           "backend": info.get("backend") if isinstance(info.get("backend"), str) else None,
                           "pids": sorted({int(m) for m in _PID.findall(text[: 1 << 20])})[:64]}
    return out


def _distributed_info(data: bytes) -> dict[str, Any] | None:
    i = data.find(b'"distributedInfo"')
    if i < 0:
        return None
    j = data.find(b"{", i)
    if j < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(data[j:j + 65536].decode("utf-8", "replace"))
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
