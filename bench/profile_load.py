"""Where the load time goes, and measured prototypes of faster decode/build steps.

    python bench/profile_load.py [TRACE]          # default: the 10x tiling in /tmp/tracetui_bench
    python bench/profile_load.py TRACE --phases    # only the phase table of the real loader

Part 1 (phases): the real ``load_kineto`` with timers wrapped around its internal steps
(whichever of them exist in the current source), with the garbage collector on (as
shipped) and off.  Inclusive seconds per step.

Part 2 (prototypes): on the same decoded events, the way the loader built a column
before 2026-11-22 04:15 UTC next to a faster way that gives the same result (each
asserted equal).  The chunked decode, the attrgetter key args and the interning are
now in the loader (``decode._columns_chunked``, ``columns.Columns``; interning uses a
dict whose ``__missing__`` numbers new values, about 2x faster than the setdefault
generator measured here); the prototypes stay as the record of the measurement:

- key args (correlation, External id, ...): re-join all args into one document, decode
  ``list[Union[_KeyArgs, None]]``, one generator per field  vs  decode the *events array*
  a second time into a struct holding only ``args: _KeyArgs`` (no join, no copy) and
  read each field with ``map(attrgetter)``;
- per-event str columns: list comprehension + ``pandas.factorize``  vs
  ``map(attrgetter)`` + dict interning to int32 codes;
- timestamps: ``parse_timestamps`` (join, split into 2M bytes objects, S-matrix)  vs
  a gather from the joined token bytes with offsets (no per-token objects);
- typed decode with the GC on vs off (msgspec structs are GC-tracked: every 700
  allocations a young collection runs, and the old generation is rescanned as it grows).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from operator import attrgetter
from pathlib import Path
from typing import Union

import msgspec
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rss import peak_rss_mb  # noqa: E402  (bench/rss.py: this folder is on the path)

DEFAULT = "/tmp/tracetui_bench/v100x2_nccl_216k_x10.json.gz"

#: (module, function) pairs timed when they exist
STEPS = [
    ("tracetui.io.files", "read_trace_bytes"),
    ("tracetui.kineto.decode", "decode_events"),
    ("tracetui.kineto.decode", "_split_top"),
    ("tracetui.kineto.decode", "_columns_chunked"),
    ("tracetui.kineto.decode", "_columns"),
    ("tracetui.kineto.decode", "_key_args_batch"),
    ("tracetui.kineto.decode", "_key_args_columns"),
    ("tracetui.kineto.decode", "_validate_utf8"),
    ("tracetui.kineto.timestamps", "parse_timestamps"),
    ("tracetui.kineto.build", "build_trace"),
    ("tracetui.kineto.build", "_metadata_events"),
    ("tracetui.kineto.build", "_merge_begin_end"),
    ("tracetui.kineto.build", "_factorize"),
    ("tracetui.kineto.build", "_compact"),
    ("tracetui.kineto.build", "nest_by_time"),
    ("tracetui.tree.csr", "csr_children"),
    ("tracetui.kineto.build", "_link_fwd_bwd"),
    ("tracetui.kineto.timestamps", "relative_times"),
]


def phases(path: str, gc_on: bool) -> tuple[float, dict[str, list[float]]]:
    import importlib

    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    undo = []
    for modname, fn in STEPS:
        mod = importlib.import_module(modname)
        real = getattr(mod, fn, None)
        if real is None:
            continue

        key = f"{modname.split('.')[-1]}.{fn}"

        def timed(*a, __real=real, __key=key, **k):
            t = time.perf_counter()
            try:
                return __real(*a, **k)
            finally:
                acc = totals[__key]
                acc[0] += time.perf_counter() - t
                acc[1] += 1

        undo.append((mod, fn, real))
        setattr(mod, fn, timed)
    # modules that imported the functions by name
    for modname in ("tracetui.kineto.loader", "tracetui.kineto.decode", "tracetui.kineto.build"):
        mod = importlib.import_module(modname)
        for m2, fn, real in list(undo):
            if getattr(mod, fn, None) is real:
                undo.append((mod, fn, real))
                setattr(mod, fn, getattr(m2, fn))
    from tracetui.kineto.loader import load_kineto

    was = gc.isenabled()
    if not gc_on:
        gc.disable()
    t0 = time.perf_counter()
    try:
        load_kineto(path)
    finally:
        total = time.perf_counter() - t0
        if was:
            gc.enable()
        for mod, fn, real in undo:
            setattr(mod, fn, real)
    return total, dict(totals)


# ------------------------------------------------------------------ prototypes
class _KeyArgs(msgspec.Struct, frozen=True):
    correlation: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_old: int = msgspec.field(default=-1, name="external id")
    stream: int = -1
    device: int = -1
    rf_id: int = msgspec.field(default=0, name="Record function id")
    seq: int = msgspec.field(default=-1, name="Sequence number")
    fwd_tid: int = msgspec.field(default=-1, name="Fwd thread id")


_FIELDS = ("correlation", "external_id", "external_id_old", "stream", "device", "rf_id", "seq", "fwd_tid")
_NONE = _KeyArgs()


class _EvKeys(msgspec.Struct, gc=False):
    args: _KeyArgs = _NONE


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: float = 0.0
    id: Union[int, str, None] = None
    bp: Union[str, None] = None
    args: msgspec.Raw = msgspec.Raw(b"")


def _t(fn, *a):
    gc.collect()
    t = time.perf_counter()
    out = fn(*a)
    return time.perf_counter() - t, out


def key_args_current(raws):
    doc = b"[" + b",".join([r if len(r) else b"null" for r in raws]) + b"]"
    parsed = msgspec.json.decode(doc, type=list[Union[_KeyArgs, None]])
    filled = [p if p is not None else _NONE for p in parsed]
    return {f: np.fromiter((getattr(p, f) for p in filled), dtype=np.int64, count=len(filled)) for f in _FIELDS}


def key_args_second_pass(events_raw):
    parsed = msgspec.json.decode(events_raw, type=list[_EvKeys])
    args = list(map(attrgetter("args"), parsed))
    return {f: np.fromiter(map(attrgetter(f), args), dtype=np.int64, count=len(args)) for f in _FIELDS}


def key_args_join_attrgetter(raws):
    doc = b"[" + b",".join([r if len(r) else b"{}" for r in raws]) + b"]"
    parsed = msgspec.json.decode(doc, type=list[_KeyArgs])
    return {f: np.fromiter(map(attrgetter(f), parsed), dtype=np.int64, count=len(parsed)) for f in _FIELDS}


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def str_columns_current(evs):
    import pandas as pd

    out = {}
    for f in ("ph", "cat", "name"):
        col = [getattr(e, f) for e in evs]
        codes, uniq = pd.factorize(pd.Series(col, dtype=object), use_na_sentinel=False)
        out[f] = (codes.astype(np.int32), list(uniq))
    return out


def str_columns_interned(evs, fields=("ph", "cat", "name")):
    out = {}
    for f in fields:
        index: dict = {}
        get = index.setdefault
        codes = np.fromiter((get(v, len(index)) for v in map(attrgetter(f), evs)), dtype=np.int32, count=len(evs))
        out[f] = (codes, list(index))
    return out


def ts_gather(tokens):
    """Integer and fractional µs of plain decimal tokens, without per-token objects."""
    n = len(tokens)
    lens = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    width = int(lens.max())
    cols = np.arange(width)
    idx = starts[:, None] + cols[None, :]
    inside = cols[None, :] < lens[:, None]
    mat = np.where(inside, buf[np.minimum(idx, buf.size - 1)], 48).astype(np.uint8)  # pad with '0'
    del idx, inside
    is_dot = mat == 46
    dot = np.where(is_dot.any(axis=1), is_dot.argmax(axis=1), lens)
    del is_dot
    ints = np.zeros(n, dtype=np.int64)
    fracs = np.zeros(n, dtype=np.float64)
    for c in range(width):
        d = mat[:, c].astype(np.int64) - 48
        in_int = c < dot
        ints = np.where(in_int, ints * 10 + d, ints)
        pos = c - dot
        fracs += np.where(pos > 0, np.clip(d, 0, 9) * 10.0 ** (-np.maximum(pos, 1)), 0.0)
    return ints, fracs


def prototypes(path: str) -> list[tuple[str, float, float, str]]:
    from tracetui.io.files import read_trace_bytes
    from tracetui.kineto.timestamps import parse_timestamps

    rows = []
    data = read_trace_bytes(path).data
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    events_raw = top["traceEvents"]

    from tracetui.kineto.schema import Event as CurrentEvent

    def decode(struct, gc_on):
        gc.collect()
        if not gc_on:
            gc.disable()
        t = time.perf_counter()
        out = msgspec.json.decode(events_raw, type=list[struct])
        dt = time.perf_counter() - t
        gc.enable()
        return dt, out

    t_on, evs = decode(CurrentEvent, True)
    del evs
    t_off, evs = decode(CurrentEvent, False)
    del evs
    rows.append(("typed decode (loader's struct)", t_on, t_off, "GC on vs GC off during the decode"))
    gc.collect()
    before = rss_mb()
    t_untracked, evs = decode(_Event, True)
    rows.append(("typed decode, Struct(gc=False)", t_on, t_untracked, "same fields, untracked structs, GC on"))
    rows.append(("RSS of the decoded list[_Event] (MB)", rss_mb() - before, float("nan"), "memory, not seconds"))

    raws = [e.args for e in evs]
    a, ka = _t(key_args_current, raws)
    b, kb = _t(key_args_second_pass, events_raw)
    assert all(np.array_equal(ka[f], kb[f]) for f in _FIELDS)
    rows.append(("key args (8 int64 columns)", a, b, "join+decode+genexpr vs 2nd decode pass+attrgetter"))
    c, kc = _t(key_args_join_attrgetter, raws)
    assert all(np.array_equal(ka[f], kc[f]) for f in _FIELDS)
    rows.append(("key args (8 int64 columns)", a, c, "join+decode+genexpr vs join ('{}' for none)+attrgetter"))
    del raws, ka, kb, kc

    a, sa = _t(str_columns_current, evs)
    b, sb = _t(str_columns_interned, evs)
    for f in sa:  # same partition (codes may be numbered alike: both in first-seen order)
        assert [sa[f][1][c] for c in sa[f][0][:1000]] == [sb[f][1][c] for c in sb[f][0][:1000]]
        assert np.array_equal(sa[f][0], sb[f][0])
    rows.append(("ph/cat/name -> codes", a, b, "listcomp+pd.factorize vs attrgetter+dict interning"))
    del sa, sb
    b, _ = _t(str_columns_interned, evs, ("pid", "tid"))
    rows.append(("pid/tid -> codes (build: lists + 2x _factorize)", float("nan"), b, "attrgetter+dict interning"))

    tokens = [e.ts for e in evs]
    plain = all(len(t) and bytes(t)[:1] != b"-" and b"e" not in bytes(t).lower() for t in tokens[:1000])
    if plain:
        a, (ia, fa) = _t(parse_timestamps, tokens)
        b, (ib, fb) = _t(ts_gather, tokens)
        assert np.array_equal(ia, ib) and np.allclose(fa, fb, atol=1e-9)
        rows.append(("timestamps (exact int+frac)", a, b, "join/split/S-matrix vs gather from joined bytes"))
    return rows


# ------------------------------------------------------------------ chunked column building
def _chunk_columns(evs, interns, out) -> None:
    """Append one chunk's columns: interned codes for str-ish fields, floats, key args."""
    from tracetui.kineto.timestamps import parse_timestamps

    n = len(evs)
    for f in ("ph", "cat", "name", "pid", "tid"):
        index = interns[f]
        get = index.setdefault
        out[f].append(np.fromiter((get(v, len(index)) for v in map(attrgetter(f), evs)), dtype=np.int32, count=n))
    out["dur"].append(np.fromiter(map(attrgetter("dur"), evs), dtype=np.float64, count=n))
    ts_i, ts_f = parse_timestamps(list(map(attrgetter("ts"), evs)))
    out["ts_int"].append(ts_i)
    out["ts_frac"].append(ts_f)
    raws = list(map(attrgetter("args"), evs))
    out["args_len"].append(np.fromiter(map(len, raws), dtype=np.int64, count=n))
    out["blob"].append(b"".join(raws))
    for f, col in key_args_join_attrgetter(raws).items():
        out[f].append(col)


