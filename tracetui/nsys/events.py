"""The event tables of an export as columns in Kineto's terms, one :class:`ExportTable` per kind:
kernels, memcpys, memsets, CUPTI synchronisation records, CUDA runtime/driver calls and NVTX
ranges and marks (docs/formats.md says what each field becomes).

Every per-row value is computed by SQLite (:mod:`.reader`): the integer columns, the
per-process correlation key, Kineto's name of a copy or a memset (per distinct kind), the
parse of PyTorch's ``emit_nvtx`` range names, and each event's args as JSON text with
Kineto's arg names.  Python sees one string per column and block, and one per distinct
name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..kineto import schema as ks
from ..kineto.kinds import Kind
from . import schema
from .reader import Block, Export, Query, fetch_blocks, quote_name, split_args

PID_OF_TID = f"((globalTid >> {schema.ID_BITS}) & {schema.ID_MASK})"
TID_OF_TID = f"(globalTid & {schema.ID_MASK})"
PID_OF_PID = f"((globalPid >> {schema.ID_BITS}) & {schema.ID_MASK})"
#: a stream id CUPTI leaves unknown reads -1 (as in Kineto)
_STREAM = f"CASE WHEN streamId >= {schema.UNKNOWN_ID} OR streamId < 0 THEN -1 ELSE streamId END"


#: what each part is (its warnings and errors say so)
KERNELS, MEMCPYS, MEMSETS, SYNCS = "kernels", "memcpys", "memsets", "synchronisations"


def corr_key(pid_sql: str, corr: str = "correlationId") -> str:
    """SQL of the per-process linking key of a correlation id (-1 when there is none)."""
    return f"CASE WHEN {corr} IS NULL THEN -1 ELSE {pid_sql} * {schema.CORRELATION_KEY_BASE} + {corr} END"


@dataclass
class ExportTable:
    """Rows of one kind of event, in Kineto's terms (times in ns of the session clock)."""

    what: str
    n: int
    cats: list[str]
    cat: np.ndarray  #: int32 into cats
    names: list[str]
    name: np.ndarray  #: int32 into names
    ph: np.ndarray  #: uint8 ord(ph)
    start: np.ndarray
    end: np.ndarray
    pid: np.ndarray  #: the lane's pid: the OS process (host) or the device (GPU)
    tid: np.ndarray  #: the OS thread (host) or the stream (GPU)
    corr: np.ndarray  #: the linking key (:func:`corr_key`), -1 none
    device: np.ndarray
    stream: np.ndarray
    seq: np.ndarray
    ext: np.ndarray
    args: bytes
    lens: np.ndarray


# ------------------------------------------------------------------------- JSON args in SQL
def sql_text(text: str) -> str:
    """An SQL string literal of text of this module (never of the file)."""
    return "'" + text.replace("'", "''") + "'"


def _fmt_key(key: str) -> str:
    return json.dumps(key).replace("%", "%%")


def fields(*items: tuple[str, str, str]) -> str:
    """One ``printf`` writing ``,"key":value`` for each (key, conversion, SQL) item."""
    fmt = "".join(f",{_fmt_key(k)}:{conv}" for k, conv, _ in items)
    return f"printf({sql_text(fmt)}, {', '.join(e for _, _, e in items)})"


def when(cond: str, *items: tuple[str, str, str]) -> str:
    """:func:`fields` only where ``cond`` holds (else the empty string)."""
    return f"CASE WHEN {cond} THEN {fields(*items)} ELSE '' END"


def json_args(fixed: list[tuple[str, str, str]], *optional: str) -> str:
    """A row's args as one ``printf``: the (key, conversion, SQL) items every row has, then the
    ``optional`` pieces (each ``,"key":value`` or empty: :func:`when`).  One call per row:
    concatenating pieces with ``||`` copies the string at each step (30 % slower)."""
    if not fixed:  # pragma: no cover - every table has one
        raise ValueError("args need a first field")
    fmt = "{" + ",".join(f"{_fmt_key(k)}:{conv}" for k, conv, _ in fixed) + "%s" * len(optional) + "}"
    return f"printf({sql_text(fmt)}, {', '.join([e for _, _, e in fixed] + list(optional))})"


def _bandwidth(bytes_sql: str = "bytes") -> str:
    """``memory bandwidth (GB/s)`` (bytes per ns), only for a copy or memset that took time."""
    return when("\"end\" > start", (ks.MEMORY_BANDWIDTH, "%.15g", f"1.0 * {bytes_sql} / (\"end\" - start)"))


