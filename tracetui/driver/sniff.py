"""Is this the start of a driver-call trace?  The content test ``session.detect_kind`` and
``job.discover`` run on every file opened, kept apart from the reader (``lines.py``) so that
opening a Kineto trace never imports it.  :func:`as_object` is also the reader's one-line
decoder."""

from __future__ import annotations

import msgspec

#: the format's name (``tracetui.formats``)
FORMAT_NAME = "driver"
#: reasons a line that starts like an object is not an event (the reader counts them)
BAD_JSON = "lines that start like a JSON object but are not valid JSON"
NOT_OBJECT = "JSON values that are not objects"
TOO_DEEP = "lines nested too deeply to read (JSON deeper than the decoder's recursion limit)"


def looks_like_driver_lines(head: bytes) -> bool:
    """Does this start of a file hold driver-call trace lines?  Yes when its first JSON object
    line (text lines before it are skipped, as the loader skips them) names a layout by its
    keys (``op_id``, ``func``, ``event_id``, or ``type`` beside ``ts``)."""
    lines = head.split(b"\n")
    if len(lines) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1]  # the head may end inside a line
    for raw in lines:
        text = raw.strip()
        if not text.startswith(b"{"):
            continue
        obj = as_object(text, sniffing=True)
        if isinstance(obj, str):
            return False
        return any(k in obj for k in ("op_id", "func", "event_id")) or ("type" in obj and "ts" in obj)
    return False


def as_object(line: bytes, sniffing: bool = False) -> dict | str:
    """The JSON object of a line, or the reason it is not one.  ``sniffing``: a byte that is
    not UTF-8 is replaced (the keys still say what the line is); else the line is not JSON."""
    try:
        try:
            obj = msgspec.json.decode(line)
        except UnicodeDecodeError:
            if not sniffing:
                return BAD_JSON
            obj = msgspec.json.decode(line.decode("utf-8", "replace").encode())
    except msgspec.DecodeError:
        return BAD_JSON
    except RecursionError:
        return TOO_DEEP
    return obj if isinstance(obj, dict) else NOT_OBJECT
