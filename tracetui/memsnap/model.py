"""A CUDA memory snapshot as columns (:class:`MemorySnapshot`): the allocator's history, its
segments and blocks at the time of the snapshot, the stack frames (interned), the profiler's
annotations; and what the history means for the bytes allocated and reserved over time.

``torch.cuda.memory._dump_snapshot`` writes (``../shared/FORMATS.md``):

- ``device_traces``: per device (its CUDA ordinal) the history, oldest first, each entry an
  ``action`` (:data:`ACTIONS`) with ``addr``, ``size``, ``stream``, ``time_us`` (µs since the
  epoch), ``frames`` (innermost first: ``filename``, ``line``, ``name``) and, for ``oom``,
  ``device_free``;
- ``segments``: the memory the allocator holds from the driver at the time of the snapshot,
  each with its ``blocks`` (``state``: :data:`BLOCK_STATES`);
- ``allocator_settings``, ``external_annotations`` (the profiler's ranges: ``stage`` START/END,
  ``name``, ``device``, ``time_us``).

Rules (defined here once; docs/memory.md, "CUDA memory snapshots"):

- **allocated** bytes change at ``alloc`` (+size) and ``free_completed`` (-size): a block
  whose free was requested (``free_requested``) stays allocated until the allocator completes
  the free (its stream's work done);
- **reserved** bytes change at ``segment_alloc`` and ``segment_map`` (+size),
  ``segment_free`` and ``segment_unmap`` (-size);
- the **end** of the history is the snapshot: allocated then = the blocks of the segments
  that are ``active_allocated`` or ``active_pending_free``; reserved = the segments' sizes;
- the **baseline** (bytes allocated, or reserved, before the history's first entry: the
  allocator keeps the last ``max_entries`` only, and history may be switched on late) =
  the end value minus the history's net change.  So, as a Kineto ``[memory]`` event's
  ``Total Allocated``, each entry carries the bytes allocated (and reserved) just after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import LoadWarning

#: the history's actions, in their code order (uint8 column ``SnapshotHistory.action``)
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom")
#: the code of an action the list does not know (kept, counted)
OTHER_ACTION = len(ACTIONS)
ACTION_CODE = {a: i for i, a in enumerate(ACTIONS)}
ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM = \
    range(len(ACTIONS))
#: how each action changes the bytes allocated / reserved (by the entry's size)
ALLOCATED_SIGN = np.zeros(OTHER_ACTION + 1, dtype=np.int64)
ALLOCATED_SIGN[[ALLOC, FREE_COMPLETED]] = (1, -1)
RESERVED_SIGN = np.zeros(OTHER_ACTION + 1, dtype=np.int64)
RESERVED_SIGN[[SEGMENT_ALLOC, SEGMENT_MAP, SEGMENT_FREE, SEGMENT_UNMAP]] = (1, 1, -1, -1)
#: a block's states (uint8 column ``SnapshotBlocks.state``); the next code: a state not in the list
BLOCK_STATES = ("active_allocated", "active_pending_free", "inactive")
OTHER_STATE = len(BLOCK_STATES)
#: states whose bytes are allocated (a free requested, not completed, still holds its block)
ALLOCATED_STATES = (0, 1)
#: segment pools (uint8 column ``SnapshotSegments.pool``)
SEGMENT_TYPES = ("large", "small")


@dataclass
class SnapshotFrames:
    """Every distinct stack frame: ``file`` and ``name`` index ``files`` and ``names``."""

    file: np.ndarray  #: int32
    line: np.ndarray  #: int64 (-1: not a number)
    name: np.ndarray  #: int32
    files: list[str]
    names: list[str]

    @property
    def n(self) -> int:
        return int(self.file.shape[0])

    def text(self, f: int) -> tuple[str, int, str]:
        """(filename, line, name) of frame ``f``."""
        return self.files[self.file[f]], int(self.line[f]), self.names[self.name[f]]


@dataclass
class SnapshotStacks:
    """Every distinct list of frames (innermost first): stack ``s`` is
    ``frames[start[s]:start[s + 1]]``."""

    start: np.ndarray  #: int64, n + 1
    frames: np.ndarray  #: int32 frame ids

    @property
    def n(self) -> int:
        return int(self.start.shape[0]) - 1

    def of(self, s: int) -> np.ndarray:
        return self.frames[self.start[s]:self.start[s + 1]] if s >= 0 else self.frames[:0]


@dataclass
class SnapshotHistory:
    """Every history entry, device after device, each device's in file order (``device_traces[d][k]``
    is entry ``lo[d] + k``).  -1 marks a value the entry lacks."""

    device: np.ndarray  #: int32: index into ``device_traces`` (the CUDA ordinal)
    action: np.ndarray  #: uint8 code (:data:`ACTIONS`, :data:`OTHER_ACTION`)
    addr: np.ndarray  #: int64
    size: np.ndarray  #: int64 bytes
    stream: np.ndarray  #: int64
    time_us: np.ndarray  #: int64 µs since the epoch
    stack: np.ndarray  #: int32 into ``MemorySnapshot.stacks``
    device_free: np.ndarray  #: int64 bytes free on the device (``oom`` entries)
    lo: np.ndarray  #: int64, n_devices + 1: entries of device d are lo[d]:lo[d + 1]

    @property
    def n(self) -> int:
        return int(self.action.shape[0])

    @property
    def n_devices(self) -> int:
        return int(self.lo.shape[0]) - 1


@dataclass
class SnapshotSegments:
    """The segments at the time of the snapshot, with their blocks (``blocks`` of segment ``s``:
    ``block_lo[s]:block_lo[s + 1]``)."""

    device: np.ndarray  #: int32
    address: np.ndarray  #: int64
    total_size: np.ndarray  #: int64
    allocated_size: np.ndarray  #: int64 (as written: -1 where absent)
    requested_size: np.ndarray  #: int64
    stream: np.ndarray  #: int64
    pool: np.ndarray  #: uint8: index into SEGMENT_TYPES (2: other)
    expandable: np.ndarray  #: bool
    stack: np.ndarray  #: int32
    block_lo: np.ndarray  #: int64, n + 1

    @property
    def n(self) -> int:
        return int(self.device.shape[0])


@dataclass
class SnapshotBlocks:
    """The blocks of every segment, segment after segment, in address order as written."""

    segment: np.ndarray  #: int32
    address: np.ndarray  #: int64
    size: np.ndarray  #: int64
    requested_size: np.ndarray  #: int64
    state: np.ndarray  #: uint8 (:data:`BLOCK_STATES`, :data:`OTHER_STATE`)
    stack: np.ndarray  #: int32

    @property
    def n(self) -> int:
        return int(self.segment.shape[0])


@dataclass
class SnapshotAnnotations:
    """``external_annotations``: the profiler's ranges as START and END marks."""

    device: np.ndarray  #: int32
    time_us: np.ndarray  #: int64
    start: np.ndarray  #: bool: START (else END)
    name: np.ndarray  #: int32 into ``names``
    names: list[str]

    @property
    def n(self) -> int:
        return int(self.device.shape[0])