def _device_fields(device_sql: str = "deviceId") -> tuple[tuple[str, str, str], ...]:
    return ((ks.DEVICE, "%d", device_sql), (ks.CONTEXT, "%d", "contextId"), (ks.STREAM, "%d", _STREAM),
            (ks.CORRELATION, "%lld", corr_key(PID_OF_PID)))


def _file_corr() -> str:
    return when("correlationId IS NOT NULL", (schema.FILE_CORRELATION, "%d", "correlationId"))


# ------------------------------------------------------------------------------- gathering
def gather(blocks: list[tuple[tuple, Block]], path: str, what: str) -> tuple[dict[str, np.ndarray], bytes, np.ndarray,
                                                                            list[tuple], np.ndarray]:
    """Concatenate blocks: (columns, args, args lengths, the distinct group keys, each row's
    key index)."""
    keys: dict[tuple, int] = {}
    key_idx = []
    for key, b in blocks:
        key_idx.append(np.full(b.n, keys.setdefault(key, len(keys)), dtype=np.int32))
    if not blocks:
        return {}, b"", np.zeros(0, np.int64), [], np.zeros(0, np.int32)
    names = list(blocks[0][1].cols)
    cols = {c: np.concatenate([b.cols[c] for _, b in blocks]) for c in names}
    n = sum(b.n for _, b in blocks)
    args, lens = split_args(b"".join(b.args for _, b in blocks), n, path, what)
    return cols, args, lens, list(keys), np.concatenate(key_idx)


def make_part(what: str, cols: dict[str, np.ndarray], args: bytes, lens: np.ndarray, cats: list[str], cat: np.ndarray,
          names: list[str], name: np.ndarray, ph: str = "X", **extra_cols: np.ndarray) -> ExportTable:
    n = int(lens.shape[0])
    none = np.full(n, -1, dtype=np.int64)
    get = {k: extra_cols.get(k, cols.get(k, none)) for k in ("pid", "tid", "corr", "device", "stream", "seq", "ext")}
    ph_col = cols.get("ph")
    return ExportTable(what, n, cats, cat.astype(np.int32), names, name.astype(np.int32),
                ph_col.astype(np.uint8) if ph_col is not None else np.full(n, ord(ph), np.uint8),
                cols["start"], cols["end"], args=args, lens=lens, **get)


def strings(ex: Export, ids: np.ndarray) -> dict[int, str]:
    """StringIds values of ``ids`` (a few thousand names, never one per event)."""
    want = np.unique(ids[ids >= 0]).tolist()
    out: dict[int, str] = {}
    for s in range(0, len(want), 900):
        part = want[s:s + 900]
        marks = ",".join("?" * len(part))
        out.update((int(i), str(v)) for i, v in
                   ex.rows(f"SELECT id, value FROM {quote_name(schema.STRING_IDS)} WHERE id IN ({marks})", part))
    return out


def names_of(ids: np.ndarray, table: dict[int, str], rename=None, missing: str = "<unnamed>"
              ) -> tuple[list[str], np.ndarray]:
    """Interned names of StringIds ``ids`` (``rename`` applied per distinct id; equal names merged)."""
    uniq, inv = np.unique(ids, return_inverse=True)
    codes: dict[str, int] = {}
    lut = np.empty(uniq.shape[0], dtype=np.int32)
    for i, sid in enumerate(uniq.tolist()):
        text = table.get(sid, f"{missing} (string id {sid})")
        lut[i] = codes.setdefault(rename(text) if rename else text, len(codes))
    return list(codes), lut[inv.reshape(-1)] if uniq.size else np.zeros(0, np.int32)


