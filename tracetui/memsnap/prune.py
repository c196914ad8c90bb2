"""Dropping a streamed history's spent objects from the unpickler's memo while it unpickles.

:mod:`.stream` turns each batch of history entries into columns and empties them, but the C
unpickler's memo (every object a pickle memoizes, by index, so that a later ``BINGET`` finds
it) keeps each emptied entry dict, its frames list and its fresh strings (torch writes a new
``compile_context`` string per entry) until the load ends: ~140 bytes an entry, twice the
75 bytes an entry takes in a snapshot with Python stacks, so a 1 GB snapshot held ~1.9 GB of
them at its end (bench/README.md, "CUDA memory snapshots").

:class:`MemoPruner` takes them out now and then, from inside the load (the history list's
``extend``, which the unpickler calls for every batch):

- what is dropped: the entry dicts of the batches consumed (a snapshot never names one twice),
  and their frames lists and ``compile_context``/``user_metadata`` strings once
  :data:`WINDOW` more batches have come (the pickler writes a shared object once and names it
  again later: a free's ``free_requested`` and ``free_completed`` share one frames list);
  a string met more than once in its batch is shared (torch's empty ``user_metadata``) and
  never dropped; frame dicts, keys and everything else stay;
- how: the memo is copied (``Unpickler.memo.copy()``: its live slots), the slots to keep are
  put into a second unpickler's memo at the same indices (a little pickle of ``BINPERSID`` +
  ``LONG_BINPUT`` per slot, its persistent ids answered from the list of kept objects), and
  that memo replaces the first one's (the ``memo`` setter copies an unpickler's memo slot for
  slot; the count of memoized objects, from which ``MEMOIZE`` takes the next index, is not
  changed by it, so later objects get their file's indices);
- when: once the entries consumed since the last time reach :data:`EVERY` and a quarter of
  all entries so far (each time costs a pass over the memo's slots: this keeps the passes to
  about a dozen on any file, and the spent entries held between two to a fifth of them);
- if a dropped object is named again after all (a pickle torch did not write), the unpickler
  stops with a memo miss and the caller reads the file again without pruning
  (:class:`PruneMiss`).

Whether this interpreter's unpickler behaves so is checked once per process on a small
pickle (:func:`pruning_works`); where it does not, nothing is pruned.
"""

from __future__ import annotations

import io
import pickle
from collections import deque
from collections.abc import Callable
from itertools import repeat
from typing import Any

import numpy as np

#: batches (of the pickler's 1,000 entries) a frames list or string is kept after its entry
WINDOW = 4
#: fewest entries consumed between two prunes
EVERY = 1 << 18
#: the string fields of an entry that torch writes fresh for each entry
FRESH_STRINGS = ("compile_context", "user_metadata")
#: one record of the re-put pickle: BININT k, BINPERSID, LONG_BINPUT index, POP
_RECORD = np.dtype([("J", "u1"), ("k", "<i4"), ("Q", "u1"), ("r", "u1"), ("idx", "<u4"), ("pop", "u1")])


class PruneMiss(Exception):
    """A pruned load asked for an object the pruner had dropped: read again without pruning."""


