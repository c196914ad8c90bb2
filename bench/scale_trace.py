"""Make a big Kineto trace from a real one: tile it N times in time, ids offset.

    python bench/scale_trace.py -n 10                       # the largest shared trace, 10x
    python bench/scale_trace.py SRC.json.gz -n 4 -o OUT.json.gz [--gap 1000] [--level 6]

Copy ``i`` (0-based) of every non-metadata event is shifted by ``i * stride_us`` where
``stride_us = ceil(span + gap)`` (span = last end - first start of the source, in
microseconds), and every id that links events is offset by ``i * id_stride`` (a power of
ten above the largest id in the source) so links stay unique and stay inside their copy:

- top-level ``id`` of flow events (ac2g: equals the correlation; fwdbwd);
- args ``correlation``, ``External id``, ``external id``, ``Record function id`` (0 = none,
  kept), ``Sequence number``, ``Python id``, ``Python parent id``, ``Ev Idx``,
  ``wait_on_cuda_event_record_corr_id``, ``wait_on_cuda_event_id``.

Negative ids (-1 = none) are kept.  Metadata events (``ph: M``: process/thread names and
sort indices) are written once.  Timestamps keep every digit: only the integer
microseconds are shifted (text-level rewrite, no float round trip).  Top-level keys
(deviceProperties, distributedInfo, ...) are copied verbatim, in order.

The rewrite is done on the JSON text: the source is tokenised once (regex over the event
text), and each copy is the same text with new numbers spliced in.
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import re
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parents[1]
SHARED_KINETO = REPO.parent / "shared" / "traces" / "kineto"
DEFAULT_SOURCE = SHARED_KINETO / "v100x2_nccl_216k.json.gz"
DEFAULT_OUT_DIR = Path("/tmp/tracetui_bench")

#: args keys whose values are ids that link events (offset per copy)
ID_ARG_KEYS = ("correlation", "External id", "external id", "Record function id", "Sequence number",
               "Python id", "Python parent id", "Ev Idx", "wait_on_cuda_event_record_corr_id",
               "wait_on_cuda_event_id")
#: ids where 0 means "none" (kept as 0)
ZERO_IS_NONE = ("Record function id",)

_NUM = rb"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_KEYS = [b"ts", b"id"] + [k.encode() for k in ID_ARG_KEYS]
_PATTERN = re.compile(rb'("(' + b"|".join(re.escape(k) for k in _KEYS) + rb')"\s*:\s*)(' + _NUM + rb")")

# per-token modes
_KEEP, _ID, _TS, _TS_DECIMAL = 0, 1, 2, 3


class _Head(msgspec.Struct):
    ph: str = ""
    ts: float | None = None
    dur: float = 0.0


@dataclass
class ScaleResult:
    out: str
    copies: int
    events_per_copy: int  #: non-metadata events of the source
    metadata_events: int
    stride_us: int  #: time shift between copies
    id_stride: int  #: id offset between copies
    bytes_written: int  #: uncompressed JSON bytes
    seconds: float


def _read(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _split(data: bytes) -> tuple[list[tuple[str, bytes]], bytes, str]:
    """(top-level (key, raw value) pairs in order, raw events array, form)."""
    s = data.lstrip()
    if s[:1] == b"[":
        return [], data, "array"
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    if "traceEvents" not in top:
        raise ValueError("not a Kineto trace: no 'traceEvents'")
    return [(k, bytes(v)) for k, v in top.items()], bytes(top["traceEvents"]), "object"


def _tokenise(body: bytes) -> tuple[list[bytes], list[tuple[int, bytes, int]], int]:
    """Cut the event text at every id/ts number.

    Returns (constant pieces, one (int base, suffix, mode) per number, largest id).
    ``pieces[k]`` comes before number ``k``; the last piece follows the last number.
    """
    parts = _PATTERN.split(body)  # text, '"key": ', key, number, text, ...
    texts, pres, keys, vals = parts[0::4], parts[1::4], parts[2::4], parts[3::4]
    del parts
    pieces = [t + p for t, p in zip(texts, pres)]
    pieces.append(texts[-1])
    zero_none = {k.encode() for k in ZERO_IS_NONE}
    recs = [_classify(k, v, zero_none) for k, v in zip(keys, vals)]
    max_id = max((a for a, _, m in recs if m == _ID), default=0)
    return pieces, recs, max_id


def _classify(key: bytes, val: bytes, zero_none: set[bytes]) -> tuple[int, bytes, int]:
    if key == b"ts":
        if val[:1] != b"-" and b"e" not in val and b"E" not in val:
            ip, dot, fp = val.partition(b".")
            return int(ip), dot + fp, _TS
        return 0, val, _TS_DECIMAL
    if b"." in val or b"e" in val or b"E" in val:
        return 0, val, _KEEP  # not an integer id: leave it
    v = int(val)
    if v < 0 or (v == 0 and key in zero_none):
        return 0, val, _KEEP
    return v, b"", _ID


def _copy_values(recs: list[tuple[int, bytes, int]], id_off: int, ts_off: int) -> list[bytes]:
    out = [b"%d%s" % (a + (id_off if m == _ID else ts_off), s) if m in (_ID, _TS) else s
           for a, s, m in recs]
    if ts_off:
        for k, (_, s, m) in enumerate(recs):
            if m == _TS_DECIMAL:
                out[k] = str(Decimal(s.decode()) + ts_off).encode()
    return out


def _interleave(pieces: list[bytes], values: list[bytes]) -> bytes:
    parts: list[bytes] = [b""] * (len(pieces) + len(values))
    parts[0::2] = pieces
    parts[1::2] = values
    return b"".join(parts)


def scale_trace(src: str | os.PathLike[str], out: str | os.PathLike[str], copies: int, *,
                gap_us: float = 1000.0, level: int = 6) -> ScaleResult:
    """Write ``copies`` time-shifted, id-offset copies of ``src`` into ``out``.

    ``out`` ending in ``.gz`` is gzip-compressed (``level`` 1-9), otherwise plain JSON.
    """
    if copies < 1:
        raise ValueError("copies must be >= 1")
    t0 = time.perf_counter()
    data = _read(Path(src))
    top, events_raw, form = _split(data)
    del data
    raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
    heads = msgspec.json.decode(events_raw, type=list[_Head])
    meta = [bytes(r) for r, h in zip(raws, heads) if h.ph == "M"]
    body_raws = [bytes(r) for r, h in zip(raws, heads) if h.ph != "M"]
    starts = [h.ts for h in heads if h.ph != "M" and h.ts is not None]
    ends = [h.ts + (h.dur if h.dur and h.dur > 0 else 0.0) for h in heads if h.ph != "M" and h.ts is not None]
    span = (max(ends) - min(starts)) if starts else 0.0
    stride_us = int(math.ceil(span + gap_us))
    del raws, heads, events_raw
    body = b",\n".join(body_raws)
    n_body = len(body_raws)
    del body_raws
    pieces, recs, max_id = _tokenise(body)
    del body
    id_stride = 10 ** len(str(max_id + 1))

    out_p = Path(out)
    out_p.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_p.with_name(out_p.name + ".part")
    fh = gzip.open(tmp, "wb", compresslevel=level) if out_p.name.endswith(".gz") else open(tmp, "wb")
    written = 0

    def put(b: bytes) -> None:
        nonlocal written
        fh.write(b)
        written += len(b)

    with fh:
        if form == "object":
            put(b"{\n")
            for k, v in top:
                if k != "traceEvents":
                    put(msgspec.json.encode(k) + b": " + v + b",\n")
            put(b'"traceEvents": [\n')
        else:
            put(b"[\n")
        first = True
        if meta:
            put(b",\n".join(meta))
            first = False
        for i in range(copies):
            if n_body:
                put(b"" if first else b",\n")
                first = False
                put(_interleave(pieces, _copy_values(recs, i * id_stride, i * stride_us)))
        put(b"\n]")
        if form == "object":
            put(b"\n}\n")
        else:
            put(b"\n")
    os.replace(tmp, out_p)
    return ScaleResult(str(out_p), copies, n_body, len(meta), stride_us, id_stride, written,
                       time.perf_counter() - t0)


def default_output(src: Path, copies: int, gz: bool = True) -> Path:
    stem = src.name.split(".json")[0]
    return DEFAULT_OUT_DIR / f"{stem}_x{copies}.json{'.gz' if gz else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", default=str(DEFAULT_SOURCE), help="source Kineto trace (.json or .json.gz)")
    ap.add_argument("-n", "--copies", type=int, default=10, help="number of copies (default 10)")
    ap.add_argument("-o", "--out", default=None,
                    help=f"output (.json.gz: gzip, else plain JSON); default {DEFAULT_OUT_DIR}/<name>_x<N>.json.gz")
    ap.add_argument("--gap", type=float, default=1000.0, help="gap between copies in microseconds (default 1000)")
    ap.add_argument("--level", type=int, default=6, help="gzip level 1-9 (default 6)")
    ap.add_argument("--plain", action="store_true", help="write plain JSON (default output name without .gz)")
    args = ap.parse_args(argv)
    src = Path(args.src)
    out = Path(args.out) if args.out else default_output(src, args.copies, gz=not args.plain)
    r = scale_trace(src, out, args.copies, gap_us=args.gap, level=args.level)
    print(f"{r.out}: {r.copies} x {r.events_per_copy:,} events (+{r.metadata_events} metadata), "
          f"{r.bytes_written / 1e6:.0f} MB JSON, time stride {r.stride_us} us, id stride {r.id_stride}, "
          f"{r.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