def columns_full(events_raw):
    evs = msgspec.json.decode(events_raw, type=list[_Event])
    interns = defaultdict(dict)
    out = defaultdict(list)
    _chunk_columns(evs, interns, out)
    return {k: (b"".join(v) if k == "blob" else np.concatenate(v)) for k, v in out.items()}


def columns_chunked(events_raw, chunk: int = 65536):
    """Decode the events array as raw slices, then typed decode + columns chunk by chunk:
    the 2M structs never exist at once."""
    raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
    interns = defaultdict(dict)
    out = defaultdict(list)
    for s in range(0, len(raws), chunk):
        part = raws[s:s + chunk]
        evs = msgspec.json.decode(b"[" + b",".join(part) + b"]", type=list[_Event])
        _chunk_columns(evs, interns, out)
        del evs, part
    del raws
    return {k: (b"".join(v) if k == "blob" else np.concatenate(v)) for k, v in out.items()}


def chunk_child(path: str, mode: str) -> None:
    import hashlib
    import json

    from tracetui.io.files import read_trace_bytes

    t0 = time.perf_counter()
    data = read_trace_bytes(path).data
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    t1 = time.perf_counter()
    cols = (columns_chunked if mode == "chunked" else columns_full)(top["traceEvents"])
    t2 = time.perf_counter()
    h = hashlib.blake2b(digest_size=8)
    for k in sorted(cols):
        h.update(k.encode() + (cols[k] if k == "blob" else cols[k].tobytes()))
    print(json.dumps({"read": t1 - t0, "columns": t2 - t1, "peak": peak_rss_mb(), "hash": h.hexdigest()}))


