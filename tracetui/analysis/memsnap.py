"""What only a CUDA memory snapshot answers, over the allocation model
(:mod:`tracetui.analysis.memory`, whose rows are the snapshot's history entries: the peak,
the blocks live at a time and the pairing are that module's and :mod:`.memory_peak`'s).

- **owners are stack frames**: a live block belongs to the innermost *user frame* of the
  stack of its ``alloc`` entry (:func:`user_frames`: a Python file outside ``site-packages``,
  ``dist-packages`` and the Python standard library), else its innermost Python frame; a block
  whose stack has C++ frames only (recorded with ``stacks="all"`` where no Python frame exists:
  the autograd engine's thread) is :data:`NO_PYTHON` (its innermost C++ frame is the unwinder's
  own), one without frames :data:`NO_FRAMES`.  Grouped ``by`` that frame (:data:`GROUPINGS`),
  its file, the whole stack, or the profiler annotation open then (``annotation``: the
  memory model's owner);
- **segments and fragmentation** at the time of the snapshot: per device the segments' bytes
  (reserved), the bytes of their blocks that are allocated (``active_allocated`` and
  ``active_pending_free``) and free (``inactive``), the largest free block, and
  ``fragmentation`` = 1 - largest free block / free bytes (0: every free byte in one block);
- **out of memory**: per ``oom`` entry, the bytes asked for, what the driver said was free
  (``device_free``), the bytes allocated and reserved then and the blocks live then, by owner;
- **the op open at a time** in a Kineto trace of the same run (:func:`op_at`).

Bytes are ints; times µs relative to the snapshot trace's origin (its first entry).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from ..memsnap.model import BLOCK_STATES, OOM, SEGMENT_TYPES, MemorySnapshot
from ..memsnap.trace import SnapshotTrace
from .frames import host_event_at, per_trace
from .memory import Device, MemoryModel
from .memory_peak import OUTSIDE, live_rows

#: ways to group live blocks (``--by``)
GROUPINGS = ("frame", "file", "stack", "annotation")
#: the owner of a block whose allocation recorded no frame
NO_FRAMES = "(no frames)"
#: the owner of a block whose allocation recorded C++ frames only
NO_PYTHON = "(no Python frame)"
#: owner keys of those two (frame ids are >= 0)
_NO_FRAMES, _NO_PYTHON = -1, -2
#: a frame's file is a library's (not the user's code): installed packages, the standard library
_LIBRARY = re.compile(r"(^|[/\\])(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d+(\.\d+)?[/\\]|^<")


def user_frames(snap: MemorySnapshot) -> np.ndarray:
    """Per frame: is it the user's code (a ``.py`` file outside installed packages and the
    standard library)?"""
    return per_trace(snap, "memsnap_user_frames", _user_frames)


def _user_frames(snap: MemorySnapshot) -> np.ndarray:
    fr = snap.frames
    user_file = np.fromiter((f.endswith(".py") and not _LIBRARY.search(f) for f in fr.files), dtype=bool,
                            count=len(fr.files))
    return user_file[fr.file] if fr.n else np.zeros(0, dtype=bool)


def python_frames(snap: MemorySnapshot) -> np.ndarray:
    fr = snap.frames
    py = np.fromiter((f.endswith(".py") for f in fr.files), dtype=bool, count=len(fr.files))
    return py[fr.file] if fr.n else np.zeros(0, dtype=bool)


def owner_frames(snap: MemorySnapshot) -> np.ndarray:
    """Per stack: its owner frame (module docstring; -1: no frames, -2: no Python frame)."""
    return per_trace(snap, "memsnap_owner_frames", _owner_frames)


def _owner_frames(snap: MemorySnapshot) -> np.ndarray:
    st = snap.stacks
    lens = np.diff(st.start)
    out = np.where(lens > 0, _NO_PYTHON, _NO_FRAMES).astype(np.int64)
    if not st.frames.size:
        return out
    which = np.repeat(np.arange(st.n), lens)
    for flags in (python_frames(snap), user_frames(snap)):
        hit = flags[st.frames]
        # the first frame of each stack with the flag (the later pass wins: user over Python)
        pos = np.flatnonzero(hit)
        first = np.full(st.n, -1, dtype=np.int64)
        stacks = which[pos]
        keep = np.ones(pos.size, dtype=bool)
        keep[1:] = stacks[1:] != stacks[:-1]
        first[stacks[keep]] = st.frames[pos[keep]]
        out = np.where(first >= 0, first, out)
    return out


def frame_label(snap: MemorySnapshot, f: int) -> str:
    """``forward (linear.py:134)``."""
    file, line, name = snap.frames.text(f)
    return f"{name} ({os.path.basename(file)}:{line})"


def stack_frames(snap: MemorySnapshot, s: int) -> list[dict[str, object]]:
    """A stack's frames, innermost first, as the snapshot wrote them (``filename``, ``line``,
    ``name``), each with ``user``: whether it is the user's code."""
    user = user_frames(snap)
    out = []
    for f in snap.stacks.of(s).tolist():
        file, line, name = snap.frames.text(f)
        out.append({"filename": file, "line": line, "name": name, "user": bool(user[f])})
    return out