@dataclass
class MemorySnapshot:
    """One snapshot file, read (see the module docstring)."""

    path: str
    protocol: int
    file_size: int
    history: SnapshotHistory
    segments: SnapshotSegments
    blocks: SnapshotBlocks
    frames: SnapshotFrames
    stacks: SnapshotStacks
    annotations: SnapshotAnnotations
    allocator_settings: dict[str, Any]
    #: top-level keys other than the four known ones (names only)
    other_keys: list[str] = field(default_factory=list)
    #: what could not be read, counted
    warnings: list[LoadWarning] = field(default_factory=list)
    #: entries whose time is before the entry before them (shown at that entry's time)
    time_repairs: int = 0

    @property
    def n_devices(self) -> int:
        return max(self.history.n_devices, int(self.segments.device.max()) + 1 if self.segments.n else 0)

    def entries_of(self, device: int) -> slice:
        h = self.history
        return slice(int(h.lo[device]), int(h.lo[device + 1])) if device < h.n_devices else slice(0, 0)

    def action_counts(self, device: int | None = None) -> dict[str, int]:
        """Entries by action name (of one device, or all), in :data:`ACTIONS` order; an unknown
        action counts under "other"."""
        codes = self.history.action if device is None else self.history.action[self.entries_of(device)]
        counts = np.bincount(codes, minlength=OTHER_ACTION + 1)
        out = {a: int(counts[i]) for i, a in enumerate(ACTIONS) if counts[i]}
        if counts[OTHER_ACTION]:
            out["other"] = int(counts[OTHER_ACTION])
        return out


@dataclass
class Totals:
    """Per history entry, the bytes allocated and reserved on its device just after it."""

    allocated: np.ndarray  #: int64
    reserved: np.ndarray  #: int64
    baseline: np.ndarray  #: int64 per device: allocated before the history's first entry
    reserved_baseline: np.ndarray  #: int64 per device
    end_allocated: np.ndarray  #: int64 per device: the active blocks of its segments
    end_reserved: np.ndarray  #: int64 per device: its segments' sizes


def end_state(snap: MemorySnapshot, n_devices: int) -> tuple[np.ndarray, np.ndarray]:
    """Per device: (bytes allocated, bytes reserved) at the time of the snapshot, from its
    segments (allocated: blocks :data:`ALLOCATED_STATES`)."""
    seg, blk = snap.segments, snap.blocks
    reserved = np.zeros(n_devices, dtype=np.int64)
    ok = (seg.device >= 0) & (seg.device < n_devices) & (seg.total_size > 0)
    np.add.at(reserved, seg.device[ok], seg.total_size[ok])
    allocated = np.zeros(n_devices, dtype=np.int64)
    live = np.isin(blk.state, ALLOCATED_STATES) & (blk.size > 0)
    dev = seg.device[blk.segment[live]]
    ok = (dev >= 0) & (dev < n_devices)
    np.add.at(allocated, dev[ok], blk.size[live][ok])
    return allocated, reserved


def totals(snap: MemorySnapshot) -> Totals:
    """The bytes allocated and reserved after every history entry (rules in the module docstring)."""
    h = snap.history
    nd = snap.n_devices
    end_alloc, end_res = end_state(snap, nd)
    size = np.maximum(h.size, 0)
    d_alloc = ALLOCATED_SIGN[h.action] * size
    d_res = RESERVED_SIGN[h.action] * size
    allocated = np.zeros(h.n, dtype=np.int64)
    reserved = np.zeros(h.n, dtype=np.int64)
    base = end_alloc.copy()
    rbase = end_res.copy()
    for d in range(h.n_devices):
        s = snap.entries_of(d)
        if s.stop == s.start:
            continue
        run, rrun = np.cumsum(d_alloc[s]), np.cumsum(d_res[s])
        base[d] = end_alloc[d] - int(run[-1])
        rbase[d] = end_res[d] - int(rrun[-1])
        allocated[s] = base[d] + run
        reserved[s] = rbase[d] + rrun
    return Totals(allocated, reserved, base, rbase, end_alloc, end_res)