def chunked_rows(path: str) -> list[tuple[str, float, float, str]]:
    import json
    import subprocess

    res = {}
    for mode in ("full", "chunked"):
        out = subprocess.run([sys.executable, __file__, path, "--chunk-child", mode], capture_output=True,
                             text=True, check=True)
        res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["full"]["hash"] == res["chunked"]["hash"], "chunked columns differ"
    return [("all event columns (typed decode + columns)", res["full"]["columns"], res["chunked"]["columns"],
             "whole list[_Event] vs 64k-event chunks (same columns, hashed)"),
            ("peak RSS of that child (MB)", res["full"]["peak"], res["chunked"]["peak"], "memory, not seconds")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", default=DEFAULT)
    ap.add_argument("--phases", action="store_true", help="only the phase table")
    ap.add_argument("--prototypes", action="store_true", help="only the prototype table")
    ap.add_argument("--chunk-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.chunk_child:
        chunk_child(args.trace, args.chunk_child)
        return 0
    print(f"# {args.trace}")
    for gc_on in (() if args.prototypes else (True, False)):
        total, tot = phases(args.trace, gc_on)
        print(f"\n## load_kineto phases, GC {'on' if gc_on else 'off'}: total {total:.2f} s")
        print("| step | calls | inclusive s |\n|---|---|---|")
        for k, (sec, calls) in sorted(tot.items(), key=lambda kv: -kv[1][0]):
            print(f"| {k} | {calls} | {sec:.2f} |")
        gc.collect()
    if args.phases:
        return 0
    print("\n## prototypes (same result, asserted)\n| step | current s | prototype s | what |\n|---|---|---|---|")
    for name, a, b, what in prototypes(args.trace) + chunked_rows(args.trace):
        print(f"| {name} | {a:.2f} | {b:.2f} | {what} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