# ---------------------------------------------------------------------------------- kernels
def kernels(ex: Export) -> ExportTable | None:
    if schema.KERNEL not in ex.tables:
        return None
    cols = ex.tables[schema.KERNEL]
    items = [*_device_fields(),
             (ks.REGISTERS_PER_THREAD, "%d", "registersPerThread"),
             (ks.SHARED_MEMORY, "%d", "staticSharedMemory + dynamicSharedMemory"),
             (schema.STATIC_SHARED_MEMORY, "%d", "staticSharedMemory"),
             (schema.DYNAMIC_SHARED_MEMORY, "%d", "dynamicSharedMemory")]
    if "localMemoryPerThread" in cols:
        items.append((schema.LOCAL_MEMORY_PER_THREAD, "%d", "localMemoryPerThread"))
    items += [(ks.GRID, "[%d,%d,%d]", "gridX, gridY, gridZ"), (ks.BLOCK, "[%d,%d,%d]", "blockX, blockY, blockZ")]
    pieces = [_file_corr()]
    if "graphId" in cols:
        pieces.append(when("graphId IS NOT NULL", (schema.GRAPH_ID, "%d", "graphId")))
    if "graphNodeId" in cols:
        pieces.append(when("graphNodeId IS NOT NULL", (schema.GRAPH_NODE_ID, "%d", "graphNodeId")))
    q = Query(schema.KERNEL, {"start": "start", "end": '"end"', "device": "deviceId", "stream": _STREAM,
                              "corr": corr_key(PID_OF_PID), "name": "demangledName"}, json_args(items, *pieces))
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q)), ex.path, KERNELS)
    if not lens.size:
        return None
    names, name = names_of(got["name"], strings(ex, got["name"]))
    return make_part(KERNELS, got, args, lens, [schema.category_of(Kind.KERNEL)], np.zeros(lens.size), names, name,
                 pid=got["device"], tid=got["stream"])


# ----------------------------------------------------------------------- memcpys, memsets
def _kind_label(kinds: dict[int, tuple[str, str]], k: int) -> str:
    return kinds.get(k, ("", "Unknown"))[1] if k != 255 else "Unknown"


def memcpys(ex: Export) -> ExportTable | None:
    if schema.MEMCPY not in ex.tables:
        return None
    cols = ex.tables[schema.MEMCPY]
    src = "coalesce(srcKind, 255)" if "srcKind" in cols else "255"
    dst = "coalesce(dstKind, 255)" if "dstKind" in cols else "255"
    combo = f"((copyKind & 255) << 16) | (({src} & 255) << 8) | ({dst} & 255)"
    args = json_args([*_device_fields(), (ks.BYTES, "%lld", "bytes")], _file_corr(), _bandwidth())
    q = Query(schema.MEMCPY, {"start": "start", "end": '"end"', "device": "deviceId", "stream": _STREAM,
                              "corr": corr_key(PID_OF_PID), "combo": combo, "bytes": "bytes"}, args)
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q)), ex.path, MEMCPYS)
    if not lens.size:
        return None
    opers, mems = ex.enum(schema.ENUM_MEMCPY_OPER), ex.enum(schema.ENUM_MEM_KIND)
    uniq, inv = np.unique(got["combo"], return_inverse=True)
    names: dict[str, int] = {}
    lut = np.empty(uniq.size, np.int32)
    for i, c in enumerate(uniq.tolist()):
        name, label = opers.get(c >> 16, ("", f"kind {c >> 16}"))
        word = schema.memcpy_word(name, label)
        text = schema.memcpy_name(word, _kind_label(mems, (c >> 8) & 255), _kind_label(mems, c & 255))
        lut[i] = names.setdefault(text, len(names))
    return make_part(MEMCPYS, got, args, lens, [schema.category_of(Kind.MEMCPY)], np.zeros(lens.size), list(names),
                 lut[inv.reshape(-1)], pid=got["device"], tid=got["stream"])


def memsets(ex: Export) -> ExportTable | None:
    if schema.MEMSET not in ex.tables:
        return None
    cols = ex.tables[schema.MEMSET]
    kind = "coalesce(memKind, 255)" if "memKind" in cols else "255"
    items = [*_device_fields(), (ks.BYTES, "%lld", "bytes")]
    if "value" in cols:
        items.append((schema.MEMSET_VALUE, "%lld", "value"))
    q = Query(schema.MEMSET, {"start": "start", "end": '"end"', "device": "deviceId", "stream": _STREAM,
                              "corr": corr_key(PID_OF_PID), "kind": kind}, json_args(items, _file_corr(), _bandwidth()))
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q)), ex.path, MEMSETS)
    if not lens.size:
        return None
    mems = ex.enum(schema.ENUM_MEM_KIND)
    uniq, inv = np.unique(got["kind"], return_inverse=True)
    names: dict[str, int] = {}
    lut = np.array([names.setdefault(schema.memset_name(_kind_label(mems, k)), len(names)) for k in uniq.tolist()],
                   dtype=np.int32)
    return make_part(MEMSETS, got, args, lens, [schema.category_of(Kind.MEMSET)], np.zeros(lens.size), list(names),
                 lut[inv.reshape(-1)], pid=got["device"], tid=got["stream"])