@dataclass
class SnapOwner:
    """Live blocks grouped by owner (``by``: :data:`GROUPINGS`)."""

    label: str
    bytes: int
    count: int
    rows: np.ndarray  #: model rows of the allocations, largest first
    frame: int = -1  #: the owner frame (by frame, by file: the first block's; -1 none)
    stack: int = -1  #: the stack of the largest block


def row_stacks(kt: SnapshotTrace, m: MemoryModel, rows: np.ndarray) -> np.ndarray:
    """The stack (-1 none) of the history entry of each model row."""
    return kt.snapshot.history.stack[m.entry[rows]].astype(np.int64)


def owners_by(kt: SnapshotTrace, m: MemoryModel, rows: np.ndarray, by: str = "frame") -> list[SnapOwner]:
    """Allocation ``rows`` grouped by owner (module docstring), most bytes first (ties: label),
    each group's rows largest first (then in time order)."""
    if by not in GROUPINGS:
        raise ValueError(f"group by one of {', '.join(GROUPINGS)}, not {by!r}")
    snap = kt.snapshot
    rows = rows[np.lexsort((rows, -m.nbytes[rows]))]
    stacks = row_stacks(kt, m, rows)
    of = owner_frames(snap)
    frames = np.where(stacks >= 0, of[np.maximum(stacks, 0)], _NO_FRAMES) if of.size else \
        np.full(rows.size, _NO_FRAMES)
    if by == "frame":
        keys = frames
    elif by == "file":
        keys = np.where(frames >= 0, snap.frames.file[np.maximum(frames, 0)], frames) if snap.frames.n else frames
    elif by == "stack":
        keys = stacks
    else:
        keys = m.owner[rows]
    out = []
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(-1)
    for k in range(uniq.size):
        sel = np.flatnonzero(inv == k)
        r = rows[sel]
        key = int(uniq[k])
        f = int(frames[sel[0]])
        out.append(SnapOwner(_label(kt, by, key, f), int(m.nbytes[r].sum()), int(r.size), r, f, int(stacks[sel[0]])))
    out.sort(key=lambda o: (-o.bytes, o.label))
    return out


def _label(kt: SnapshotTrace, by: str, key: int, frame: int) -> str:
    snap = kt.snapshot
    if by == "annotation":
        return kt.name(key) if key >= 0 else OUTSIDE
    if by != "stack" and key < 0:
        return NO_PYTHON if key == _NO_PYTHON else NO_FRAMES
    if key < 0:
        return NO_FRAMES
    if by == "file":
        return snap.frames.files[key]
    if by == "frame":
        return frame_label(snap, key)
    user = user_frames(snap)
    fids = snap.stacks.of(key)
    mine = [f for f in fids.tolist() if user[f]] or fids[:3].tolist()
    return " < ".join(frame_label(snap, f) for f in mine[:4]) + (" < ..." if len(mine) > 4 else "")


def row_at(m: MemoryModel, d: Device, t: float) -> int:
    """The last row of device ``d`` at or before time ``t`` (-1: before its first)."""
    k = int(np.searchsorted(m.ts[d.lo:d.hi], t, side="right"))
    return d.lo + k - 1


def live_at(m: MemoryModel, d: Device, t: float) -> np.ndarray:
    """Allocation rows of ``d`` live at time ``t`` (after every entry at or before it), largest first."""
    row = row_at(m, d, t)
    return live_rows(m, d, row) if row >= 0 else np.zeros(0, dtype=np.int64)


