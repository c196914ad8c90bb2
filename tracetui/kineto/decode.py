"""Decode Kineto JSON bytes into flat columns (one row per event, no per-event dicts).

Fast path: msgspec decodes every event into a small typed struct, leaving ``ts`` and
``args`` as raw JSON bytes.  Timestamps are parsed exactly (see ``timestamps.py``); the
few args fields the linker needs (correlation, External id, stream ...) are decoded in
one batch; all other args stay as raw JSON in one byte blob and are decoded lazily,
one event at a time, when the UI or the API asks (``args_blob`` + ``args_offsets``).

Tolerant path: when the typed decode rejects the file (a field of an unexpected type,
NaN written as a string, ...), events are decoded one by one; an event that cannot be
used is *rejected with a reason* and counted, never silently dropped.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Union

import msgspec
import numpy as np

from ..errors import LoadWarning, TraceFormatError, WrongTraceKindError

_EMPTY = msgspec.Raw(b"")


class _Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: msgspec.Raw = _EMPTY
    dur: float = 0.0
    id: Union[int, str, None] = None
    bp: Union[str, None] = None
    args: msgspec.Raw = _EMPTY


class _KeyArgs(msgspec.Struct):
    """The args fields that linking needs; every other field stays raw."""

    correlation: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_old: int = msgspec.field(default=-1, name="external id")
    stream: int = -1
    device: int = -1
    rf_id: int = msgspec.field(default=0, name="Record function id")
    seq: int = msgspec.field(default=-1, name="Sequence number")
    fwd_tid: int = msgspec.field(default=-1, name="Fwd thread id")


_KEY_FIELDS = ("correlation", "external_id", "external_id_old", "stream", "device", "rf_id", "seq", "fwd_tid")
_KEY_DEFAULTS = {"correlation": -1, "external_id": -1, "external_id_old": -1, "stream": -1, "device": -1,
                 "rf_id": 0, "seq": -1, "fwd_tid": -1}
_KEY_JSON = {"correlation": "correlation", "external_id": "External id", "external_id_old": "external id",
             "stream": "stream", "device": "device", "rf_id": "Record function id",
             "seq": "Sequence number", "fwd_tid": "Fwd thread id"}

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


@dataclass
class DecodedEvents:
    """Columns of every event in file order (flows and metadata are split out).

    Times are float64 microseconds relative to ``origin_us`` (an exact integer µs).
    """

    ph: list[str]
    cat: list[str]
    name: list[str]
    pid: list[Any]
    tid: list[Any]
    ts_int: np.ndarray  #: integer microseconds (absolute), int64
    ts_frac: np.ndarray  #: fractional microseconds, float64 (NaN = missing ts)
    dur: np.ndarray  #: microseconds, float64
    flow_id: list[Any]
    bp: list[Any]
    args_blob: bytes
    args_offsets: np.ndarray  #: int64, len n+1; args of event i = blob[off[i]:off[i+1]] (b"" = none)
    key_args: dict[str, np.ndarray]  #: name -> int64 column, see _KeyArgs
    rejected: Counter = field(default_factory=Counter)  #: reason -> count


@dataclass
class DecodedTrace:
    events: DecodedEvents
    metadata: dict[str, Any]
    warnings: list[LoadWarning]
    form: str  #: "object" or "array"


def _decode_error_position(exc: Exception) -> str | None:
    msg = str(exc)
    if "(byte " in msg:
        return "byte " + msg.rsplit("(byte ", 1)[1].rstrip(")")
    return None


def _split_top(path: str, data: bytes) -> tuple[msgspec.Raw, dict[str, Any], str]:
    """Split the document into the raw events array and the other top-level keys."""
    stripped = data.lstrip()
    if not stripped:
        raise TraceFormatError(path, "file is empty")
    first = stripped[:1]
    if first == b"[":
        return msgspec.Raw(data), {}, "array"
    if first != b"{":
        raise TraceFormatError(path, "not JSON: expected '{' or '[' at the start", position="byte 0")
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    if "traceEvents" not in top:
        if "nodes" in top and "schema" in top:
            raise WrongTraceKindError(path, "this is a PyTorch Execution Trace (ET), not a Kineto trace; "
                                            "open it with --et or together with its Kineto trace")
        keys = ", ".join(sorted(top)[:6])
        raise TraceFormatError(path, f"not a Kineto/Chrome trace: no 'traceEvents' key (keys: {keys})")
    meta: dict[str, Any] = {}
    for k, v in top.items():
        if k == "traceEvents":
            continue
        try:
            meta[k] = msgspec.json.decode(v)
        except msgspec.DecodeError:
            meta[k] = bytes(v).decode("utf-8", "replace")
    return top["traceEvents"], meta, "object"


def _coerce_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v if _I64_MIN <= v <= _I64_MAX else None
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _tolerant_event(raw: msgspec.Raw, rejected: Counter) -> _Event | None:
    """Decode one event that the typed path refused; coerce what can be coerced."""
    try:
        return msgspec.json.decode(raw, type=_Event)
    except msgspec.DecodeError:
        pass
    try:
        obj = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        rejected["malformed JSON"] += 1
        return None
    if not isinstance(obj, dict):
        rejected["not a JSON object"] += 1
        return None
    ev = _Event()
    ph = obj.get("ph", "")
    ev.ph = ph if isinstance(ph, str) else str(ph)
    cat = obj.get("cat", "")
    ev.cat = cat if isinstance(cat, str) else str(cat)
    name = obj.get("name", "")
    ev.name = name if isinstance(name, str) else msgspec.json.encode(name).decode()
    for key in ("pid", "tid"):
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            v = str(v) if not isinstance(v, float) or not v.is_integer() else int(v)
        setattr(ev, key, v)
    ts = obj.get("ts")
    if ts is None:
        ev.ts = _EMPTY
    else:
        ev.ts = msgspec.Raw(msgspec.json.encode(ts if not isinstance(ts, str) else ts))
    dur = obj.get("dur", 0.0)
    try:
        dur = float(dur)
    except (TypeError, ValueError):
        rejected["dur is not a number"] += 1
        dur = float("nan")
    ev.dur = dur
    fid = obj.get("id")
    ev.id = fid if isinstance(fid, (int, str)) or fid is None else str(fid)
    bp = obj.get("bp")
    ev.bp = bp if isinstance(bp, str) else None
    args = obj.get("args")
    ev.args = msgspec.Raw(msgspec.json.encode(args)) if args is not None else _EMPTY
    return ev


def _key_args_column_batch(raws: list[msgspec.Raw]) -> dict[str, np.ndarray] | None:
    """Decode the linking fields of all args in one msgspec call; None if any is odd."""
    doc = b"[" + b",".join([r if len(r) else b"null" for r in raws]) + b"]"
    try:
        parsed = msgspec.json.decode(doc, type=list[Union[_KeyArgs, None]])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    n = len(parsed)
    none = _KeyArgs()
    filled = [p if p is not None else none for p in parsed]
    out = {}
    try:
        for f in _KEY_FIELDS:
            out[f] = np.fromiter((getattr(p, f) for p in filled), dtype=np.int64, count=n)
    except OverflowError:
        return None
    return out


def _key_args_column_slow(raws: list[msgspec.Raw]) -> dict[str, np.ndarray]:
    n = len(raws)
    out = {f: np.full(n, _KEY_DEFAULTS[f], dtype=np.int64) for f in _KEY_FIELDS}
    for i, r in enumerate(raws):
        if not len(r):
            continue
        try:
            obj = msgspec.json.decode(r)
        except msgspec.DecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        for f in _KEY_FIELDS:
            v = obj.get(_KEY_JSON[f])
            if v is not None:
                c = _coerce_int(v)
                if c is not None:
                    out[f][i] = c
    return out


def decode_events(path: str, data: bytes) -> DecodedTrace:
    """Decode a whole Kineto document.  Raises TraceFormatError on bytes that are not a trace."""
    warnings: list[LoadWarning] = []
    try:
        events_raw, meta, form = _split_top(path, data)
    except msgspec.DecodeError as exc:
        raise _as_format_error(path, exc) from None
    rejected: Counter = Counter()
    try:
        evs: list[_Event] = msgspec.json.decode(events_raw, type=list[_Event])
    except msgspec.ValidationError:
        try:
            raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
        except msgspec.ValidationError:
            raise TraceFormatError(path, "'traceEvents' is not a list of events") from None
        evs = []
        for r in raws:
            ev = _tolerant_event(r, rejected)
            if ev is not None:
                evs.append(ev)
    except msgspec.DecodeError as exc:
        raise _as_format_error(path, exc) from None
    return DecodedTrace(_columns(evs, rejected), meta, warnings, form)


def _as_format_error(path: str, exc: Exception) -> TraceFormatError:
    pos = _decode_error_position(exc)
    msg = str(exc).split(" (byte ")[0]
    return TraceFormatError(path, f"not valid JSON ({msg})", position=pos)


def _columns(evs: list[_Event], rejected: Counter) -> DecodedEvents:
    from .timestamps import parse_timestamps

    n = len(evs)
    ts_int, ts_frac = parse_timestamps([e.ts for e in evs])
    dur = np.fromiter((e.dur for e in evs), dtype=np.float64, count=n)
    arg_raws = [e.args for e in evs]
    lens = np.fromiter(map(len, arg_raws), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    blob = b"".join(arg_raws)
    key_args = _key_args_column_batch(arg_raws)
    if key_args is None:
        key_args = _key_args_column_slow(arg_raws)
    return DecodedEvents(
        ph=[e.ph for e in evs],
        cat=[e.cat for e in evs],
        name=[e.name for e in evs],
        pid=[e.pid for e in evs],
        tid=[e.tid for e in evs],
        ts_int=ts_int,
        ts_frac=ts_frac,
        dur=dur,
        flow_id=[e.id for e in evs],
        bp=[e.bp for e in evs],
        args_blob=blob,
        args_offsets=offsets,
        key_args=key_args,
        rejected=rejected,
    )
