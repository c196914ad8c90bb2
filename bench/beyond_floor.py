"""Where a trace's open costs more than the floor: CPU seconds of each step, in one process.

    python bench/beyond_floor.py [TRACE] [--reps 5]     # default: v100x2_nccl_216k

Every step runs ``--reps`` times on the same input and its *minimum CPU time* is reported
(``time.process_time``): on a shared machine wall times of one run vary by 2x, CPU minima
by a few percent.  The steps are the loader's own functions, fed what the step before
produced; their sum is close to a cold open's CPU, the first rows are the floor's.

- floor: read + gunzip (``read_trace_bytes``), the top-level split, the typed msgspec decode
  of every event (``list[Event]``, args left raw);
- columns (what ``Columns.add`` does per 64k-event chunk beyond the typed decode): interning
  (ph, cat, name, pid, tid), exact timestamps, dur, the args blob, key args, flow ids;
- build (``build_trace``) split at its progress reports; the cache write (``save_trace``);
- summary: ``build_summary`` on the loaded trace; imports: the import of what a cold
  ``tracetui summary`` needs, each in a fresh interpreter (wall, median of 3);
- with ``--engines``: other decoders of the same events text in place of the typed decode,
  to see whether one lowers the floor: orjson (a dict per event), and DuckDB's ``read_json``
  (C++, yyjson) turning ``traceEvents`` into the loader's columns (ph, cat, name, pid, tid,
  ts, dur, id, args as JSON text) fetched as numpy arrays, on one thread and on all cores.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from operator import attrgetter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DEFAULT = HERE.parent.parent / "shared" / "traces" / "kineto" / "v100x2_nccl_216k.json.gz"
CHUNK = 65536


def cpu_min(fn, reps: int):
    best, out = float("inf"), None
    for _ in range(reps):
        c = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c)
    return best, out


def import_wall(stmt: str) -> float:
    code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 cwd=HERE.parent).stdout) for _ in range(3)]
    return statistics.median(runs)


def engine_rows(data: bytes, n_events: int, reps: int) -> list[tuple[str, float]]:
    """Other decoders of the same text (``data``: the decompressed file), each giving one
    row per event (asserted): CPU of this process, DuckDB's threads included."""
    import os

    import duckdb
    import orjson

    rows: list[tuple[str, float]] = []
    t, obj = cpu_min(lambda: orjson.loads(data), reps)
    assert len(obj["traceEvents"]) == n_events
    del obj
    rows.append(("engine: orjson.loads (a dict per event), instead of the typed decode", t))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "events.json"
        path.write_bytes(data)
        spec = ("STRUCT(ph VARCHAR, cat VARCHAR, name VARCHAR, pid JSON, tid JSON, ts JSON, dur DOUBLE, "
                "id JSON, args JSON)[]")
        sql = ("SELECT e.ph, e.cat, e.name, e.pid, e.tid, e.ts, e.dur, e.id, e.args FROM (SELECT "
               "unnest(traceEvents) AS e FROM read_json(?, format='auto', maximum_object_size=2147483647, "
               "columns={traceEvents: '" + spec + "'}))")
        for threads in (1, os.cpu_count() or 1):
            con = duckdb.connect()
            con.execute(f"SET threads={threads}")
            t, cols = cpu_min(lambda con=con: con.execute(sql, [str(path)]).fetchnumpy(), reps)
            assert len(cols["ph"]) == n_events
            del cols
            con.close()
            rows.append((f"engine: DuckDB read_json into the columns, {threads} thread(s), instead of split + typed "
                         f"decode + columns", t))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--engines", action="store_true", help="also time orjson and DuckDB read_json on the events")
    args = ap.parse_args()
    import msgspec
    import numpy as np

    from tracetui.io.files import read_trace_bytes
    from tracetui.io.interning import Codes
    from tracetui.kineto.build import build_trace
    from tracetui.kineto.columns import INTERNED, key_args_batch
    from tracetui.kineto.decode import _split_top, decode_events
    from tracetui.kineto.persist import save_trace
    from tracetui.kineto.schema import Event
    from tracetui.kineto.timestamps import parse_timestamps

    p, reps = args.trace, args.reps
    rows: list[tuple[str, float]] = []
    t, data = cpu_min(lambda: read_trace_bytes(p).data, reps)
    rows.append(("floor: read + gunzip", t))
    t, (raw, _, _) = cpu_min(lambda: _split_top(p, data), reps)
    rows.append(("floor: top-level split", t))
    t, evs = cpu_min(lambda: msgspec.json.decode(raw, type=list[Event]), reps)
    rows.append(("floor: typed decode", t))
    if args.engines:
        rows.extend(engine_rows(data, len(evs), reps))
    chunks = [evs[s:s + CHUNK] for s in range(0, len(evs), CHUNK)]

    def per_chunk(fn):
        return sum(cpu_min(lambda ch=ch: fn(ch), reps)[0] for ch in chunks)  # noqa: F821 (chunks: above)

    def intern(ch):
        codes = Codes()
        return np.fromiter(map(codes.__getitem__, map(attrgetter(*INTERNED), ch)), dtype=np.int32, count=len(ch))

    rows.append(("columns: interning (one tuple lookup per event)", per_chunk(intern)))
    rows.append(("columns: exact timestamps", per_chunk(lambda ch: parse_timestamps(list(map(attrgetter("ts"), ch))))))
    rows.append(("columns: dur", per_chunk(lambda ch: np.fromiter(map(attrgetter("dur"), ch), dtype=np.float64,
                                                                 count=len(ch)))))

    def blob(ch):
        raws = list(map(attrgetter("args"), ch))
        return np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)), b"".join(raws)

    rows.append(("columns: args lengths + blob", per_chunk(blob)))
    rows.append(("columns: key args (2nd msgspec pass over args, 8 fields)",
                 per_chunk(lambda ch: key_args_batch(list(map(attrgetter("args"), ch))))))
    rows.append(("columns: flow ids", per_chunk(lambda ch: list(map(attrgetter("id"), ch)))))
    del evs, chunks
    t, _ = cpu_min(lambda: decode_events(p, data), reps)
    rows.append(("(decode in all: split + typed decode + columns)", t))

    marks: dict[str, float] = {}

    def build():
        dec = decode_events(p, data)
        last = [time.process_time()]

        def report(msg: str, frac: float) -> None:
            now = time.process_time()
            marks[msg] = min(marks.get(msg, float("inf")), now - last[0])
            last[0] = now

        return build_trace(p, dec, progress=report)

    steps_before = {}  # the step a progress report closes is the one it names after
    kt = None
    for _ in range(reps):
        kt = build()
    names = list(marks)
    for prev, cur in zip(["start", *names[:-1]], names):
        steps_before[prev] = marks[cur]
    for step, secs in steps_before.items():
        rows.append((f"build: {step}", secs))
    with tempfile.TemporaryDirectory() as d:
        t, _ = cpu_min(lambda: save_trace(kt, Path(d) / "t.ttc"), reps)
    rows.append(("cache write (save_trace)", t))
    from tracetui.analysis.categories import get_categorizer
    from tracetui.analysis.summary import build_summary
    from tracetui.session import LinkedTrace

    t, _ = cpu_min(lambda: build_summary(LinkedTrace(kineto=kt), get_categorizer(None), top=10), reps)
    rows.append(("summary: build_summary", t))
    print(f"# {Path(p).name}: CPU seconds, min of {reps}")
    print("| step | CPU s |\n|---|---|")
    for name, secs in rows:
        print(f"| {name} | {secs:.3f} |")
    print()
    print("| import (fresh interpreter, wall, median of 3) | s |\n|---|---|")
    for stmt in ("import numpy", "import tracetui.store.traces", "import pandas",
                 "import tracetui.analysis.summary", "import tracetui.ui.app"):
        print(f"| `{stmt}` | {import_wall(stmt):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
