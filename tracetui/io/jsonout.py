"""JSON out (and back in) for every value the loaders keep, integers beyond 64 bits included.

orjson, which writes every JSON output of tracetui, refuses integers beyond the signed or
unsigned 64-bit range (a ``pid`` or an arg such as ``Comms Id`` can be one) and reads
them back as floats.  JSON numbers have no size limit, so :func:`dumps` writes such an
integer as the number it is: on orjson's refusal, every out-of-range integer is swapped
for a placeholder string, the document is written by orjson (so the formatting is the
same as usual), and each placeholder is replaced by the integer's digits.  :func:`loads`
reads a document holding such a number with the standard library (exact integers) and
everything else with orjson.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["dumps", "escape_controls", "loads"]

_MIN, _MAX = -(2**63), 2**64 - 1
_MARK = "\x00tracetui-int:"
#: the placeholder as orjson writes it (control characters are escaped as \u0000)
_PLACED = re.compile(rb'"\\u0000tracetui-int:(-?\d+)"')
#: a number of 19+ digits outside a string: possibly beyond 64 bits
_LONG_NUMBER = re.compile(rb'(?<![\w."])-?\d{19,}')


#: characters JSON allows raw inside strings that a terminal acts on or that reorder text (UTF-8):
#: DEL, the C1 controls, U+2028/U+2029, the bidi embeddings/overrides/isolates (orjson
#: escapes the C0 controls itself)
_RAW_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def escape_controls(data: bytes) -> bytes:
    """JSON bytes with the characters of :data:`_RAW_CONTROL` written as ``\\uXXXX`` escapes:
    the same document (they can only occur inside strings), safe to show on a terminal."""
    if not _RAW_CONTROL.search(data):
        return data
    return _RAW_CONTROL.sub(lambda m: b"\\u%04x" % ord(m.group().decode("utf-8")), data)


def _options(indent: bool, sort_keys: bool) -> int:
    opt = orjson.OPT_NON_STR_KEYS
    if indent:
        opt |= orjson.OPT_INDENT_2
    if sort_keys:
        opt |= orjson.OPT_SORT_KEYS
    return opt


def _mark_big_ints(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"{_MARK}{value}" if not _MIN <= value <= _MAX else value
    if isinstance(value, dict):
        # a key is a string in JSON anyway: a big integer key becomes its digits
        return {(str(k) if isinstance(k, int) and not isinstance(k, bool) and not _MIN <= k <= _MAX else k):
                _mark_big_ints(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mark_big_ints(v) for v in value]
    return value


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """``value`` as JSON bytes (orjson's format; ``indent``: two spaces), integers of any size
    written exactly, no raw control character (:func:`escape_controls`)."""
    opt = _options(indent, sort_keys)
    try:
        return escape_controls(orjson.dumps(value, option=opt))
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
    text = orjson.dumps(_mark_big_ints(value), option=opt)
    return escape_controls(_PLACED.sub(lambda m: m.group(1), text))


def loads(data: bytes | str) -> Any:
    """Parse JSON; integers beyond 64 bits come back exact (orjson would make them floats)."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_NUMBER.search(raw):
        return json.loads(raw)
    return orjson.loads(raw)