# ------------------------------------------------------------------------------------ syncs
def context_devices(ex: Export) -> dict[tuple[int, int], int]:
    """(process, context) -> device: CUPTI's synchronisation records carry no device (the
    export's ``deviceId`` there is not the context's), so a record's device is that of its
    context, from ``TARGET_INFO_CUDA_CONTEXT_INFO`` or else the GPU work of the context."""
    out: dict[tuple[int, int], int] = {}
    for table in (schema.KERNEL, schema.MEMCPY, schema.MEMSET):
        if ex.has(table, "globalPid", "contextId", "deviceId"):
            for gp, ctx, dev in ex.rows(f"SELECT DISTINCT {PID_OF_PID}, contextId, deviceId FROM {quote_name(table)}"):
                if isinstance(gp, int) and isinstance(ctx, int) and isinstance(dev, int):
                    out.setdefault((gp, ctx), dev)
    if ex.has(schema.CONTEXT_INFO, *schema.OTHER_COLUMNS[schema.CONTEXT_INFO]):
        for pid, dev, ctx in ex.rows(f"SELECT processId, deviceId, contextId FROM {quote_name(schema.CONTEXT_INFO)}"):
            if isinstance(pid, int) and isinstance(ctx, int) and isinstance(dev, int):
                out[(pid, ctx)] = dev
    return out


#: at most this many (process, context) pairs are mapped to their device in SQL
_MAX_CONTEXTS = 400


def syncs(ex: Export, ctx_dev: dict[tuple[int, int], int]) -> ExportTable | None:
    if schema.SYNC not in ex.tables:
        return None
    pairs = list(ctx_dev.items())[:_MAX_CONTEXTS]
    device = ("CASE " + " ".join(f"WHEN {PID_OF_PID} = ? AND contextId = ? THEN ?" for _ in pairs)
              + " ELSE deviceId END") if pairs else "deviceId"
    dev_params = tuple(v for (p, c), d in pairs for v in (p, c, d))
    join, wait_stream, wait_corr = "", "-1", "-1"
    if ex.has(schema.CUDA_EVENT, *schema.OTHER_COLUMNS[schema.CUDA_EVENT]) and "eventSyncId" in ex.tables[schema.SYNC]:
        ev = quote_name(schema.CUDA_EVENT)
        join = (f"LEFT JOIN (SELECT globalPid AS x_pid, eventSyncId AS x_sync, min(streamId) AS x_stream, "
                f"min(correlationId) AS x_corr FROM {ev} WHERE eventSyncId IS NOT NULL GROUP BY 1, 2) AS x "
                "ON x.x_pid = t.globalPid AND x.x_sync = t.eventSyncId")
        wait_stream = "coalesce(x_stream, -1)"
        wait_corr = f"CASE WHEN x_corr IS NULL THEN -1 ELSE {corr_key(PID_OF_PID, 'x_corr')} END"
    items = [(ks.DEVICE, "%d", device), (ks.CONTEXT, "%d", "contextId"), (ks.STREAM, "%d", _STREAM),
             (ks.CORRELATION, "%lld", corr_key(PID_OF_PID)), (ks.WAIT_ON_STREAM, "%d", wait_stream),
             (ks.WAIT_ON_EVENT_RECORD_CORR, "%lld", wait_corr)]
    pieces = [_file_corr()]
    if "eventId" in ex.tables[schema.SYNC]:
        pieces.append(when("eventId IS NOT NULL", (schema.SYNC_EVENT_ID, "%d", "eventId")))
    # parameters in SQL order: the columns (device first), then the args (device again)
    q = Query(schema.SYNC, {"device": device, "start": "start", "end": '"end"', "stream": _STREAM,
                            "corr": corr_key(PID_OF_PID), "type": "syncType"}, json_args(items, *pieces), join=join,
              params=dev_params + dev_params)
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q, chunk=1 << 62)), ex.path, SYNCS)
    if not lens.size:
        return None
    types = ex.enum(schema.ENUM_SYNC_TYPE)
    uniq, inv = np.unique(got["type"], return_inverse=True)
    names: dict[str, int] = {}
    lut = np.array([names.setdefault(schema.sync_name(*types.get(k, ("", f"sync type {k}"))), len(names))
                    for k in uniq.tolist()], dtype=np.int32)
    return make_part(SYNCS, got, args, lens, [schema.category_of(Kind.SYNC)], np.zeros(lens.size),
                 list(names), lut[inv.reshape(-1)], pid=got["device"], tid=got["stream"])
