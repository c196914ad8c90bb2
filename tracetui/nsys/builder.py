"""An export's parts (:mod:`.events`, :mod:`.host`) as the decoded columns Kineto's build takes
(:class:`~tracetui.kineto.decode.DecodedTrace`), then the trace: the same
:func:`~tracetui.kineto.build.build_trace` that builds a Kineto trace nests the host events
(NVTX ranges, then the API calls inside them) per thread and hangs every kernel, memcpy and
memset under the call with its correlation key, so the tree, the links and every analysis
have Kineto's definitions.

Process names come from ``PROCESSES``, thread names from ``ThreadNames`` (as Kineto's
``process_name``/``thread_name`` metadata events), GPU properties from ``TARGET_INFO_GPU``
(as Kineto's ``deviceProperties``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.formats import Progress
from ..kineto import schema as ks
from ..kineto.build import build_trace
from ..kineto.columns import DecodedEvents, Interned, join_releasing
from ..kineto.decode import DecodedTrace
from ..kineto.schema import KEY_DEFAULTS, KEY_FIELDS
from ..kineto.trace import KinetoTrace
from . import events, host, schema
from .reader import Export, quote_name
from .sniff import FORMAT_NAME

#: Kineto's names of the metadata events that name processes and threads and order processes
_PROCESS_NAME, _THREAD_NAME, _PROCESS_SORT = "process_name", "thread_name", "process_sort_index"
#: the sort index of a device's synchronisation records on streams without GPU work (host-kind
#: events on the device's pid, as Kineto keeps them): after every process's threads
DEVICE_PROCESS_SORT = 1 << 24


def read_parts(ex: Export, report: Progress) -> tuple[list[events.ExportTable], list[LoadWarning]]:
    """Every event table of the export as a :class:`~.events.ExportTable`, and what could not be read."""
    warnings: list[LoadWarning] = []
    report("reading NVTX ranges", 0.05)
    nvtx, unclosed = host.nvtx(ex)
    if unclosed:
        warnings.append(LoadWarning("nsys_open_range", f"{unclosed:,} NVTX ranges have no end in the export (the "
                                    "capture stopped inside them): kept with no duration", unclosed))
    report("reading CUDA API calls", 0.2)
    calls = host.runtime_calls(ex)
    report("reading kernels", 0.3)
    kernels = events.kernels(ex)
    report("reading memcpys and memsets", 0.4)
    copies, sets = events.memcpys(ex), events.memsets(ex)
    report("reading synchronisations", 0.45)
    syncs = events.syncs(ex, events.context_devices(ex))
    parts = [p for p in (nvtx, calls, kernels, copies, sets, syncs) if p is not None]
    warnings += _not_read(ex) + _shared_streams([p for p in (kernels, copies, sets) if p is not None])
    return parts, warnings


def _shared_streams(gpu: list[events.ExportTable]) -> list[LoadWarning]:
    """Streams (device, stream id) that GPU work of several processes uses: Kineto's model keys
    a stream lane by device and stream only, so their work shares a lane: say so."""
    if not gpu:
        return []
    dev = np.concatenate([p.device for p in gpu]) & 0x7F
    stream = np.concatenate([p.stream for p in gpu]) & 0xFFFFFFFF
    corr = np.concatenate([p.corr for p in gpu])
    proc = np.where(corr >= 0, corr // schema.CORRELATION_KEY_BASE, schema.ID_MASK) & schema.ID_MASK
    used = np.unique((dev << 56) | (stream << 24) | proc)
    lanes, per_lane = np.unique(used >> 24, return_counts=True)
    shared = lanes[per_lane > 1]
    if not shared.size:
        return []
    which = ", ".join(f"GPU {int(k) >> 32} stream {int(k) & 0xFFFFFFFF}" for k in shared[:4].tolist())
    return [LoadWarning("nsys_shared_stream", f"{shared.size:,} streams are used by more than one process "
                        f"({which}{' ...' if shared.size > 4 else ''}): each shows their GPU work on one lane",
                        int(shared.size))]


def _not_read(ex: Export) -> list[LoadWarning]:
    out = []
    if schema.GRAPH_TRACE in ex.tables:
        (n,), = ex.rows(f"SELECT count(*) FROM {quote_name(schema.GRAPH_TRACE)}")
        if n:
            out.append(LoadWarning("nsys_not_read", f"{n:,} CUDA graph executions were traced as whole graphs "
                                   "(nsys --cuda-graph-trace=graph) and are not shown: profile with "
                                   "--cuda-graph-trace=node to see their kernels", int(n)))
    return out


def _names(ex: Export, host_pairs: set[tuple[int, int]]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Process names (``PROCESSES``) and thread names (``ThreadNames``) of the host lanes."""
    pids = {p for p, _ in host_pairs}
    procs: dict[int, str] = {}
    if ex.has(schema.PROCESSES, *schema.OTHER_COLUMNS[schema.PROCESSES]):
        for pid, name in ex.rows(f"SELECT pid, name FROM {quote_name(schema.PROCESSES)}"):
            if isinstance(pid, int) and pid in pids and name is not None:
                procs.setdefault(pid, str(name))
    threads: dict[tuple[int, int], str] = {}
    if ex.has(schema.THREAD_NAMES, *schema.OTHER_COLUMNS[schema.THREAD_NAMES]):
        rows = ex.rows(f"SELECT globalTid, nameId FROM {quote_name(schema.THREAD_NAMES)} WHERE globalTid IS NOT NULL")
        tids = [(int(g) >> schema.ID_BITS & schema.ID_MASK, int(g) & schema.ID_MASK, n) for g, n in rows
                if isinstance(g, int) and isinstance(n, int)]
        tids = [t for t in tids if (t[0], t[1]) in host_pairs]
        text = events.strings(ex, np.array([n for *_, n in tids], dtype=np.int64))
        for p, t, n in tids:
            if n in text:
                threads.setdefault((p, t), text[n])
    return procs, threads


