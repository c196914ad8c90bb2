"""The host side of an export in Kineto's terms: CUDA runtime and driver API calls, and NVTX
ranges and marks, with PyTorch's ``emit_nvtx`` op names parsed into ops with their shapes.

An NVTX range whose text is ``<op>, seq = N, op_id = M, sizes = [[...]]`` (any of the three
parts; ``torch.autograd.profiler.emit_nvtx`` writes them) is a ``cpu_op`` named ``<op>``
with ``Sequence number`` N, ``External id`` M and ``Input Dims`` (the sizes, which are
JSON); any other range is a ``user_annotation`` named by its text; a mark is an instant
(``cpu_instant_event``).  SQLite hands over each block's texts as one byte string; numpy
parses them (:mod:`.nvtx_text`): Python sees one string per distinct name.
"""

from __future__ import annotations

import json

import numpy as np

from ..errors import TraceFormatError
from ..kineto import schema as ks
from ..kineto.kinds import Kind
from . import schema
from .events import (
    PID_OF_TID,
    TID_OF_TID,
    ExportTable,
    corr_key,
    gather,
    json_args,
    make_part,
    names_of,
    strings,
    when,
)
from .nvtx_text import parse_texts
from .reader import Export, Query, fetch_blocks, quote_name

#: what each part is
API_CALLS, NVTX_RANGES = "CUDA API calls", "NVTX ranges"
#: NVTX rows per query (the numpy parse of a block's texts holds a few arrays of its bytes)
NVTX_CHUNK_ROWS = 1 << 17


def runtime_calls(ex: Export) -> ExportTable | None:
    """CUDA runtime and driver calls (``cuda_runtime`` / ``cuda_driver`` by their event class),
    named without the export's version suffix (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``)."""
    if schema.RUNTIME not in ex.tables:
        return None
    cols = ex.tables[schema.RUNTIME]
    pieces = [when("correlationId IS NOT NULL", (schema.FILE_CORRELATION, "%d", "correlationId"))]
    if "returnValue" in cols:  # 0 (success) is not written
        pieces.append(when("returnValue IS NOT NULL AND returnValue <> 0",
                           (schema.RETURN_VALUE, "%lld", "returnValue")))
    q = Query(schema.RUNTIME, {"start": "start", "end": '"end"', "pid": PID_OF_TID, "tid": TID_OF_TID,
                               "corr": corr_key(PID_OF_TID), "name": "nameId",
                               "cls": "eventClass" if "eventClass" in cols else "0"},
              json_args([(ks.CORRELATION, "%lld", corr_key(PID_OF_TID))], *pieces))
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q)), ex.path, API_CALLS)
    if not lens.size:
        return None
    names, name = names_of(got["name"], strings(ex, got["name"]), rename=schema.api_name)
    classes = ex.enum(schema.ENUM_EVENT_CLASS)
    cats = [schema.category_of(Kind.RUNTIME), schema.category_of(Kind.DRIVER)]
    driver = [c for c, (n, _) in classes.items() if n == schema.DRIVER_CLASS]
    cat = np.isin(got["cls"], driver).astype(np.int32)
    return make_part(API_CALLS, got, args, lens, cats, cat, names, name)


def nvtx(ex: Export) -> tuple[ExportTable | None, int]:
    """NVTX ranges (push/pop and start/end, on the thread that opened them) and marks (instants),
    named and parsed by :mod:`.nvtx_text`; and how many ranges have no end (kept with no
    duration)."""
    if schema.NVTX not in ex.tables:
        return None, 0
    cols = ex.tables[schema.NVTX]
    texts = [c for c in ("text",) if c in cols]
    if "textId" in cols:
        texts.append(f"(SELECT s.value FROM {quote_name(schema.STRING_IDS)} AS s WHERE s.id = t.textId)")
    text = f"coalesce({', '.join(texts)}, '')" if texts else "''"
    kinds = ", ".join(str(k) for k in (*schema.NVTX_RANGES, schema.NVTX_MARK))
    q = Query(schema.NVTX, {"start": "start", "dur": 'coalesce("end", start) - start', "g": "globalTid",
                            "flags": 'eventType * 2 + ("end" IS NULL)',
                            "domain": "domainId" if "domainId" in cols else "0",
                            "tlen": f"length(CAST({text} AS BLOB))"},
              None, where=f"eventType IN ({kinds})", text=text)
    domains = _domains(ex)
    dom_ids = np.array(sorted(domains), dtype=np.int64)
    dom_json = [b""] + [(_key_bytes(schema.NVTX_DOMAIN) + json.dumps(domains[d]).encode()) for d in dom_ids.tolist()]
    blocks = []
    names: dict[str, int] = {}
    for _, b in fetch_blocks(ex, q, chunk=NVTX_CHUNK_ROWS):
        c = b.cols
        if int(c["tlen"].sum()) != len(b.text) or int(c["tlen"].min()) < 0:  # pragma: no cover - same values twice
            raise TraceFormatError(ex.path, f"{schema.NVTX}: the texts of {b.n:,} rows do not add up to their lengths")
        is_range = (c["flags"] >> 1) != schema.NVTX_MARK
        pos = np.searchsorted(dom_ids, c["domain"])
        known = (pos < dom_ids.size) & (dom_ids[np.minimum(pos, max(dom_ids.size - 1, 0))] == c["domain"]) \
            if dom_ids.size else np.zeros(b.n, dtype=bool)
        got = parse_texts(b.text, c["tlen"], is_range, dom_json, np.where(known, pos + 1, 0))
        lut = np.array([names.setdefault(v.decode("utf-8", "replace"), len(names)) for v in got.names] or [0],
                       dtype=np.int32)
        cat = np.where(is_range, got.is_op.astype(np.int32), 2)
        blocks.append((c, got.args, got.args_lens, lut[got.name], cat, got.seq, got.op_id, is_range))
    if not blocks:
        return None, 0
    col = lambda i: np.concatenate([bl[i] for bl in blocks])  # noqa: E731
    start, dur, g = (np.concatenate([bl[0][k] for bl in blocks]) for k in ("start", "dur", "g"))
    flags = np.concatenate([bl[0]["flags"] for bl in blocks])
    is_range = col(7)
    unclosed = int(((flags & 1) == 1)[is_range].sum())
    cats = [schema.category_of(Kind.ANNOTATION), schema.category_of(Kind.CPU_OP), schema.category_of(Kind.INSTANT)]
    n = int(start.shape[0])
    none = np.full(n, -1, dtype=np.int64)
    return ExportTable(NVTX_RANGES, n, cats, col(4), list(names), col(3),
                        np.where(is_range, ord("X"), ord("i")).astype(np.uint8), start, start + dur,
                        (g >> schema.ID_BITS) & schema.ID_MASK, g & schema.ID_MASK, none, none, none, col(5), col(6),
                        b"".join(bl[1] for bl in blocks), col(2)), unclosed


def _key_bytes(name: str) -> bytes:
    return b"," + json.dumps(name).encode() + b":"


def _domains(ex: Export) -> dict[int, str]:
    """NVTX domain id -> name (the domain-create events' text)."""
    cols = ex.tables[schema.NVTX]
    if "domainId" not in cols or "text" not in cols:
        return {}
    rows = ex.rows(f"SELECT domainId, text FROM {quote_name(schema.NVTX)} WHERE eventType = ? AND domainId IS NOT NULL "
                   "AND text IS NOT NULL", (schema.NVTX_DOMAIN_CREATE,))
    return {int(d): str(t) for d, t in rows if isinstance(d, int)}


__all__ = ["nvtx", "runtime_calls", "strings"]
