"""CUDA memory snapshots of known content, for the tests and the bench.

:class:`SnapshotBuilder` plays an allocator: segments, allocations and frees at addresses the
test chooses, out-of-memory entries, profiler annotations; :meth:`SnapshotBuilder.snapshot`
returns the dict ``torch.cuda.memory._snapshot()`` would (the layout of ``../shared/FORMATS.md``,
"CUDA memory snapshots": history entries with their frames, every frame dict a shared object as
torch writes them, a free's ``free_requested`` and ``free_completed`` sharing one frames list;
segments with their blocks, the free space between live blocks as ``inactive`` blocks) and
:func:`write` pickles it with the standard library (any protocol 2-5; writing is safe, only
reading must be restricted).

:func:`write_scaled` writes a large snapshot without building it in memory: the same layout,
pickled opcode by opcode as the standard pickler does it (protocol 4, frames of 64 KiB, every
dict, list and string memoized, shared objects written once), so a 1 GB file costs a few MB to
write.  ``tests/core/test_memsnap_gen.py`` checks it against ``pickle.loads`` of its own output.

Nothing here uses tracetui: the tests count what they expect from these dicts.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass, field
from pathlib import Path

#: a time_us near 2027 (µs since the epoch), as torch writes them
T0 = 1_800_000_000_000_000
SITE = "/usr/lib/python3.12/site-packages/torch/nn/modules"


@dataclass
class _Segment:
    device: int
    addr: int
    size: int
    pool: str
    stream: int
    frames: list
    expandable: bool = False


@dataclass
class SnapshotBuilder:
    """Builds a snapshot's dict step by step (see the module docstring).  Times advance by
    ``step_us`` per entry unless :meth:`tick` says otherwise."""

    devices: int = 1
    t: int = T0
    step_us: int = 10
    traces: list = field(default_factory=list)
    annotations: list = field(default_factory=list)
    segments: dict = field(default_factory=dict)  #: (device, addr) -> _Segment
    live: dict = field(default_factory=dict)  #: (device, addr) -> [size, frames list, state, requested]
    _frames: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.traces = [[] for _ in range(self.devices)]

    # ---- frames: one shared dict per (filename, line, name), a new list per entry
    def frame(self, filename: str, line: int, name: str) -> dict:
        key = (filename, line, name)
        if key not in self._frames:
            self._frames[key] = {"filename": filename, "line": line, "name": name}
        return self._frames[key]

    def stack(self, *frames: tuple[str, int, str]) -> list:
        return [self.frame(*f) for f in frames]

    def tick(self, us: int) -> None:
        self.t += us

    def _entry(self, device: int, action: str, addr: int, size: int, frames: list, stream: int = 0, **more) -> dict:
        self.t += self.step_us
        e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": self.t,
             "compile_context": "N/A", "user_metadata": "", "frames": frames, **more}
        if action == "oom":
            del e["addr"]
        self.traces[device].append(e)
        return e

    # ---- the allocator's actions
    def segment(self, device: int, addr: int, size: int, pool: str = "large", frames: list | None = None,
                stream: int = 0) -> None:
        frames = frames if frames is not None else []
        self.segments[(device, addr)] = _Segment(device, addr, size, pool, stream, frames)
        self._entry(device, "segment_alloc", addr, size, frames, stream)

    def segment_free(self, device: int, addr: int) -> None:
        seg = self.segments.pop((device, addr))
        self._entry(device, "segment_free", addr, seg.size, [], seg.stream)

    def alloc(self, device: int, addr: int, size: int, frames: list | None = None, stream: int = 0,
              requested: int | None = None) -> None:
        frames = frames if frames is not None else []
        assert (device, addr) not in self.live, "the test allocates a live address"
        self.live[(device, addr)] = [size, frames, "active_allocated", requested or size]
        self._entry(device, "alloc", addr, size, frames, stream)

    def free(self, device: int, addr: int, frames: list | None = None, complete: bool = True) -> None:
        """``free_requested`` then (``complete``) ``free_completed``, sharing one frames list."""
        frames = frames if frames is not None else []
        size = self.live[(device, addr)][0]
        self._entry(device, "free_requested", addr, size, frames)
        if complete:
            self.complete(device, addr, frames)
        else:
            self.live[(device, addr)][2] = "active_pending_free"

    def complete(self, device: int, addr: int, frames: list | None = None) -> None:
        size = self.live.pop((device, addr))[0]
        self._entry(device, "free_completed", addr, size, frames if frames is not None else [])

    def oom(self, device: int, size: int, device_free: int, frames: list | None = None) -> None:
        self._entry(device, "oom", 0, size, frames if frames is not None else [], device_free=device_free)

    def annotate(self, device: int, name: str, stage: str) -> None:
        self.t += 1
        self.annotations.append({"stage": stage, "name": name, "device": device, "time_us": self.t})

    def before_history(self, device: int, addr: int, size: int, frames: list | None = None) -> None:
        """A block allocated before the history begins (it is in a segment, not in the history)."""
        self.live[(device, addr)] = [size, frames if frames is not None else [], "active_allocated", size]

    def forget_segment_entry(self, device: int, addr: int) -> None:
        """Drop a segment's ``segment_alloc`` from the history (it happened before the history)."""
        self.traces[device] = [e for e in self.traces[device]
                               if not (e["action"] == "segment_alloc" and e["addr"] == addr)]

    # ---- the snapshot
    def snapshot(self, snapshot_entry: bool = True) -> dict:
        """The dict (see the module docstring); ``snapshot_entry``: end each device's history
        with the ``snapshot`` entry torch adds (its size: the bytes allocated)."""
        segs = []
        for seg in sorted(self.segments.values(), key=lambda s: (s.device, s.addr)):
            blocks, pos, allocated, active = [], seg.addr, 0, 0
            inside = sorted((a, v) for (d, a), v in self.live.items() if d == seg.device and
                            seg.addr <= a < seg.addr + seg.size)
            for a, (size, frames, state, req) in inside:
                if a > pos:
                    blocks.append({"address": pos, "size": a - pos, "requested_size": 0, "state": "inactive",
                                   "frames": []})
                blocks.append({"address": a, "size": size, "requested_size": req, "state": state, "frames": frames})
                allocated += size
                active += size
                pos = a + size
            if pos < seg.addr + seg.size:
                blocks.append({"address": pos, "size": seg.addr + seg.size - pos, "requested_size": 0,
                               "state": "inactive", "frames": []})
            segs.append({"device": seg.device, "address": seg.addr, "total_size": seg.size,
                         "allocated_size": allocated, "active_size": active,
                         "requested_size": sum(b["requested_size"] for b in blocks), "stream": seg.stream,
                         "segment_type": seg.pool, "segment_pool_id": (0, 0), "is_expandable": seg.expandable,
                         "frames": seg.frames, "blocks": blocks})
        traces = [list(t) for t in self.traces]
        if snapshot_entry:
            for d, t in enumerate(traces):
                if t:
                    self.t += 1
                    size = sum(v[0] for (dd, _), v in self.live.items() if dd == d)
                    t.append({"action": "snapshot", "addr": 0, "size": size, "stream": 0, "time_us": self.t,
                              "compile_context": "N/A", "user_metadata": ""})
        return {"segments": segs, "device_traces": traces,
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False,
                                       "max_split_size": -1, "roundup_power2_divisions": {"1": 0, "2": 0}},
                "external_annotations": list(self.annotations)}


