"""Load a PyTorch Execution Trace file (plain or gzip JSON) into an :class:`ETTrace`.

Recognition is by content, never by file name or schema string: an ET is a JSON object with
a ``nodes`` list whose elements carry ``id`` and ``name`` (plus ``schema``).  A Kineto trace
(an object with ``traceEvents``, or a bare array of events) raises WrongTraceKindError.  A
file cut off while being written loads with every complete node before the cut and a
"truncated" warning.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from ..errors import LoadWarning, TraceFormatError, WrongTraceKindError
from ..io.files import FileBytes, kind_of_keys, padding_warning, read_trace_bytes, trace_path
from ..io.jsonrecover import nesting_error, only_padding_after, recover_truncated_json, replace_lone_surrogates
from .decode import DecodedNodes, ETFile, decode_file, decode_nodes, repair_utf8
from .decode_fast import FastFile, decode_fast
from .trace import ETTrace

__all__ = ["is_execution_trace", "load_et"]

_NON_WS = re.compile(rb"[^ \t\r\n\x00]")
_BYTE_POS = re.compile(r"\(byte (\d+)\)")
_AT_PATH = re.compile(r" - at `([^`]*)`")
#: a Chrome-trace event key, to recognise a Kineto trace given as a bare JSON array
_EVENT_KEY = re.compile(rb'"ph"\s*:')


def is_execution_trace(obj: Any) -> bool:
    """True when decoded JSON ``obj`` is an Execution Trace (by content, not schema string)."""
    if not isinstance(obj, dict) or "schema" not in obj:
        return False
    nodes = obj.get("nodes")
    if not isinstance(nodes, list):
        return False
    return all(isinstance(n, dict) and "id" in n and "name" in n for n in nodes)


def _kind_error(path: str, data: bytes, top: ETFile | FastFile | None) -> None:
    """Raise WrongTraceKindError when the content is a Kineto trace."""
    if top is not None and kind_of_keys(len(top.traceEvents) > 0, top.nodes is not None,
                                        top.schema is not None) == "kineto":
        raise WrongTraceKindError(
            path, "is a Kineto profiler trace (it has traceEvents), not an Execution Trace"
        )
    first = _NON_WS.search(data)
    if first is not None and data[first.start()] == ord("[") and top is None:
        if _EVENT_KEY.search(data, first.start(), first.start() + 65536):
            raise WrongTraceKindError(
                path, "is a Kineto/Chrome trace (a JSON array of events), not an Execution Trace"
            )
        raise TraceFormatError(path, "is a JSON array, not an Execution Trace (expected an object with nodes)")


def _problem_from(exc: msgspec.MsgspecError) -> tuple[str, str | None]:
    """One-line problem and position from a msgspec error."""
    msg = str(exc).replace("JSON is malformed: ", "")
    m = _BYTE_POS.search(msg)
    if m:
        return _BYTE_POS.sub("", msg).strip(), f"byte {m.group(1)}"
    m = _AT_PATH.search(msg)
    if m:
        where = m.group(1).replace("$.", "").replace("$", "top level")
        return _AT_PATH.sub("", msg).strip(), where
    return msg, None


def _cut_short(msg: str, data: bytes) -> bool:
    """Does the decode error ``msg`` mean the JSON is cut short?  msgspec says "truncated",
    or, for a cut right after ``-``, ``1.`` or ``1e``, an invalid character/number at the end
    of the data (everything after the error position is whitespace or NUL padding)."""
    if "truncated" in msg:
        return True
    m = _BYTE_POS.search(msg)
    return m is not None and only_padding_after(data, int(m.group(1)))


def _recover(path: str, data: bytes, warnings: list[LoadWarning], gzip_cut: bool) -> tuple[bytes, ETFile]:
    """Decode a truncated ET from its complete nodes; record a "truncated" warning.
    Returns the document rebuilt from the complete part, and its top level."""
    try:
        rec = recover_truncated_json(data, "nodes", path)
    except TraceFormatError as exc:
        try:
            recover_truncated_json(data, "traceEvents", path)
        except TraceFormatError:
            raise exc from None
        raise WrongTraceKindError(
            path, "is a (truncated) Kineto profiler trace, not an Execution Trace"
        ) from None
    try:
        top = decode_file(rec.data)
    except msgspec.MsgspecError as exc:
        problem, where = _problem_from(exc)
        raise TraceFormatError(path, f"is cut off and its complete part is not valid JSON: {problem}",
                               position=where) from None
    warnings.append(
        LoadWarning(
            "truncated",
            f"{path}: the {'gzip stream ends early and its ' if gzip_cut else ''}JSON is cut off "
            f"at byte {len(data)}; kept the {rec.elements_kept} "
            f"complete nodes before the cut and dropped {rec.bytes_lost} bytes after them",
            rec.bytes_lost,
        )
    )
    return rec.data, top


def _decode_top(path: str, fb: FileBytes, warnings: list[LoadWarning]) -> tuple[ETFile | FastFile, DecodedNodes]:
    """The top level and the node columns: the typed fast path for a clean file
    (:mod:`tracetui.et.decode_fast`), else the general path (repairs, recovery, counts)."""
    data = fb.data
    first = _NON_WS.search(data)
    if first is None:
        raise TraceFormatError(path, "is empty" if not data else "holds no JSON (only whitespace)")
    if data.endswith(b"\x00"):
        # a writer killed after preallocating leaves NUL padding behind the cut
        data = data.rstrip(b"\x00 \t\r\n")
    data, bad_utf8, first_bad = repair_utf8(data)
    if bad_utf8:
        warnings.append(
            LoadWarning(
                "invalid_utf8",
                f"{path}: {bad_utf8} bytes of invalid UTF-8 replaced by '?' (first at byte {first_bad})",
                bad_utf8,
            )
        )
    fast = decode_fast(data)
    if fast is not None:
        top, decoded = fast
        _complete(path, data, top, fb, warnings)
        return top, decoded  # not None: _complete raised when the file has no nodes
    try:
        try:
            top = decode_file(data)
        except msgspec.DecodeError:
            fixed, count, first = replace_lone_surrogates(data)
            if not count:
                raise
            data = fixed
            warnings.append(LoadWarning("lone_surrogate", f"{path}: {count:,} lone UTF-16 surrogate escapes (such as "
                                        f"\\ud800, half of a pair) read as U+FFFD (first at byte {first})", count))
            top = decode_file(data)
    except msgspec.ValidationError as exc:
        if str(exc).startswith("Expected `object`"):
            _kind_error(path, data, None)
        problem, where = _problem_from(exc)
        raise TraceFormatError(path, f"is not an Execution Trace: {problem}", position=where) from None
    except msgspec.DecodeError as exc:
        if not _cut_short(str(exc), data):
            problem, where = _problem_from(exc)
            raise TraceFormatError(path, f"is not valid JSON: {problem}", position=where) from None
        # the nodes are read from the document rebuilt from the complete part
        doc, top = _recover(path, data, warnings, fb.gzip_truncated)
        _check_kind(path, data, top)
    else:
        doc = data
        _complete(path, data, top, fb, warnings)
    return top, decode_nodes(top.nodes, doc)


def _complete(path: str, data: bytes, top: ETFile | FastFile, fb: FileBytes, warnings: list[LoadWarning]) -> None:
    """Checks of a document that decoded whole: a gzip stream cut right after the JSON is
    said; a Kineto trace, or an object without nodes, raises."""
    if fb.gzip_truncated:
        # cut exactly after the JSON ended: nothing lost, but say the file is damaged
        warnings.append(
            LoadWarning("truncated", f"{path}: the {fb.compression} stream ends early, but the JSON in it is complete",
                        0)
        )
    _check_kind(path, data, top)


def _check_kind(path: str, data: bytes, top: ETFile | FastFile) -> None:
    """A Kineto trace, or an object without nodes, raises."""
    _kind_error(path, data, top)
    if top.nodes is None:
        raise TraceFormatError(path, "is not an Execution Trace: the JSON object has no nodes list")


def _check_ids(path: str, top: ETFile) -> None:
    for i, node in enumerate(top.nodes or ()):
        if type(node.id) is not int or not -(2**63) <= node.id < 2**63:
            raise TraceFormatError(path, f"node id {node.id!r} is not a 64-bit integer", position=f"nodes[{i}]")


def load_et(path: str | os.PathLike[str], *, file_bytes: FileBytes | None = None) -> ETTrace:
    """Load the Execution Trace at ``path`` (gzip or plain JSON, detected by content).

    ``file_bytes``: the already-read content (as returned by ``read_trace_bytes``), to avoid
    reading the file twice.  Raises TraceFileError (unreadable), TraceFormatError (not JSON,
    empty, not an ET), WrongTraceKindError (a Kineto trace).  A truncated file loads with the
    complete nodes before the cut and a "truncated" warning.
    """
    fb = file_bytes if file_bytes is not None else read_trace_bytes(path)
    p = fb.path or trace_path(path)
    warnings: list[LoadWarning] = padding_warning(fb, f"{p}: ")
    try:
        top, decoded = _decode_top(p, fb, warnings)
    except RecursionError:  # the decoders stop near a thousand levels: one line, not a crash
        raise nesting_error(p, fb.data) from None
    if decoded.bad_values.get("id"):
        _check_ids(p, top)
    return ETTrace(
        path=p,
        schema=top.schema,
        pid=top.pid,
        time=top.time,
        start_ts=top.start_ts,
        finish_ts=top.finish_ts,
        decoded=decoded,
        warnings=warnings,
    )
