"""The tolerant decoding path of ``decode.py``: used only when the typed fast path refuses a document.

Per-event coercion: a field of the wrong type is coerced and counted in a *repaired*
``Tally`` (reported as a warning); an element of ``traceEvents`` that is not an event at
all (not a JSON object, undecodable) is *rejected with a reason* and counted in a
*rejected* ``Tally``, never silently dropped.  Linking ids in ``args`` that are not 64-bit
integers are counted and left unused.  Whole-document repairs tried before giving up:
invalid UTF-8 replaced byte for byte by ``?`` (byte offsets in messages stay exact), and
bare ``NaN``/``Infinity`` tokens quoted into strings.  Durations are microseconds.

``decode.py`` imports this module only on those paths (inside the functions that need it).
"""

from __future__ import annotations

import codecs
import math
import re
from typing import Any

import msgspec
import numpy as np

from ..errors import TraceFormatError
from .columns import CHUNK, LENIENT, STRING_DUR, Tally
from .schema import EMPTY_RAW, Event


def _as_float(v: Any) -> float:
    """A duration from a JSON value: numbers and numeric strings ("NaN", "Infinity", "1.5"); else NaN."""
    if isinstance(v, bool):
        return math.nan
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return math.nan
    return math.nan


def _tolerant_event(raw: msgspec.Raw, index: int, rejected: Tally, repaired: Tally) -> Event | None:
    """Decode one event that the typed path refused; coerce what can be coerced."""
    try:
        return msgspec.json.decode(raw, type=Event)
    except msgspec.DecodeError:
        pass
    try:
        obj = LENIENT.decode(raw)
    except msgspec.DecodeError:
        rejected.add("undecodable JSON value", index)
        return None
    if not isinstance(obj, dict):
        rejected.add("not a JSON object", index)
        return None
    if "ph" in obj and not isinstance(obj["ph"], str):
        # the phase says what the element is: read as text (``true`` -> "t", a flow step) it
        # would become something it is not, so it is no event, counted with this reason
        rejected.add("'ph' is not a string", index)
        return None
    ev = Event()
    for key in ("ph", "cat", "name"):
        v = obj.get(key, "")
        if not isinstance(v, str):
            repaired.add(f"'{key}' not a string", index)
            v = msgspec.json.encode(v).decode()
        setattr(ev, key, v)
    for key in ("pid", "tid"):
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            repaired.add(f"'{key}' not an integer or string", index)
            v = int(v) if isinstance(v, float) and v.is_integer() else msgspec.json.encode(v).decode()
        setattr(ev, key, v)
    ts = obj.get("ts")
    ev.ts = EMPTY_RAW if ts is None else msgspec.Raw(msgspec.json.encode(ts))
    if "dur" in obj:
        ev.dur = _as_float(obj["dur"])
        if isinstance(obj["dur"], str) and math.isfinite(ev.dur):
            repaired.add(STRING_DUR, index)
    fid = obj.get("id")
    if not (fid is None or isinstance(fid, str) or (isinstance(fid, int) and not isinstance(fid, bool))):
        repaired.add("'id' not an integer or string", index)
        fid = int(fid) if isinstance(fid, float) and fid.is_integer() else msgspec.json.encode(fid).decode()
    ev.id = fid
    bp = obj.get("bp")
    ev.bp = bp if isinstance(bp, str) else None
    args = obj.get("args")
    ev.args = msgspec.Raw(msgspec.json.encode(args)) if args is not None else EMPTY_RAW
    return ev


def decode_events_tolerant(raws: list[msgspec.Raw], rejected: Tally,
                           repaired: Tally) -> tuple[list[Event], np.ndarray | None]:
    """Typed decode chunk by chunk; per event only inside a chunk that fails."""
    evs: list[Event] = []
    kept: list[int] = []
    lost = False
    for s in range(0, len(raws), CHUNK):
        part = raws[s:s + CHUNK]
        try:
            evs.extend(msgspec.json.decode(b"[" + b",".join(part) + b"]", type=list[Event]))
            kept.extend(range(s, s + len(part)))
            continue
        except msgspec.DecodeError:
            pass
        for j, r in enumerate(part, s):
            ev = _tolerant_event(r, j, rejected, repaired)
            if ev is None:
                lost = True
            else:
                evs.append(ev)
                kept.append(j)
    return evs, (np.asarray(kept, dtype=np.int64) if lost else None)


def _qmark(exc: UnicodeDecodeError) -> tuple[str, int]:
    return "?" * (exc.end - exc.start), exc.end


codecs.register_error("tracetui.qmark", _qmark)


def sanitize_utf8(data: bytes) -> tuple[bytes, int, int]:
    """Replace every byte of invalid UTF-8 by ``?`` (same length); return (data, count, first offset)."""
    fixed = data.decode("utf-8", "tracetui.qmark").encode("utf-8")
    diff = np.flatnonzero(np.frombuffer(fixed, dtype=np.uint8) != np.frombuffer(data, dtype=np.uint8))
    return fixed, int(diff.size), int(diff[0]) if diff.size else -1


#: a JSON string (kept as is) or a bare constant outside strings (quoted)
_BARE_CONSTANT = re.compile(rb'"(?:[^"\\]|\\.)*"|(?<![\w.])(-?Infinity|NaN)(?![\w.])', re.DOTALL)


def bare_constant_at(data: bytes, exc: TraceFormatError) -> bool:
    """Is the invalid character of ``exc`` a bare NaN/Infinity (Python's json writes them)?"""
    pos = exc.position or ""
    if not pos.startswith("byte ") or not pos[5:].isdigit():
        return False
    at = int(pos[5:])
    return data.startswith((b"NaN", b"Infinity"), at)


def quote_bare_constants(data: bytes) -> tuple[bytes, int]:
    count = 0

    def quote(m: re.Match) -> bytes:
        nonlocal count
        if m.group(1) is None:
            return m.group(0)
        count += 1
        return b'"' + m.group(1) + b'"'

    return _BARE_CONSTANT.sub(quote, data), count