def write(snap: dict, path: str | Path, protocol: int = 4) -> Path:
    path = Path(path)
    with open(path, "wb") as fh:
        pickle.dump(snap, fh, protocol=protocol)
    return path


# ---------------------------------------------------------------- the known snapshots of the tests
MIB = 1 << 20
BASE = 0x7F00_0000_0000
SMALL = 0x7F10_0000_0000
#: the user's code (what owners are) and a library frame above it (torch's)
FORWARD = ("/home/me/train.py", 10, "forward")
BACKWARD = ("/home/me/train.py", 20, "backward")
LOAD = ("/home/me/data.py", 5, "load")
STEP = ("/home/me/train.py", 40, "step")
LINEAR = (f"{SITE}/linear.py", 134, "forward")


def basic(b: SnapshotBuilder | None = None) -> SnapshotBuilder:
    """One device, two segments (20 MiB large, 2 MiB small), allocations from three user frames
    (``forward``, ``backward`` at train.py, ``load`` at data.py; most under torch's
    ``linear.py``), one without frames, frees, a free requested and not completed, and the
    profiler's ``ProfilerStep#0`` > ``forward`` / ``backward`` annotations."""
    b = b or SnapshotBuilder()
    fwd = lambda: b.stack(LINEAR, FORWARD, STEP)  # noqa: E731
    bwd = lambda: b.stack(BACKWARD, STEP)  # noqa: E731
    b.annotate(0, "ProfilerStep#0", "START")
    b.segment(0, BASE, 20 * MIB, frames=fwd())
    b.segment(0, SMALL, 2 * MIB, pool="small", frames=b.stack(LOAD))
    b.annotate(0, "forward", "START")
    b.alloc(0, BASE, 4 * MIB, fwd())
    b.alloc(0, BASE + 4 * MIB, 2 * MIB, fwd())
    b.alloc(0, SMALL, 512, b.stack(LOAD, STEP))
    b.alloc(0, BASE + 6 * MIB, 1 * MIB, [])  # no frames: the autograd thread
    b.annotate(0, "forward", "END")
    b.annotate(0, "backward", "START")
    b.alloc(0, BASE + 8 * MIB, 3 * MIB, bwd())
    b.free(0, BASE + 4 * MIB, b.stack(STEP))
    b.alloc(0, BASE + 12 * MIB, 5 * MIB, bwd())  # the peak: 4 + 1 + 3 + 5 MiB + 512 B
    b.free(0, BASE + 12 * MIB, b.stack(STEP))
    b.free(0, BASE + 8 * MIB, b.stack(STEP), complete=False)  # requested, not completed: still allocated
    b.alloc(0, SMALL + 512, 1024, b.stack(LOAD, STEP))
    b.annotate(0, "backward", "END")
    b.annotate(0, "ProfilerStep#0", "END")
    return b