def device_properties(ex: Export) -> list[dict[str, Any]]:
    """``TARGET_INFO_GPU`` as Kineto's ``deviceProperties`` (one entry per device id)."""
    cols = ex.tables.get(schema.GPU_INFO)
    if not cols or "id" not in cols:
        return []
    have = [c for c in schema.GPU_PROPERTIES if c in cols]
    extra = [c for c in (schema.GPU_WARPS_PER_SM, "threadsPerWarp") if c in cols and c not in have]
    out: dict[int, dict[str, Any]] = {}
    for row in ex.rows(f"SELECT {', '.join(quote_name(c) for c in have + extra)} FROM {quote_name(schema.GPU_INFO)}"):
        vals = dict(zip(have + extra, row))
        if not isinstance(vals["id"], int) or vals["id"] in out:
            continue
        entry = {schema.GPU_PROPERTIES[c]: vals[c] for c in have if vals[c] is not None}
        warps, width = vals.get(schema.GPU_WARPS_PER_SM), vals.get("threadsPerWarp")
        if isinstance(warps, int) and isinstance(width, int):
            entry[ks.DEV_MAX_THREADS_PER_SM] = warps * width
        out[vals["id"]] = entry
    return [out[k] for k in sorted(out)]


#: a column whose values span at most this many integers is interned by a table, not a sort
_TABLE_SPAN = 1 << 24


def _interned(values: np.ndarray) -> Interned:
    """Integer ids (pids, tids, devices, streams) as Kineto's interned column."""
    if not values.size:
        return Interned(np.zeros(0, dtype=np.int32), [])
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < _TABLE_SPAN:
        off = values - lo if lo else values
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[off] = True
        code = np.cumsum(seen, dtype=np.int32) - 1
        return Interned(code[off], (np.flatnonzero(seen) + lo).tolist())
    uniq, inv = np.unique(values, return_inverse=True)
    return Interned(inv.reshape(-1).astype(np.int32), [int(v) for v in uniq.tolist()])


