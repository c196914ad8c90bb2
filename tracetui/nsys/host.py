"""The host side of an export in Kineto's terms: CUDA runtime and driver API calls, and NVTX
ranges and marks, with PyTorch's ``emit_nvtx`` op names parsed into ops with their shapes.

An NVTX range whose text is ``<op>, seq = N, op_id = M, sizes = [[...]]`` (any of the three
parts; ``torch.autograd.profiler.emit_nvtx`` writes them) is a ``cpu_op`` named ``<op>``
with ``Sequence number`` N, ``External id`` M and ``Input Dims`` (the sizes, which are
JSON); any other range is a ``user_annotation`` named by its text; a mark is an instant.
The parse runs in SQLite, once per row (:data:`NVTX_INNER`), and the ranges come grouped by
(category, name): Python sees one string per distinct name.
"""

from __future__ import annotations

import json

import numpy as np

from ..kineto import schema as ks
from ..kineto.kinds import Kind
from . import schema
from .events import (
    PID_OF_TID,
    TID_OF_TID,
    EventColumns,
    corr_key,
    fields,
    gather,
    make_part,
    names_of,
    obj,
    sql_text,
    strings,
    when,
)
from .reader import ROWS, Export, Query, fetch_blocks, quote_name

#: what each part is
API_CALLS, NVTX_RANGES = "CUDA API calls", "NVTX ranges"


def runtime_calls(ex: Export) -> EventColumns | None:
    """CUDA runtime and driver calls (``cuda_runtime`` / ``cuda_driver`` by their event class),
    named without the export's version suffix (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``)."""
    if schema.RUNTIME not in ex.tables:
        return None
    cols = ex.tables[schema.RUNTIME]
    pieces = [fields((ks.CORRELATION, "%lld", corr_key(PID_OF_TID))),
              when("correlationId IS NOT NULL", (schema.FILE_CORRELATION, "%d", "correlationId"))]
    if "returnValue" in cols:
        pieces.append(when("returnValue IS NOT NULL", (schema.RETURN_VALUE, "%lld", "returnValue")))
    q = Query(schema.RUNTIME, {"start": "start", "end": '"end"', "pid": PID_OF_TID, "tid": TID_OF_TID,
                               "corr": corr_key(PID_OF_TID), "name": "nameId",
                               "cls": "eventClass" if "eventClass" in cols else "0"}, obj(*pieces))
    got, args, lens, _, _ = gather(list(fetch_blocks(ex, q)), ex.path, API_CALLS)
    if not lens.size:
        return None
    names, name = names_of(got["name"], strings(ex, got["name"]), rename=schema.api_name)
    classes = ex.enum(schema.ENUM_EVENT_CLASS)
    cats = [schema.category_of(Kind.RUNTIME), schema.category_of(Kind.DRIVER)]
    driver = [c for c, (n, _) in classes.items() if n == schema.DRIVER_CLASS]
    cat = np.isin(got["cls"], driver).astype(np.int32)
    return make_part(API_CALLS, got, args, lens, cats, cat, names, name)


#: where emit_nvtx's parts start in a range's text ``t`` (0: absent), computed once per row
_NVTX_POS = ", ".join(f"instr(t, {sql_text(part)}) AS p{i}" for i, part in enumerate(schema.EMIT_NVTX_PARTS))


def _nvtx_source(ex: Export) -> str:
    """The FROM clause of the NVTX query: per row of the block, its times, thread, type,
    domain and text ``t`` (inline, else its StringIds value), then the positions in ``t``."""
    cols = ex.tables[schema.NVTX]
    text = []
    if "text" in cols:
        text.append("t.text")
    if "textId" in cols:
        text.append(f"(SELECT s.value FROM {quote_name(schema.STRING_IDS)} AS s WHERE s.id = t.textId)")
    txt = f"coalesce({', '.join(text)}, '')" if text else "''"
    domain = "coalesce(t.domainId, 0)" if "domainId" in cols else "0"
    kinds = ", ".join(str(k) for k in (*schema.NVTX_RANGES, schema.NVTX_MARK))
    rows = (f"SELECT t.start AS start, coalesce(t.\"end\", t.start) AS e, t.\"end\" IS NULL AS open, "
            f"t.eventType AS type, t.globalTid AS globalTid, {domain} AS domain, {txt} AS t "
            f"FROM {quote_name(schema.NVTX)} AS t WHERE {ROWS} AND t.eventType IN ({kinds}) LIMIT -1")
    return f"(SELECT *, {_NVTX_POS} FROM ({rows}) LIMIT -1)"


def _digit_at(pos: str, skip: int) -> str:
    return f"({pos} > 0 AND substr(t, {pos} + {skip}, 1) BETWEEN '0' AND '9')"


_SEQ, _OP, _SIZES, _INPUTS = (f"p{i}" for i in range(4))
_SEQ_LEN, _OP_LEN, _SIZES_LEN, _INPUTS_LEN = (len(p) for p in schema.EMIT_NVTX_PARTS)
#: the text is an emit_nvtx op's: a sequence number, an op id or the sizes follow its name
_IS_OP = (f"({_digit_at(_SEQ, _SEQ_LEN)} OR {_digit_at(_OP, _OP_LEN)} OR "
          f"({_SIZES} > 0 AND substr(t, {_SIZES} + {_SIZES_LEN}, 1) = '['))")
