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

from ..errors import unsafe_class

__all__ = ["dumps", "escape_controls", "loads"]

_MIN, _MAX = -(2**63), 2**64 - 1
_MARK = "\x00tracetui-int:"
#: the placeholder as orjson writes it (control characters are escaped as \u0000)
_PLACED = re.compile(rb'"\\u0000tracetui-int:(-?\d+)"')
#: a number of 19+ digits outside a string: possibly beyond 64 bits
_LONG_NUMBER = re.compile(rb'(?<![\w."])-?\d{19,}')


def _json_escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp <= 0xFFFF:
        return "\\u%04x" % cp
    cp -= 0x10000  # beyond the BMP: JSON writes a surrogate pair
    return "\\u%04x\\u%04x" % (0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF))


#: what :func:`escape_controls` writes as an escape: every unsafe character but JSON's own
#: whitespace (tab, newline, CR: in a valid document, outside strings)
_UNSAFE_IN_JSON = unsafe_class(keep="\t\n\r")
#: the ASCII ones of them (a quick test of ASCII data)
_UNSAFE_ASCII = bytes(cp for cp in range(128) if _UNSAFE_IN_JSON.match(chr(cp)))


def escape_controls(data: bytes) -> bytes:
    """JSON bytes with every character of :data:`tracetui.errors.UNSAFE_RANGES` but JSON's
    whitespace written as a ``\\uXXXX`` escape (JSON itself only asks it of the C0
    controls, which orjson escapes): DEL, the C1 controls, the separators, the bidi controls
    and marks, the invisible characters, and a raw control character an args blob copied
    from a file may hold.  The same document (such characters can only occur inside
    strings: every value reads back exact), with nothing in it that a terminal acts on or
    that hides in a name."""
    if data.isascii() and len(data.translate(None, _UNSAFE_ASCII)) == len(data):  # the usual case
        return data
    text = data.decode("utf-8", "replace")
    if not _UNSAFE_IN_JSON.search(text):
        return data
    return _UNSAFE_IN_JSON.sub(_json_escape, text).encode("utf-8")


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