def with_oom(b: SnapshotBuilder | None = None) -> SnapshotBuilder:
    """:func:`basic`, then a request of 100 GiB with 10 GiB free on the device."""
    b = basic(b)
    b.oom(0, 100 << 30, 10 << 30, b.stack(FORWARD, STEP))
    return b


def ring() -> SnapshotBuilder:
    """A history that began late (the allocator keeps the last entries only): a segment and two
    blocks allocated before it; one of them freed in the history, the other still live."""
    b = SnapshotBuilder()
    b.segment(0, BASE, 16 * MIB)
    b.forget_segment_entry(0, BASE)
    b.before_history(0, BASE, 2 * MIB, b.stack(FORWARD))
    b.before_history(0, BASE + 2 * MIB, 1 * MIB, b.stack(LOAD))
    b.alloc(0, BASE + 4 * MIB, 4 * MIB, b.stack(BACKWARD))
    b.complete(0, BASE + 2 * MIB, b.stack(STEP))  # freed in the history, allocated before it
    b.alloc(0, BASE + 8 * MIB, 2 * MIB, b.stack(FORWARD))
    return b


def two_devices() -> SnapshotBuilder:
    """Two devices: cuda:0 as :func:`basic`, cuda:1 with its own segment and blocks."""
    b = SnapshotBuilder(devices=2)
    basic(b)
    b.segment(1, BASE, 8 * MIB)
    b.alloc(1, BASE, 6 * MIB, b.stack(FORWARD))
    b.free(1, BASE)
    b.alloc(1, BASE + 6 * MIB, 1 * MIB, b.stack(LOAD))
    return b


