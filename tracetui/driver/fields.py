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

#: "missing" value of every numeric field (see ``schema.Line``)
_MISSING: dict[str, float | int] = {
    "ts": np.nan, "duration_us": np.nan, "duration_ms": np.nan,
    "op_id": -1, "pid": -1, "tid": -1, "depth": -1, "retval": NO_RETVAL, "result_code": NO_RETVAL,
    "size": -1, "total_allocated": -1, "cmd": -1, "ioctl_cmd": -1,
}
#: fields read for every line (the rest only for the lines whose kind can carry them)
_EVERY_LINE = ("ts", "pid", "tid")
_CODED = ("type", "phase", "launch_op", "direction", "name", "func")


class FieldColumns:
    """Accumulates columns chunk by chunk; :meth:`finish` returns them."""

    def __init__(self) -> None:
        self._parts: dict[str, list[np.ndarray]] = {k: [] for k in (*_MISSING, *_CODED, "grid_at")}
        self._grids: list[list] = []
        self._blocks: list[list] = []
        self.strings: dict[str, int] = {"": -1}
        #: row -> ``type`` value, for the rows whose type has no known meaning (named in warnings)
        self.odd_types: dict[int, object] = {}
        self._n = 0

    def add(self, rows: list[Line]) -> None:
        """Read the fields of one chunk of lines.  A field is read only for the lines whose
        kind can carry it (``duration_us`` on end lines, ``size`` on records ...); the others
        hold its missing value, as a line without the field would."""
        n = len(rows)
        p = self._parts
        for k in _EVERY_LINE:
            p[k].append(_column(rows, k))
        types = list(map(attrgetter("type"), rows))
        code = np.fromiter(map(TYPE_CODE.get, types, repeat(T_UNKNOWN)), np.int16, n)
        for k in np.flatnonzero(code == T_UNKNOWN).tolist():
            self.odd_types[self._n + k] = types[k]
        p["type"].append(code)
        phase = np.fromiter(map(PHASE_CODE.get, map(attrgetter("phase"), rows), repeat(PH_OTHER)), np.int8, n)
        p["phase"].append(phase)
        p["name"].append(self._strings(list(map(attrgetter("name"), rows))))
        # BCC's integer types 1/6 (enter) and 2/7 (exit) are begin and end lines too
        is_end = (phase == PH_E) | (code == TYPE_CODE[BCC_CALL_EXIT]) | (code == TYPE_CODE[BCC_IOCTL_EXIT])
        is_begin = (phase == PH_B) | (code == TYPE_CODE[BCC_CALL_ENTER]) | (code == TYPE_CODE[BCC_IOCTL_ENTER])
        record = ~is_end & ~is_begin
        # LD_PRELOAD lines have no type, the sidecar's are cuda_api / cuda_runtime: only those
        # can carry op_id and func
        untyped = np.isin(code, [T_NONE, T_UNKNOWN, TYPE_CODE[T_CUDA_API], TYPE_CODE[T_CUDA_RUNTIME]])
        kernel = code == TYPE_CODE[T_KERNEL]
        groups = ((is_end | is_begin, ("depth",)), (is_end, ("duration_us", "retval", "result_code")),
                  (is_begin, ("ioctl_cmd",)), (record, ("duration_ms", "size", "total_allocated", "cmd")),
                  (untyped, ("op_id",)))
        for sel, fields in groups:
            idx = np.flatnonzero(sel)
            sub = rows if idx.size == n else list(map(rows.__getitem__, idx.tolist()))
            for k in fields:
                col = np.full(n, _MISSING[k], dtype=np.float64 if k.startswith("duration") else np.int64)
                if idx.size:
                    col[idx] = _column(sub, k)
                p[k].append(col)
        func = np.full(n, -1, dtype=np.int32)
        idx = np.flatnonzero(untyped)
        if idx.size:
            func[idx] = self._strings(list(map(attrgetter("func"), map(rows.__getitem__, idx.tolist()))))
        p["func"].append(func)
        launch_op = np.zeros(n, dtype=bool)
        direction = np.zeros(n, dtype=np.uint8)
        idx = np.flatnonzero(kernel)
        if idx.size:
            ops = map(attrgetter("op"), map(rows.__getitem__, idx.tolist()))
            launch_op[idx] = np.fromiter(map(OP_LAUNCH.__eq__, ops), bool, idx.size)
        idx = np.flatnonzero(record)
        if idx.size:
            dirs = map(attrgetter("direction"), map(rows.__getitem__, idx.tolist()))
            direction[idx] = np.fromiter(map(DIRECTION_CODE.get, dirs, repeat(0)), np.uint8, idx.size)
        p["launch_op"].append(launch_op)
        p["direction"].append(direction)
        # grid and block: on kernel launch records (bpftrace's, and BCC's should they carry them)
        at = np.flatnonzero((kernel & launch_op) | (code == TYPE_CODE[BCC_LAUNCH]))
        p["grid_at"].append(at + self._n)
        self._grids += [rows[i].grid for i in at.tolist()]
        self._blocks += [rows[i].block for i in at.tolist()]
        self._n += n

    def _strings(self, vals: list[str]) -> np.ndarray:
        """Codes of strings in the file's one table of distinct strings (-1 for "")."""
        for v in dict.fromkeys(vals):
            self.strings.setdefault(v, len(self.strings) - 1)
        return np.fromiter(map(self.strings.__getitem__, vals), np.int32, len(vals))

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


def merge_fields(parts: list[dict]) -> dict:
    """The columns of consecutive slices of lines (:meth:`FieldColumns.finish` of each) as
    one: string codes renumbered into one table, row positions shifted."""
    if len(parts) == 1:
        return parts[0]
    strings: dict[str, int] = {}
    out: dict = {"odd_types": {}}
    names, funcs, grid_at = [], [], []
    offset = 0
    for part in parts:
        to = np.array([strings.setdefault(v, len(strings)) for v in part["strings"]] + [-1], dtype=np.int32)
        names.append(to[part["name"]])  # -1 ("" or none) indexes the trailing -1
        funcs.append(to[part["func"]])
        grid_at.append(part["grid_at"] + offset)
        out["odd_types"].update({k + offset: v for k, v in part["odd_types"].items()})
        offset += int(part["ts"].size)
    for k in parts[0]:
        if k not in ("strings", "odd_types", "name", "func", "grid_at"):
            out[k] = np.concatenate([p[k] for p in parts])
    out.update(name=np.concatenate(names), func=np.concatenate(funcs), grid_at=np.concatenate(grid_at),
               strings=list(strings))
    return out


def _column(rows: list[Line], name: str) -> np.ndarray:
    """Field ``name`` of every row as a float64 (``ts``, durations) or int64 column; an integer
    beyond 64 bits becomes the field's missing value."""
    get = attrgetter(name)
    if isinstance(_MISSING[name], float):
        return np.fromiter(map(get, rows), np.float64, len(rows))
    try:
        return np.fromiter(map(get, rows), np.int64, len(rows))
    except OverflowError:
        missing = _MISSING[name]
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