_END = "(length(t) + 1)"
_NAME_END = "min(" + ", ".join(f"CASE WHEN p{i} > 0 THEN p{i} ELSE {_END} END" for i in range(4)) + ")"
#: 0 range (user_annotation), 1 emit_nvtx op (cpu_op), 2 mark (instant)
_CLASS = f"CASE WHEN type = {schema.NVTX_MARK} THEN 2 WHEN {_IS_OP} THEN 1 ELSE 0 END"
_NAME = f"CASE WHEN type <> {schema.NVTX_MARK} AND {_IS_OP} THEN substr(t, 1, {_NAME_END} - 1) ELSE t END"
_SEQ_VAL = f"CASE WHEN {_digit_at(_SEQ, _SEQ_LEN)} THEN CAST(substr(t, {_SEQ} + {_SEQ_LEN}) AS INTEGER) ELSE -1 END"
_OP_VAL = f"CASE WHEN {_digit_at(_OP, _OP_LEN)} THEN CAST(substr(t, {_OP} + {_OP_LEN}) AS INTEGER) ELSE -1 END"
_SIZES_TEXT = (f"substr(t, {_SIZES} + {_SIZES_LEN}, (CASE WHEN {_INPUTS} > {_SIZES} THEN {_INPUTS} ELSE {_END} END)"
               f" - {_SIZES} - {_SIZES_LEN})")


def nvtx(ex: Export) -> tuple[EventColumns | None, int]:
    """NVTX ranges (push/pop and start/end, on the thread that opened them) and marks; and how
    many ranges have no end (kept with no duration)."""
    if schema.NVTX not in ex.tables:
        return None, 0
    domains = _domains(ex)
    pieces = [when(f"type <> {schema.NVTX_MARK} AND {_IS_OP} AND {_digit_at(_OP, _OP_LEN)}",
                   (ks.EXTERNAL_ID, "%lld", _OP_VAL)),
              when(f"type <> {schema.NVTX_MARK} AND {_IS_OP} AND {_digit_at(_SEQ, _SEQ_LEN)}",
                   (ks.SEQUENCE_NUMBER, "%lld", _SEQ_VAL)),
              f"CASE WHEN type <> {schema.NVTX_MARK} AND {_IS_OP} AND {_SIZES} > 0 AND json_valid({_SIZES_TEXT}) "
              f"THEN {sql_text(',' + json.dumps(ks.INPUT_DIMS) + ':')} || json({_SIZES_TEXT}) ELSE '' END",
              f"CASE WHEN type <> {schema.NVTX_MARK} AND {_IS_OP} AND {_INPUTS} > 0 "
              f"THEN {sql_text(',' + json.dumps(schema.INPUT_OP_IDS) + ':')} || "
              f"json_quote(substr(t, {_INPUTS} + {_INPUTS_LEN})) ELSE '' END"]
    params: tuple = ()
    if domains:
        pieces.append("CASE domain " + " ".join("WHEN ? THEN ?" for _ in domains) + " ELSE '' END")
        params = tuple(v for d, name in domains.items()
                       for v in (d, f",{json.dumps(schema.NVTX_DOMAIN)}:{json.dumps(name)}"))
    range_ = f"type <> {schema.NVTX_MARK}"
    q = Query(schema.NVTX, {"start": "start", "end": "e", "pid": PID_OF_TID, "tid": TID_OF_TID,
                            "seq": f"CASE WHEN {range_} THEN {_SEQ_VAL} ELSE -1 END",
                            "ext": f"CASE WHEN {range_} THEN {_OP_VAL} ELSE -1 END", "open": "open",
                            "ph": f"CASE WHEN type = {schema.NVTX_MARK} THEN {ord('i')} ELSE {ord('X')} END"},
              obj(*pieces), group=(_CLASS, _NAME), params=params, source=_nvtx_source(ex))
    blocks = list(fetch_blocks(ex, q))
    got, args, lens, keys, key_idx = gather(blocks, ex.path, NVTX_RANGES)
    if not lens.size:
        return None, 0
    cats = [schema.category_of(Kind.ANNOTATION), schema.category_of(Kind.CPU_OP), schema.category_of(Kind.INSTANT)]
    names: dict[str, int] = {}
    key_cat = np.array([int(k[0]) for k in keys], dtype=np.int32)
    key_name = np.array([names.setdefault(str(k[1]), len(names)) for k in keys], dtype=np.int32)
    unclosed = int((got["open"].astype(bool) & (got["ph"] == ord("X"))).sum())
    return make_part(NVTX_RANGES, got, args, lens, cats, key_cat[key_idx], list(names), key_name[key_idx]), unclosed


def _domains(ex: Export) -> dict[int, str]:
    """NVTX domain id -> name (the domain-create events' text)."""
    cols = ex.tables[schema.NVTX]
    if "domainId" not in cols or "text" not in cols:
        return {}
    rows = ex.rows(f"SELECT domainId, text FROM {quote_name(schema.NVTX)} WHERE eventType = ? AND domainId IS NOT NULL "
                   "AND text IS NOT NULL", (schema.NVTX_DOMAIN_CREATE,))
    return {int(d): str(t) for d, t in rows if isinstance(d, int)}


__all__ = ["nvtx", "runtime_calls", "strings"]