# ------------------------------------------------------------------ segments
@dataclass
class SegmentStats:
    """A device's segments at the time of the snapshot (module docstring)."""

    segments: int
    reserved: int
    allocated: int
    free: int
    largest_free: int
    expandable: int
    by_pool: dict[str, dict[str, int]]

    @property
    def fragmentation(self) -> float:
        return 0.0 if self.free <= 0 else 1.0 - self.largest_free / self.free


def segment_stats(snap: MemorySnapshot, device: int) -> SegmentStats:
    seg, blk = snap.segments, snap.blocks
    mine = np.flatnonzero(seg.device == device)
    bs = np.flatnonzero(np.isin(blk.segment, mine))
    live = np.isin(blk.state[bs], (0, 1))
    free = blk.state[bs] == BLOCK_STATES.index("inactive")
    size = np.maximum(blk.size[bs], 0)

    def part(segs: np.ndarray, b: np.ndarray) -> dict[str, int]:
        fsz = size[b & free]
        return {"segments": int(segs.size), "reserved_bytes": int(np.maximum(seg.total_size[segs], 0).sum()),
                "allocated_bytes": int(size[b & live].sum()), "free_bytes": int(fsz.sum()),
                "largest_free_block_bytes": int(fsz.max()) if fsz.size else 0}

    everything = part(mine, np.ones(bs.size, dtype=bool))
    pools = {}
    for i, name in enumerate(SEGMENT_TYPES):
        segs = mine[seg.pool[mine] == i]
        if segs.size:
            pools[name] = part(segs, np.isin(blk.segment[bs], segs))
    return SegmentStats(everything["segments"], everything["reserved_bytes"], everything["allocated_bytes"],
                        everything["free_bytes"], everything["largest_free_block_bytes"],
                        int(seg.expandable[mine].sum()), pools)


# ------------------------------------------------------------------ out of memory
@dataclass
class Oom:
    """One ``oom`` entry: the request and the memory then."""

    device: Device
    row: int  #: model row of the entry
    entry: int  #: index in the device's history list
    ts: float
    requested: int
    device_free: int  #: -1: not recorded
    allocated: int
    reserved: int
    stream: int
    stack: int
    live: np.ndarray  #: allocation rows live then, largest first


def ooms(kt: SnapshotTrace, m: MemoryModel) -> list[Oom]:
    """Every ``oom`` entry, device by device, in time order."""
    h = kt.snapshot.history
    out = []
    for d in m.devices:
        # a view of the device's rows, and one byte per row for the test: a 1 GB snapshot's
        # 13.6M rows made ~300 MB of index arrays here, the browser's peak
        found = np.flatnonzero(h.action[m.entry[d.lo:d.hi]] == OOM) + d.lo
        for r in found.tolist():
            e = int(m.entry[r])
            out.append(Oom(d, r, e - int(h.lo[h.device[e]]), float(m.ts[r]), int(h.size[e]), int(h.device_free[e]),
                           int(m.allocated[r]), int(m.reserved[r]), int(h.stream[e]), int(h.stack[e]),
                           live_rows(m, d, r)))
    return out


def entry_index(kt: SnapshotTrace, m: MemoryModel, row: int) -> int:
    """A model row's index in its device's history list (``device_traces[d][k]``)."""
    h = kt.snapshot.history
    e = int(m.entry[row])
    return e - int(h.lo[h.device[e]])


# ------------------------------------------------------------------ beside a Kineto trace
def op_at(kt: KinetoTrace, t: float) -> int:
    """The op open at time ``t`` (µs from the trace's origin) in a Kineto trace: on every host
    thread the innermost event open then and the innermost cpu_op at or above it; of those,
    the one that started last (the deepest on ties).  -1: no op open."""
    host = np.array([ln.index for ln in kt.lanes if not ln.is_gpu], dtype=np.int64)
    if not host.size:
        return -1
    ev = host_event_at(kt, host, np.full(host.size, float(t)))
    ok = ev >= 0
    ops = np.where(ok, kt.cpu_op_of[np.maximum(ev, 0)], -1)
    ops = ops[ops >= 0]
    code = ev[ok]
    code = code[np.isin(kt.kind[code], [int(Kind.PYTHON), int(Kind.ANNOTATION)])]
    cand = ops if ops.size else code
    if not cand.size:
        return -1
    return int(cand[np.lexsort((kt.depth[cand], kt.ts[cand]))[-1]])
