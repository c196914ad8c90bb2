"""Decoded :class:`~tracetui.driver.schema.Line` structs -> one column per field.

Every field is read by a C-level ``map`` into ``np.fromiter`` (the struct's defaults make
every field a number or a string, see ``schema.Line``); strings become codes: ``type``,
``phase`` and ``direction`` into the small tables below, function names and probe strings
into one table of the file's distinct strings.  Values that do not fit (an integer beyond
64 bits) become the field's "missing" value.
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter

import numpy as np

from .schema import (
    BCC_ALLOC,
    BCC_CALL_ENTER,
    BCC_CALL_EXIT,
    BCC_COPY,
    BCC_IOCTL_ENTER,
    BCC_IOCTL_EXIT,
    BCC_LAUNCH,
    BEGIN,
    DIRECTION_CODES,
    END,
    ENTRY,
    NO_RETVAL,
    OP_LAUNCH,
    T_CUDA_API,
    T_CUDA_RUNTIME,
    T_KERNEL,
    T_KERNEL_MEMORY,
    T_MEMORY,
    T_SCHEDULER,
    T_SYSCALL,
    T_TRANSFER,
    T_USERSPACE,
    Line,
)

#: ``type`` codes: 0 none, 1 a value of no known meaning, then every documented value
T_NONE, T_UNKNOWN = 0, 1
TYPE_CODE: dict[object, int] = {"": T_NONE}
for _v in (T_USERSPACE, T_KERNEL, T_MEMORY, T_TRANSFER, T_KERNEL_MEMORY, T_SCHEDULER, T_SYSCALL, T_CUDA_API,
           T_CUDA_RUNTIME, BCC_CALL_ENTER, BCC_CALL_EXIT, BCC_LAUNCH, BCC_ALLOC, BCC_COPY, BCC_IOCTL_ENTER,
           BCC_IOCTL_EXIT):
    TYPE_CODE[_v] = len(TYPE_CODE) + 1
#: ``phase`` codes
PH_NONE, PH_B, PH_E, PH_ENTRY, PH_OTHER = 0, 1, 2, 3, 4
PHASE_CODE = {"": PH_NONE, BEGIN: PH_B, END: PH_E, ENTRY: PH_ENTRY}
#: ``direction`` codes (0 none): the names and the integers BCC uses
DIRECTION_CODE: dict[object, int] = {name: k for k, name in DIRECTION_CODES.items()}
DIRECTION_CODE.update({k: k for k in DIRECTION_CODES})

#: fields read for every line
_FLOATS = ("ts",)
_INTS = {"op_id": -1, "pid": -1, "tid": -1, "depth": -1}
#: fields read only for the lines that can carry them: end lines, and lines that are not
#: begin or end lines (records); elsewhere they hold their "missing" value
_END_FLOATS = ("duration_us",)
_END_INTS = {"retval": NO_RETVAL, "result_code": NO_RETVAL}
_OTHER_FLOATS = ("duration_ms",)
_OTHER_INTS = {"size": -1, "total_allocated": -1, "cmd": -1}
_BEGIN_INTS = {"ioctl_cmd": -1}
_ALL_FLOATS = _FLOATS + _END_FLOATS + _OTHER_FLOATS
_ALL_INTS = {**_INTS, **_END_INTS, **_OTHER_INTS, **_BEGIN_INTS}


class FieldColumns:
    """Accumulates columns chunk by chunk; :meth:`finish` returns them."""

    def __init__(self) -> None:
        self._parts: dict[str, list[np.ndarray]] = {k: [] for k in (*_ALL_FLOATS, *_ALL_INTS, "type", "phase",
                                                                    "launch_op", "direction", "name", "func",
                                                                    "grid_at")}
        self._grids: list[list] = []
        self._blocks: list[list] = []
        self.strings: dict[str, int] = {"": -1}
        #: row -> ``type`` value, for the rows whose type has no known meaning (named in warnings)
        self.odd_types: dict[int, object] = {}
        self._n = 0

    def add(self, rows: list[Line]) -> None:
        n = len(rows)
        p = self._parts
        for k in _FLOATS:
            p[k].append(np.fromiter(map(attrgetter(k), rows), np.float64, n))
        for k, missing in _INTS.items():
            p[k].append(_int_column(rows, k, missing))
        types = list(map(attrgetter("type"), rows))
        code = np.fromiter(map(TYPE_CODE.get, types, repeat(T_UNKNOWN)), np.int16, n)
        for k in np.flatnonzero(code == T_UNKNOWN).tolist():
            self.odd_types[self._n + k] = types[k]
        p["type"].append(code)
        phase = np.fromiter(map(PHASE_CODE.get, map(attrgetter("phase"), rows), repeat(PH_OTHER)), np.int8, n)
        p["phase"].append(phase)
        # BCC's integer types 2 (call exit) and 7 (ioctl exit) are end lines too
        is_end = (phase == PH_E) | (code == TYPE_CODE[BCC_CALL_EXIT]) | (code == TYPE_CODE[BCC_IOCTL_EXIT])
        is_begin = (phase == PH_B) | (code == TYPE_CODE[BCC_CALL_ENTER]) | (code == TYPE_CODE[BCC_IOCTL_ENTER])
        for sel, floats, ints in ((is_end, _END_FLOATS, _END_INTS), (~is_end & ~is_begin, _OTHER_FLOATS, _OTHER_INTS),
                                  (is_begin, (), _BEGIN_INTS)):
            idx = np.flatnonzero(sel)
            sub = list(map(rows.__getitem__, idx.tolist())) if idx.size < n else rows
            for k in floats:
                col = np.full(n, np.nan)
                col[idx] = np.fromiter(map(attrgetter(k), sub), np.float64, idx.size)
                p[k].append(col)
            for k, missing in ints.items():
                col = np.full(n, missing, dtype=np.int64)
                col[idx] = _int_column(sub, k, missing)
                p[k].append(col)
        p["launch_op"].append(np.fromiter(map(OP_LAUNCH.__eq__, map(attrgetter("op"), rows)), bool, n))
        p["direction"].append(np.fromiter(map(DIRECTION_CODE.get, map(attrgetter("direction"), rows), repeat(0)),
                                          np.uint8, n))
        for k in ("name", "func"):
            vals = list(map(attrgetter(k), rows))
            for v in dict.fromkeys(vals):
                self.strings.setdefault(v, len(self.strings) - 1)
            p[k].append(np.fromiter(map(self.strings.__getitem__, vals), np.int32, n))
        grids = list(map(attrgetter("grid"), rows))
        blocks = list(map(attrgetter("block"), rows))
        at = [k for k, (g, b) in enumerate(zip(grids, blocks)) if g is not None or b is not None]
        p["grid_at"].append(np.asarray(at, dtype=np.int64) + self._n)
        self._grids += [grids[k] for k in at]
        self._blocks += [blocks[k] for k in at]
        self._n += n

    def finish(self) -> dict[str, np.ndarray | list]:
        out: dict[str, np.ndarray | list] = {}
        for k, parts in self._parts.items():
            out[k] = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        n_at = len(self._grids)
        out["grid"] = _xyz_column(self._grids) if n_at else np.zeros((0, 3), np.int64)
        out["block"] = _xyz_column(self._blocks) if n_at else np.zeros((0, 3), np.int64)
        strings = [""] * (len(self.strings) - 1)
        for s, k in self.strings.items():
            if k >= 0:
                strings[k] = s
        out["strings"] = strings
        out["odd_types"] = self.odd_types  # type: ignore[assignment]
        return out


def _int_column(rows: list[Line], name: str, missing: int) -> np.ndarray:
    get = attrgetter(name)
    try:
        return np.fromiter(map(get, rows), np.int64, len(rows))
    except OverflowError:  # an integer beyond 64 bits: that value is missing
        return np.fromiter((v if -2**63 <= v < 2**63 else missing for v in map(get, rows)), np.int64, len(rows))


def _xyz_column(values: list) -> np.ndarray:
    """(n, 3) int64 of grid or block lists: one numpy conversion when every value is three
    integers, else value by value (missing dimensions are 1, anything else -1)."""
    try:
        arr = np.array(values, dtype=np.int64)
        if arr.shape == (len(values), 3):
            return arr
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.full((len(values), 3), -1, dtype=np.int64)
    for i, v in enumerate(values):
        if isinstance(v, list):
            vals = [x if isinstance(x, int) and -2**63 <= x < 2**63 else -1 for x in v[:3]]
            out[i] = vals + [1] * (3 - len(vals))
    return out