# ---------------------------------------------------------------- a large snapshot, written as a stream
class _Emitter:
    """Writes protocol-4 pickle opcodes as the standard pickler does: frames of about 64 KiB,
    every container and string memoized (MEMOIZE), a shared object referenced by BINGET."""

    FRAME_TARGET = 64 * 1024

    def __init__(self, fh) -> None:
        self.fh = fh
        self.buf = bytearray()
        self.memo = 0  # the next memo index
        fh.write(b"\x80\x04")

    def op(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) >= self.FRAME_TARGET:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.fh.write(b"\x95" + struct.pack("<Q", len(self.buf)) + self.buf)
            self.buf = bytearray()

    def memoize(self) -> int:
        self.op(b"\x94")
        self.memo += 1
        return self.memo - 1

    @staticmethod
    def get(idx: int) -> bytes:
        return b"h" + bytes((idx,)) if idx < 256 else b"j" + struct.pack("<I", idx)

    @staticmethod
    def int_(v: int) -> bytes:
        if 0 <= v <= 0xFF:
            return b"K" + bytes((v,))
        if 0 <= v <= 0xFFFF:
            return b"M" + struct.pack("<H", v)
        if -0x80000000 <= v <= 0x7FFFFFFF:
            return b"J" + struct.pack("<i", v)
        n = (v.bit_length() + 8) // 8
        return b"\x8a" + bytes((n,)) + v.to_bytes(n, "little", signed=True)

    def str_(self, s: str) -> int:
        raw = s.encode()
        self.op((b"\x8c" + bytes((len(raw),)) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))) + raw)
        return self.memoize()


