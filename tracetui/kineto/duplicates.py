"""Keys written twice in one event (``{"name": "a", "name": "b", ...}``): the JSON decoders
keep the last value without a word, so tracetui looks for them and counts them.

Every load pays a cheap check: one numpy pass over the events text, 1 MiB at a time, counts
the key tokens of the fields tracetui reads (``"ph":``, ``"name":`` ..., by the 4 bytes before
each colon, and the bytes before those where they match): 25-40 ms on the 216k-event trace's
53.7 MB, whose load takes about 530 ms (+5-8%, min of 9 loads on a loaded 2-core machine).
An event holds each field at most once at its top level, so no more tokens than the events
that hold the field (bounded from the decoded columns: a ``dur`` on complete events only, the
``name`` in the args of each process and thread name counted too) means no duplicate.  More
tokens, and only then, the events are read one by one with their key/value pairs (Python's
``json``, ``object_pairs_hook``) to count exactly which events hold a key twice and the first
of them.

Limits, said here once: only the fields tracetui reads are checked (:data:`KEYS`); a key
written twice inside ``args`` is read as the decoder reads it (the last value); a duplicate
can hide only where at least as many events lack the field as hold it twice (a complete
event without its ``dur``, an event without ``pid``).  On every Kineto
trace of shared/traces the bound equals the count for every field (so one duplicate is
found), and the slow read never runs.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np

from ..errors import LoadWarning
from .columns import DecodedEvents, Tally

#: the top-level event fields tracetui reads (``schema.Event``) whose duplicates are counted
KEYS = ("ph", "name", "cat", "ts", "dur", "pid", "tid")
#: key -> the last 4 bytes of its token before the colon (``ame"`` of ``"name"``), little-endian;
#: the bytes before them are compared for the few tokens that match (``"frame"`` is no ``name``)
_SIGNATURE = {k: int.from_bytes(f'"{k}"'.encode()[-4:], "little") for k in KEYS}
#: key -> (shift, value, token size): the token's bytes before its last 4 are the top bytes of
#: the little-endian word before those (``word >> shift == value``), for keys longer than 2
_HEAD = {k: (8 * (6 - len(k)), int.from_bytes(f'"{k}"'.encode()[:-4], "little"), len(k) + 2)
         for k in KEYS if len(k) > 2}
#: metadata events whose args hold a ``name`` (the Chrome trace format's process and thread names)
_NAMED_META = ("process_name", "thread_name")
#: bytes scanned per numpy step (1 MiB: the step's arrays stay in cache; 16 MiB took 1.9x the time)
_STEP = 1 << 20


def duplicate_key_warning(events_raw: Any, cols: DecodedEvents) -> LoadWarning | None:
    """The warning for events that hold one of :data:`KEYS` twice, or None (the usual case,
    decided by the cheap count alone)."""
    suspects = [k for k, n in key_tokens(events_raw).items() if n > _most_tokens(k, cols)]
    if not suspects:
        return None
    tally = _exact(events_raw, suspects)
    if not tally:
        return None
    total = len(tally.events)
    return LoadWarning("duplicate_keys", f"{total:,} events hold a key twice (the last value is used): "
                                         f"{tally.describe()}", total)


def key_tokens(text: Any) -> dict[str, int]:
    """How many times each key of :data:`KEYS` is followed by a colon in ``text``, at any depth
    (a key with spaces before its colon is not counted: no JSON writer of traces emits one)."""
    n = len(text)
    out = dict.fromkeys(KEYS, 0)
    if n < 4:
        return out
    arr = np.frombuffer(text, dtype=np.uint8)
    # the 4 bytes from every offset, as one little-endian integer (an unaligned strided view)
    words = np.ndarray(shape=(n - 3,), dtype="<u4", buffer=arr, offset=0, strides=(1,))
    for s in range(4, n, _STEP):
        colons = np.flatnonzero(arr[s:s + _STEP] == 0x3A) + s
        sig = words[colons - 4]
        for key, want in _SIGNATURE.items():
            hits = colons[sig == want]
            if key in _HEAD and hits.size:  # the bytes before the last 4 too: ``"name"``, not ``frame"``
                shift, value, size = _HEAD[key]
                far = hits >= 8
                kept = int(np.count_nonzero((words[hits[far] - 8] >> shift) == value))
                near = [h for h in hits[~far].tolist() if h >= size and bytes(arr[h - size:h]) == f'"{key}"'.encode()]
                out[key] += kept + len(near)
            else:
                out[key] += int(hits.size)
    return out


def _most_tokens(key: str, cols: DecodedEvents) -> int:
    """The most tokens of ``key`` a trace without duplicates holds: one per event that has the
    field (an empty ``ph``/``name``/``cat`` is read as absent), ``dur`` on complete events
    only, plus the ``name`` in the args of each process or thread name."""
    n = cols.n_elements
    if key in ("ph", "name", "cat"):
        n -= _count(getattr(cols, key), "")
    if key == "name":
        n += sum(_count(cols.name, meta) for meta in _NAMED_META)
    if key == "dur":
        n = _count(cols.ph, "X")
    return n


def _count(column: Any, value: str) -> int:
    try:
        code = column.values.index(value)
    except ValueError:
        return 0
    return int(np.count_nonzero(column.codes == code))


class _Duplicates(Tally):
    def __init__(self) -> None:
        super().__init__()
        self.events: set[int] = set()


def _exact(events_raw: Any, keys: list[str]) -> _Duplicates:
    """Events (by traceEvents index) whose top level holds one of ``keys`` twice: only those
    whose text holds the key's token twice are parsed with their key/value pairs."""
    tokens = [(k, f'"{k}"'.encode()) for k in keys]
    out = _Duplicates()
    for i, raw in enumerate(msgspec.json.decode(events_raw, type=list[msgspec.Raw])):
        text = bytes(raw)
        if not any(text.count(tok) > 1 for _, tok in tokens):
            continue
        try:
            pairs = json.loads(text, object_pairs_hook=lambda p: p)
        except (ValueError, RecursionError):
            continue
        if not isinstance(pairs, list):
            continue
        seen = [k for k, _ in pairs]
        for key, _tok in tokens:
            if seen.count(key) > 1:
                out.add(f"'{key}'", i)
                out.events.add(i)
    return out
