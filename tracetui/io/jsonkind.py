"""Which of the two PyTorch JSON formats a document is -- a Kineto trace (``traceEvents``)
or an Execution Trace (``nodes`` + ``schema``) -- from its first bytes: the one rule both
formats' recognition and loaders use (:func:`~tracetui.io.files.kind_of_keys` on the keys).
Light: msgspec only.
"""

from __future__ import annotations

import msgspec

from .files import kind_of_keys
from .formats import Head

#: top-level keys Kineto writes before its traceEvents array (an ET has schema/pid/time/start_ts)
KINETO_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"record_shapes"',
               b'"cupti_version"', b'"roctracer_version"', b'"displayTimeUnit"', b'"baseTimeNanoseconds"')
#: keys of an Execution Trace's header
ET_KEYS = (b'"schema"', b'"start_ts"', b'"finish_ts"')


def head_kind(text: bytes) -> str | None:
    """``"kineto"``, ``"et"`` or None: what the first keys of a JSON document announce
    (a bare array is a Kineto trace)."""
    text = text.lstrip()
    if text[:1] == b"[":
        return "kineto"
    if text[:1] != b"{":
        return None
    return kind_of_keys(b'"traceEvents"' in text, b'"nodes"' in text, b'"schema"' in text)


def json_kind(head: Head) -> str | None:
    """``"kineto"``, ``"et"`` or None for a JSON file, from its head only: its first keys;
    for a head that is the whole file and does not decode (cut short, odd), whichever array
    key comes first, else the header keys it shows, else Kineto when it is an object cut short.
    A complete document with neither array is neither."""
    text = head.text
    kind = head_kind(text)
    if kind is not None or text[:1] != b"{":
        return kind
    if head.whole:
        try:
            top = msgspec.json.decode(text, type=dict[str, msgspec.Raw])
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            pass
        else:
            return "kineto" if "traceEvents" in top else "et" if "nodes" in top else None
    i, j = text.find(b'"traceEvents"'), text.find(b'"nodes"')
    if i >= 0 and (j < 0 or i < j):
        return "kineto"
    if j >= 0:
        return "et"
    if any(k in text for k in KINETO_KEYS):
        return "kineto"
    if any(k in text for k in ET_KEYS):
        return "et"
    if not head.whole or cut_short(text):
        return "kineto"  # a header longer than the head, or cut inside it: the loader says which
    return None


def cut_short(data: bytes) -> bool:
    """Is ``data`` a JSON value cut short (msgspec reports truncation, or an invalid
    character/number with nothing but whitespace/NUL after it)?"""
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        from .jsonrecover import only_padding_after  # numpy: only for a document that does not decode

        msg = str(exc)
        if "truncated" in msg:
            return True
        at = msg.rsplit("(byte ", 1)
        return len(at) == 2 and at[1].rstrip(")").isdigit() and only_padding_after(data, int(at[1].rstrip(")")))
    except RecursionError:
        return False
    return False