class _Keeper(pickle.Unpickler):
    """The second unpickler, whose memo is filled with the slots to keep."""

    def __init__(self, data: bytes, kept: list[Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.kept = kept

    def persistent_load(self, pid: Any) -> Any:
        return self.kept[pid]

    def find_class(self, module: str, name: str) -> Any:  # the pickle is ours: never a global
        raise pickle.UnpicklingError("no globals")


def _keeper(slots: list[tuple[int, Any]]) -> _Keeper:
    """A loaded :class:`_Keeper` whose memo holds ``slots`` ((index, object)) and nothing else."""
    rec = np.zeros(len(slots), dtype=_RECORD)
    rec["J"], rec["Q"], rec["r"], rec["pop"] = ord("J"), ord("Q"), ord("r"), ord("0")
    rec["k"] = np.arange(len(slots), dtype=np.int32)
    rec["idx"] = np.fromiter((i for i, _ in slots), dtype=np.uint32, count=len(slots))
    keeper = _Keeper(b"\x80\x04" + rec.tobytes() + b"N.", [o for _, o in slots])
    keeper.load()
    keeper.kept = []
    return keeper


class MemoPruner:
    """Drops spent history objects from ``unpickler``'s memo (see the module docstring).
    :meth:`spent` is given each batch before it is emptied; :meth:`maybe_prune` after."""

    def __init__(self, every: int | None = None, window: int | None = None) -> None:
        self.unpickler: Any = None
        self.every = EVERY if every is None else every
        self.window = WINDOW if window is None else window
        self.dead: list[Any] = []  #: objects to drop at the next prune (held so their ids stay theirs)
        self.waiting: deque[list[Any]] = deque()  #: per recent batch, its frames lists and fresh strings
        self.since = 0  #: entries consumed since the last prune
        self.total = 0
        self.prunes = 0
        self.dropped = 0  #: memo slots emptied, over all prunes

    def spent(self, items: list[Any]) -> None:
        """Note a batch's entries (before they are emptied) as objects to drop.  An item that is
        no dict is dropped too: dropping is never wrong, at worst the file is read again
        (:class:`PruneMiss`)."""
        dicts = items if all(type(x) is dict for x in items) else [x for x in items if type(x) is dict]
        later = [f for f in map(dict.get, dicts, repeat("frames")) if type(f) is list]  # a shared "?" stays
        for key in FRESH_STRINGS:
            strs = [s for s in map(dict.get, dicts, repeat(key)) if s is not None]
            if strs and len(set(map(id, strs))) == len(strs):  # each its own object: not shared
                later += strs
        self.dead += items
        self.waiting.append(later)
        if len(self.waiting) > self.window:
            self.dead += self.waiting.popleft()
        self.since += len(items)
        self.total += len(items)

    def release(self) -> None:
        """Forget the unpickler and the objects held (the load is over)."""
        self.unpickler = None
        self.dead = []
        self.waiting.clear()

    def maybe_prune(self) -> None:
        if self.unpickler is None or self.since < max(self.every, self.total >> 2):
            return
        self.since = 0
        live = self.unpickler.memo.copy()
        n = len(live)
        # which slots hold a spent object, by identity, in numpy (a slot at a time in Python is ~1 µs an entry)
        ids = np.fromiter(map(id, live.values()), dtype=np.int64, count=n)
        spent = np.fromiter(map(id, self.dead), dtype=np.int64, count=len(self.dead))
        spent.sort()
        at = np.searchsorted(spent, ids)
        at[at == spent.size] = 0
        kept = np.fromiter(live.keys(), dtype=np.int64, count=n)[spent[at] != ids] if spent.size else \
            np.fromiter(live.keys(), dtype=np.int64, count=n)
        del ids, spent, at
        keep = [(i, live[i]) for i in kept.tolist()]
        self.dropped += n - len(keep)
        del live, kept
        keeper = _keeper(keep)
        del keep
        self.unpickler.memo = pickle.Unpickler(io.BytesIO(b"")).memo  # frees the old slots first
        self.unpickler.memo = keeper.memo
        del keeper
        self.dead = []
        self.prunes += 1


def _probe_snapshot() -> tuple[bytes, list[tuple[str, int]], Any]:
    """A small snapshot-like pickle (protocol 4, standard pickler): 3,500 entries, a free's two
    entries sharing a frames list, shared and fresh strings, and after the history a value naming
    objects memoized before it (a shared string, a frame dict) and new ones."""
    frame = {"filename": "probe.py", "line": 1, "name": "f"}
    shared = "shared"
    entries, expected = [], []
    for i in range(3500):
        fl = [frame]
        for action in ("alloc", "free_requested", "free_completed")[: 1 + (i % 2) * 2]:
            entries.append({"action": action, "addr": i, "frames": fl, "compile_context": f"N/A{i % 7}",
                            "user_metadata": shared})
            expected.append((action, i))
    tail = [shared, frame, {"after": [1, 2, 3]}]
    return pickle.dumps({"device_traces": [entries], "tail": tail}, protocol=4), expected, tail


_WORKS: list[bool] = []


def pruning_works(stream_read: Callable[[bytes, MemoPruner], tuple[Any, list[tuple[str, int]]]]) -> bool:
    """Whether pruning gives the same objects on this interpreter (checked once per process):
    ``stream_read(data, pruner)`` reads a pickle as a snapshot is read, pruning after every
    batch, and returns (value, the (action, addr) of each entry streamed)."""
    if not _WORKS:
        data, expected, tail = _probe_snapshot()
        try:
            pruner = MemoPruner(every=1, window=1)
            value, got = stream_read(data, pruner)
            ok = got == expected and value.get("tail") == tail and pruner.prunes > 0 and pruner.dropped > 0
        except Exception:  # noqa: BLE001 - any failure means: do not prune here
            ok = False
        _WORKS.append(ok)
    return _WORKS[0]
