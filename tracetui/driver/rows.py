"""Decoded JSON lines -> per-row columns: layout, what the row is, its role in pairing, time,
thread, name and the numbers the lines carry.

Each column is read out of the decoded structs by a C-level ``map`` into ``np.fromiter``
(the struct defaults in :class:`~tracetui.driver.schema.Line` make every field a number or a
string), then classified with numpy: no Python step per row.  The layout of a row comes
from its keys: ``op_id`` -> LD_PRELOAD, ``func`` -> sidecar, an integer ``type`` -> BCC, a
string ``type`` -> bpftrace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .fields import PH_B, PH_E, PH_ENTRY, T_NONE, TYPE_CODE
from .lines import DecodedLines
from .pairing import Role
from .schema import (
    BCC,
    BCC_ALLOC,
    BCC_CALL_ENTER,
    BCC_CALL_EXIT,
    BCC_COPY,
    BCC_IOCTL_ENTER,
    BCC_IOCTL_EXIT,
    BCC_LAUNCH,
    BPFTRACE,
    LAYOUTS,
    NO_RETVAL,
    PRELOAD,
    SIDECAR,
    T_KERNEL,
    T_KERNEL_MEMORY,
    T_MEMORY,
    T_SCHEDULER,
    T_SYSCALL,
    T_TRANSFER,
    T_USERSPACE,
    US_PER_TS,
    What,
    function_name,
)

NO_LAYOUT = 255
L_BPFTRACE, L_PRELOAD, L_BCC, L_SIDECAR = (LAYOUTS.index(x) for x in (BPFTRACE, PRELOAD, BCC, SIDECAR))
#: names of events whose lines give none
UNNAMED_CALL = "(unnamed call)"
BCC_IOCTL_NAME = "ioctl"
#: bpftrace record types and BCC types -> what the row is
_BPF_RECORD = {T_MEMORY: What.ALLOC, T_TRANSFER: What.TRANSFER, T_KERNEL_MEMORY: What.KERNEL_MEMORY,
               T_SCHEDULER: What.SCHEDULER, T_SYSCALL: What.SYSCALL}
_BCC_TYPES = {BCC_CALL_ENTER: (What.CALL, Role.BEGIN), BCC_CALL_EXIT: (What.CALL, Role.END),
              BCC_LAUNCH: (What.LAUNCH, Role.RECORD_BEFORE_BEGIN),
              BCC_ALLOC: (What.ALLOC, Role.RECORD_BEFORE_END), BCC_COPY: (What.TRANSFER, Role.RECORD_BEFORE_END),
              BCC_IOCTL_ENTER: (What.IOCTL, Role.BEGIN), BCC_IOCTL_EXIT: (What.IOCTL, Role.END)}


@dataclass
class Rows:
    """Per-row columns of the JSON lines that are events, in file order (rows without a
    layout or a time are left out and counted in ``dropped``).  Times are µs from the
    file's first event, per layout's unit; ``origin_us`` is that first event on the file's
    own clock."""

    line: np.ndarray  #: int64 index into the DecodedLines rows/raw
    layout: np.ndarray  #: uint8 index into LAYOUTS
    what: np.ndarray  #: uint8 What
    role: np.ndarray  #: uint8 Role
    ts: np.ndarray  #: float64 µs from origin_us
    origin_us: float
    depth: np.ndarray  #: int64, -1 none
    op_id: np.ndarray  #: int64, -1 none
    duration_us: np.ndarray  #: float64 ``duration_us`` (nan none)
    duration_ms: np.ndarray  #: float64 ``duration_ms`` (nan none)
    retval: np.ndarray  #: int64 ``retval`` or ``result_code`` (NO_RETVAL none)
    size: np.ndarray  #: int64 bytes, -1 none
    total_allocated: np.ndarray  #: int64 bytes, -1 none
    direction: np.ndarray  #: uint8: 0 none, 1 H2D, 2 D2H, 3 D2D
    cmd: np.ndarray  #: int64 ``ioctl_cmd`` or ``cmd``, -1 none
    grid: np.ndarray  #: int64 (n, 3), -1 where the row gives none
    block: np.ndarray  #: int64 (n, 3)
    name_id: np.ndarray  #: int32 into names (-1: the line names no function)
    names: list[str]
    thread: np.ndarray  #: int64 code into ``threads``
    threads: list[tuple]  #: code -> (pid or None, tid or None)
    dropped: Counter = field(default_factory=Counter)  #: reason -> rows
    unknown_types: Counter = field(default_factory=Counter)  #: (layout, what) -> rows
    negative: int = 0  #: rows with a negative duration_us or duration_ms


def row_columns(dec: DecodedLines) -> Rows:
    f = dec.fields
    n = len(dec)
    ts_raw = f["ts"]
    op_id = f["op_id"]
    tcode = f["type"]
    phase = f["phase"]
    strings = f["strings"]
    odd = f["odd_types"]
    t_int = np.zeros(n, dtype=bool)
    for v in range(BCC_CALL_ENTER, BCC_IOCTL_EXIT + 1):
        t_int |= tcode == TYPE_CODE[v]
    odd_int = np.array([k for k, v in odd.items() if isinstance(v, int)], dtype=np.int64)
    t_int[odd_int] = True
    t_str = (tcode != T_NONE) & ~t_int
    has_func = f["func"] >= 0

    layout = np.full(n, NO_LAYOUT, dtype=np.uint8)
    layout[t_str] = L_BPFTRACE
    layout[t_int] = L_BCC
    layout[has_func] = L_SIDECAR
    layout[op_id >= 0] = L_PRELOAD

    what = np.full(n, int(What.OTHER), dtype=np.uint8)
    role = np.full(n, int(Role.RECORD), dtype=np.uint8)
    unknown: Counter = Counter()
    tc = TYPE_CODE
    b_or_e = (phase == PH_B) | (phase == PH_E)
    # bpftrace: userspace begin/end = API calls, kernel begin/end = ioctls, kernel "launch" and
    # the other types = records
    bpf = layout == L_BPFTRACE
    launch_op = f["launch_op"]
    is_user, is_kernel = tcode == tc[T_USERSPACE], tcode == tc[T_KERNEL]
    call_like = bpf & (is_user | (is_kernel & ~launch_op))
    what[call_like & is_user] = What.CALL
    what[call_like & is_kernel] = What.IOCTL
    role[call_like & (phase == PH_B)] = Role.BEGIN
    role[call_like & (phase == PH_E)] = Role.END
    _count(unknown, call_like & ~b_or_e, BPFTRACE, "userspace/kernel lines without phase B or E")
    what[bpf & is_kernel & launch_op] = What.LAUNCH
    known = call_like | (is_kernel & launch_op)
    for ty, w in _BPF_RECORD.items():
        sel = bpf & (tcode == tc[ty])
        what[sel] = w
        known |= sel
    _count_values(unknown, np.flatnonzero(bpf & ~known), odd, BPFTRACE)
    # LD_PRELOAD: begin/end lines of API calls
    pre = layout == L_PRELOAD
    what[pre & b_or_e] = What.CALL
    role[pre & (phase == PH_B)] = Role.BEGIN
    role[pre & (phase == PH_E)] = Role.END
    _count(unknown, pre & ~b_or_e, PRELOAD, "lines without phase B or E")
    # BCC: integer types 1-7
    bcc = layout == L_BCC
    known = np.zeros(n, dtype=bool)
    for ty, (w, rl) in _BCC_TYPES.items():
        sel = bcc & (tcode == tc[ty])
        what[sel] = w
        role[sel] = rl
        known |= sel
    _count_values(unknown, np.flatnonzero(bcc & ~known), odd, BCC)
    # sidecar: entries only
    side = layout == L_SIDECAR
    what[side] = What.ENTRY
    role[side] = Role.NONE
    _count(unknown, side & (phase != PH_ENTRY), SIDECAR, "lines whose phase is not 'entry' (kept as entries)")

    dropped: Counter = Counter()
    no_layout = layout == NO_LAYOUT
    if no_layout.any():
        dropped["JSON lines of no known layout (no op_id, func or type key)"] += int(no_layout.sum())
    no_ts = ~no_layout & ~np.isfinite(ts_raw)
    if no_ts.any():
        dropped["lines without a numeric 'ts'"] += int(no_ts.sum())
    keep = np.flatnonzero(~no_layout & np.isfinite(ts_raw))
    lay = layout[keep]
    unit = np.array([US_PER_TS[x] for x in LAYOUTS], dtype=np.float64)
    abs_us = ts_raw[keep] * unit[lay] if keep.size else np.zeros(0)
    origin = float(abs_us.min()) if abs_us.size else 0.0

    # ---- names: the function of the probe string (bpftrace, sidecar) or the bare name
    raw_name = np.where(has_func, f["func"], f["name"])[keep]
    stripped: dict[str, int] = {}
    to_name = np.array([stripped.setdefault(function_name(v), len(stripped)) for v in strings] + [-1], dtype=np.int32)
    name_id = to_name[raw_name]  # -1 (no name) indexes the trailing -1
    bcc_ioctl = (lay == L_BCC) & (what[keep] == What.IOCTL)
    if bcc_ioctl.any():
        name_id[bcc_ioctl] = stripped.setdefault(BCC_IOCTL_NAME, len(stripped))
    names = list(stripped)

    # ---- threads: lines without a pid share one process; without a tid, one thread per pid
    pid = f["pid"][keep]
    tid = f["tid"][keep]
    tid = np.where(tid >= 0, tid, pid)
    p_vals, p_code = np.unique(pid, return_inverse=True)
    t_vals, t_code = np.unique(tid, return_inverse=True)
    width = p_vals.size + 1
    uniq, thread = np.unique(t_code.astype(np.int64) * width + p_code, return_inverse=True)
    threads = [(_opt(p_vals[u % width]), _opt(t_vals[u // width])) for u in uniq.tolist()]

    # ---- numbers
    retval = np.where(f["retval"] != NO_RETVAL, f["retval"], f["result_code"])[keep]
    cmd = np.where(f["ioctl_cmd"] >= 0, f["ioctl_cmd"], f["cmd"])[keep]
    grid = np.full((n, 3), -1, dtype=np.int64)
    block = np.full((n, 3), -1, dtype=np.int64)
    grid[f["grid_at"]] = f["grid"]
    block[f["grid_at"]] = f["block"]
    dus, dms = f["duration_us"][keep], f["duration_ms"][keep]
    negative = int((np.nan_to_num(dus) < 0).sum() + (np.nan_to_num(dms) < 0).sum())
    return Rows(line=keep.astype(np.int64), layout=lay, what=what[keep], role=role[keep],
                ts=abs_us - origin, origin_us=origin, depth=f["depth"][keep], op_id=op_id[keep],
                duration_us=dus, duration_ms=dms, retval=retval, size=f["size"][keep],
                total_allocated=f["total_allocated"][keep], direction=f["direction"][keep], cmd=cmd,
                grid=grid[keep], block=block[keep], name_id=name_id.astype(np.int32), names=names,
                thread=thread.reshape(-1).astype(np.int64), threads=threads, dropped=dropped,
                unknown_types=unknown, negative=negative)


def _opt(v) -> int | None:
    return None if v < 0 else int(v)


def _count(unknown: Counter, mask: np.ndarray, layout: str, what: str) -> None:
    c = int(mask.sum())
    if c:
        unknown[(layout, what)] += c


def _count_values(unknown: Counter, rows: np.ndarray, odd: dict, layout: str) -> None:
    """Count rows of a layout whose ``type`` has no meaning there, by value."""
    for v, c in Counter(odd.get(r, "(a type of another layout)") for r in rows.tolist()).items():
        unknown[(layout, f"type {v!r}")] += c