def decoded_trace(ex: Export, parts: list[events.ExportTable], warnings: list[LoadWarning]) -> DecodedTrace:
    """The parts (and one metadata event per named process and thread) as Kineto's decoded columns."""
    host_pairs: set[tuple[int, int]] = set()
    for p in parts:
        if p.what in (host.NVTX_RANGES, host.API_CALLS) and p.n:
            pairs = np.unique((p.pid << schema.ID_BITS) | p.tid)  # both are 24-bit ids of a globalTid
            host_pairs.update(zip((pairs >> schema.ID_BITS).tolist(), (pairs & schema.ID_MASK).tolist()))
    procs, threads = _names(ex, host_pairs)
    t0 = min((int(p.start.min()) for p in parts if p.n), default=0)
    devices = sorted({int(d) for p in parts if p.what == events.SYNCS for d in np.unique(p.pid).tolist()})
    meta = _meta_part(procs, threads, {d: DEVICE_PROCESS_SORT + d for d in devices if d not in procs}, t0)
    # last: the build drops metadata rows and their args, and a blob cut at its end is cut in place
    parts = [*parts, meta] if meta.n else parts
    cats: dict[str, int] = {}
    names: dict[str, int] = {}
    cat_codes, name_codes = [], []
    for p in parts:
        cat_codes.append(np.array([cats.setdefault(c, len(cats)) for c in p.cats], dtype=np.int32)[p.cat]
                         if p.n else np.zeros(0, np.int32))
        lut = np.array([names.setdefault(nm, len(names)) for nm in p.names] or [0], dtype=np.int32)
        name_codes.append(lut[p.name] if p.n else np.zeros(0, np.int32))
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts])  # noqa: E731
    start, end = cat("start"), cat("end")
    ph_all = cat("ph")
    ph_vals = sorted(set(ph_all.tolist()))
    ph_lut = np.zeros(256, np.int32)
    ph_lut[ph_vals] = np.arange(len(ph_vals), dtype=np.int32)
    lens = cat("lens")
    offsets = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(lens.shape[0])
    key = {"correlation": cat("corr"), "external_id": cat("ext"), "stream": cat("stream"), "device": cat("device"),
           "seq": cat("seq")}
    # the args an export never has (Record function id, Fwd thread id ...): one value, not a column
    # (the build takes its rows of every key arg, which makes columns of them)
    key_args = {f: key.get(f, np.broadcast_to(np.int64(KEY_DEFAULTS[f]), (n,))) for f in KEY_FIELDS}
    ev = DecodedEvents(
        ph=Interned(ph_lut[ph_all], [chr(c) for c in ph_vals]), cat=Interned(np.concatenate(cat_codes), list(cats)),
        name=Interned(np.concatenate(name_codes), list(names)), pid=_interned(cat("pid")), tid=_interned(cat("tid")),
        ts_int=start // 1000, ts_frac=(start % 1000).astype(np.float64) / 1000.0,
        dur=(end - start).astype(np.float64) / 1000.0, flow_id=[None] * n,
        args_blob=join_releasing([p.args for p in parts]), args_offsets=offsets, key_args=key_args, n_elements=n)
    metadata: dict[str, Any] = {schema.META_NSYS: {k: ex.meta[k] for k in (schema.PRODUCT_VERSION,
                                                                           schema.SCHEMA_VERSION) if k in ex.meta}}
    props = device_properties(ex)
    if props:
        metadata[ks.DEVICE_PROPERTIES] = props
    return DecodedTrace(ev, metadata, warnings, "object")


def _meta_part(procs: dict[int, str], threads: dict[tuple[int, int], str], sort: dict[int, int], ts: int
               ) -> events.ExportTable:
    """Kineto's ``process_name``/``thread_name``/``process_sort_index`` metadata events."""
    rows = [(_PROCESS_NAME, p, 0, {ks.META_NAME: name}) for p, name in sorted(procs.items())]
    rows += [(_THREAD_NAME, p, t, {ks.META_NAME: name}) for (p, t), name in sorted(threads.items())]
    rows += [(_PROCESS_SORT, p, 0, {ks.SORT_INDEX: i}) for p, i in sorted(sort.items())]
    args = [json.dumps(a).encode() for *_, a in rows]
    n = len(rows)
    none = np.full(n, -1, dtype=np.int64)
    kinds = [_PROCESS_NAME, _THREAD_NAME, _PROCESS_SORT]
    return events.ExportTable(
        "metadata", n, [""], np.zeros(n, np.int32), kinds,
        np.array([kinds.index(r[0]) for r in rows], dtype=np.int32), np.full(n, ord("M"), np.uint8),
        np.full(n, ts, np.int64), np.full(n, ts, np.int64), np.array([r[1] for r in rows], dtype=np.int64),
        np.array([r[2] for r in rows], dtype=np.int64), none, none, none, none, none, b"".join(args),
        np.array([len(a) for a in args], dtype=np.int64))


def build(ex: Export, report: Progress) -> KinetoTrace:
    """The trace of an open export."""
    parts, warnings = read_parts(ex, report)
    dec = decoded_trace(ex, parts, warnings)
    del parts
    report("building", 0.5)
    trace = build_trace(ex.path, dec, progress=report)
    trace.source_format = FORMAT_NAME
    return trace