def write_scaled(path: str | Path, entries: int, *, frames_per_stack: int = 10, unique_frames: int = 2000,
                 stacks: int = 500, seed: int = 1) -> dict:
    """Write a snapshot of ``entries`` history entries on cuda:0 (allocations, each freed a few
    entries later by a ``free_requested`` + ``free_completed`` pair sharing its frames list;
    ``stacks`` distinct stacks of ``frames_per_stack`` frames drawn from ``unique_frames``
    frames; one segment holding every address; every block freed at the end) as the standard
    pickler would (see the module docstring).  Returns what the test or the bench checks:
    ``entries``, ``peak`` (bytes allocated at the highest), ``end`` (allocated at the snapshot:
    0), ``size`` of the file."""
    import random

    rnd = random.Random(seed)
    path = Path(path)
    block = 512
    keep = 8  # allocations live at once (each freed ``keep`` allocations later)
    n_alloc = max(entries // 3, 1)
    with open(path, "wb") as fh:
        e = _Emitter(fh)
        e.op(b"}")
        e.memoize()
        e.op(b"(")
        keys = {}

        def key(k: str) -> bytes:
            if k not in keys:
                keys[k] = e.str_(k)
                return b""
            return e.get(keys[k])

        def k(name: str) -> None:
            got = key(name)
            if got:
                e.op(got)

        # segments: one segment covering every address
        k("segments")
        e.op(b"]")
        e.memoize()
        e.op(b"}")
        e.memoize()
        e.op(b"(")
        seg_size = keep * block * 2
        for name, val in (("device", 0), ("address", 0x7F00_0000_0000), ("total_size", seg_size),
                          ("allocated_size", 0), ("active_size", 0), ("requested_size", 0), ("stream", 0)):
            k(name)
            e.op(e.int_(val))
        k("segment_type")
        e.str_("large")
        k("segment_pool_id")
        e.op(e.int_(0) + e.int_(0) + b"\x86")  # TUPLE2
        e.memoize()
        k("is_expandable")
        e.op(b"\x89")
        k("frames")
        e.op(b"]")
        e.memoize()
        k("blocks")
        e.op(b"]")
        e.memoize()
        e.op(b"}")
        e.memoize()
        e.op(b"(")
        for name, val in (("address", 0x7F00_0000_0000), ("size", seg_size), ("requested_size", 0)):
            k(name)
            e.op(e.int_(val))
        k("state")
        e.str_("inactive")
        k("frames")
        e.op(b"]")
        e.memoize()
        e.op(b"ua")  # the block's SETITEMS, APPEND to blocks
        e.op(b"ua")  # the segment's SETITEMS, APPEND to segments
        # frames: shared dicts, memoized once
        frame_idx: list[int] = []
        files = [f"{SITE}/mod{i % 40}.py" if i % 3 else f"/home/me/project/file{i % 50}.py"
                 for i in range(unique_frames)]
        k("device_traces")
        e.op(b"]")
        e.memoize()
        e.op(b"]")
        e.memoize()
        # the stacks: frame ids per stack; frame dicts written on first use inside an entry
        stack_frames = [[rnd.randrange(unique_frames) for _ in range(frames_per_stack)] for _ in range(stacks)]
        actions: dict[str, int] = {}
        live: list[tuple[int, int, int]] = []  # (addr, list memo index, stack)
        now = peak = 0
        t = T0
        written = 0
        batch = 0

        def begin_batch() -> None:
            e.op(b"(")

        def frames_list(stack: int) -> int:
            e.op(b"]")
            idx = e.memoize()
            fr = stack_frames[stack]
            e.op(b"(")
            for f in fr:
                if len(frame_idx) <= f or frame_idx[f] < 0:
                    frame_idx.extend([-1] * (f + 1 - len(frame_idx)))
                    e.op(b"}")
                    fid = e.memoize()
                    e.op(b"(")
                    k("filename")
                    e.str_(files[f])
                    k("line")
                    e.op(e.int_(10 + f))
                    k("name")
                    e.str_(f"func_{f}")
                    e.op(b"u")
                    frame_idx[f] = fid
                else:
                    e.op(e.get(frame_idx[f]))
            e.op(b"e")
            return idx

        def entry(action: str, addr: int, size: int, frames: tuple[str, int]) -> int:
            """Write one entry; the memo index of its frames list."""
            nonlocal t, written, batch
            t += 3
            e.op(b"}")
            e.memoize()
            e.op(b"(")
            k("action")
            if action in actions:
                e.op(e.get(actions[action]))
            else:
                actions[action] = e.str_(action)
            k("addr")
            e.op(e.int_(addr))
            k("size")
            e.op(e.int_(size))
            k("stream")
            e.op(e.int_(0))
            k("time_us")
            e.op(e.int_(t))
            k("compile_context")
            if "N/A" in keys:
                e.op(e.get(keys["N/A"]))
            else:
                keys["N/A"] = e.str_("N/A")
            k("user_metadata")
            if "" in keys:
                e.op(e.get(keys[""]))
            else:
                keys[""] = e.str_("")
            k("frames")
            kind, val = frames
            if kind == "new":
                lidx = frames_list(val)
            else:
                lidx = val
                e.op(e.get(val))
            e.op(b"u")
            written += 1
            batch += 1
            if batch == 1000:
                e.op(b"e")
                begin_batch()
                batch = 0
            return lidx

        begin_batch()
        slot = 0
        for _ in range(n_alloc):
            if len(live) == keep:
                addr, lidx, st = live.pop(0)
                entry("free_requested", addr, block, ("get", lidx))
                entry("free_completed", addr, block, ("get", lidx))
                now -= block
            addr = 0x7F00_0000_0000 + (slot % (2 * keep)) * block
            slot += 1
            st = rnd.randrange(stacks)
            live.append((addr, entry("alloc", addr, block, ("new", st)), st))
            now += block
            peak = max(peak, now)
        for addr, lidx, _ in live:  # every block freed: the segment's one inactive block is the end state
            entry("free_requested", addr, block, ("get", lidx))
            entry("free_completed", addr, block, ("get", lidx))
            now -= block
        e.op(b"e")  # the last batch
        e.op(b"a")  # the device list into device_traces
        k("allocator_settings")
        e.op(b"}")
        e.memoize()
        k("external_annotations")
        e.op(b"]")
        e.memoize()
        e.op(b"u.")
        e.flush()
    return {"entries": written, "peak": peak, "end": now, "size": path.stat().st_size}
