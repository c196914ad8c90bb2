"""Open a big Nsight Systems SQLite export (issue 37): tracetui against the floor of selecting
the same tables into numpy, and the cached reopen; each number from a fresh child process.

    python bench/bench_nsys.py [--sizes 2000000,650000] [--repeat 1] [--json FILE]

The export is the shared one (``h100_2gpu_1s.sqlite``, two processes on two H100s) tiled in
time in a temporary folder: copy ``i`` of every row of its event tables (kernels, CUDA API
calls, NVTX ranges, memcpys, memsets, synchronisations) is shifted by ``i`` x (its span + 1 ms)
and its correlation ids (and kernels' grid ids, syncs' event ids) by ``i`` x a power of ten
above the largest, so every link stays inside its copy.  ``--sizes``: the kernels + CUDA API
calls each tiling should hold (the copies are rounded up); the sample's NVTX ranges come
with them (about 1.8 per call: PyTorch's emit_nvtx wraps every op).

Rows (seconds; CPU = the child's own process time; MB = 2^20 bytes; peak = the child's VmHWM):

* ``floor``: ``SELECT`` of every column tracetui reads from each event table
  (``nsys.schema.EVENT_COLUMNS`` + ``OPTIONAL_COLUMNS``), ``fetchall`` and one numpy array
  per column (text columns as object arrays): selecting the same tables into numpy;
* ``C floor``: the same columns, each as one ``group_concat`` string per block parsed by
  ``np.fromstring`` (tracetui's way of reading; the texts as one byte string per block):
  no Python object per row, nothing built;
* ``open``: ``tracetui.nsys.load_nsys`` (read, parse, build the linked trace);
* ``cold open``: ``tracetui.store.traces.load_cached`` with an empty cache: the parse in a
  child process that writes the cache entry, then the entry read back;
* ``cached``: the same call again (median of 3 children).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rss import peak_rss_mb

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "traces" / "nsys" / "h100_2gpu_1s.sqlite"
MB = 2**20


# ------------------------------------------------------------------------------ the tiling
def tile(src: Path, out: Path, copies: int) -> dict:
    """Write ``copies`` copies of ``src``'s event rows into ``out`` (a copy of ``src``)."""
    from tracetui.nsys import schema

    shutil.copyfile(src, out)
    out.chmod(0o644)
    con = sqlite3.connect(out)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    tables = [t for t in schema.EVENT_COLUMNS if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                                             (t,)).fetchone()]
    spans = con.execute(" UNION ALL ".join(f'SELECT min(start), max(coalesce("end", start)) FROM {t}'
                                           for t in tables)).fetchall()
    lo, hi = min(a for a, _ in spans if a is not None), max(b for _, b in spans if b is not None)
    stride = hi - lo + 1_000_000
    ids = {"correlationId": 0, "gridId": 0, "eventId": 0, "eventSyncId": 0}
    for t in tables:
        cols = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
        for c in ids:
            if c in cols:
                ids[c] = max(ids[c], con.execute(f"SELECT coalesce(max({c}), 0) FROM {t}").fetchone()[0])
    step = {c: 10 ** len(str(v)) for c, v in ids.items()}
    for t in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
        last = con.execute(f"SELECT max(rowid) FROM {t}").fetchone()[0] or 0
        for i in range(1, copies):
            expr = [f'"{c}" + {i * stride}' if c in ("start", "end") else
                    f'"{c}" + {i * step[c]}' if c in step else f'"{c}"' for c in cols]
            con.execute(f"INSERT INTO {t} ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
                        f"SELECT {', '.join(expr)} FROM {t} WHERE rowid <= {last}")
        con.commit()
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    con.close()
    return counts


# ---------------------------------------------------------------------------- the children
def _floor(path: str) -> dict:
    import numpy as np

    from tracetui.nsys import schema

    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    rows = 0
    for t, need in schema.EVENT_COLUMNS.items():
        have = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
        if not have:
            continue
        cols = [c for c in (*need, *schema.OPTIONAL_COLUMNS.get(t, ())) if c in have]
        got = con.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {t}").fetchall()
        arrays = []
        for col in zip(*got):
            try:
                arrays.append(np.array(col, dtype=np.int64))
            except (TypeError, ValueError):  # text, or NULLs: kept as objects
                arrays.append(np.array(col, dtype=object))
        rows += len(got)
        del got, arrays
    return {"rows": rows}


def _c_floor(path: str) -> dict:
    import numpy as np

    from tracetui.nsys import schema

    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    rows = 0
    for t, need in schema.EVENT_COLUMNS.items():
        have = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
        if not have:
            continue
        cols = [c for c in (*need, *schema.OPTIONAL_COLUMNS.get(t, ())) if c in have]
        text = [c for c in cols if c == "text"]
        nums = [c for c in cols if c != "text"]
        aggs = ", ".join(f'CAST(group_concat(coalesce(CAST("{c}" AS INTEGER), -1)) AS BLOB)' for c in nums)
        if text:
            aggs += ", CAST(group_concat(coalesce(text, ''), '') AS BLOB)"
        lo, hi = con.execute(f"SELECT min(rowid), max(rowid) FROM {t}").fetchone()
        for a in range(lo or 0, (hi or -1) + 1, 1 << 18):
            got = con.execute(f"SELECT count(*), {aggs} FROM {t} WHERE rowid >= ? AND rowid < ?",
                              (a, a + (1 << 18))).fetchone()
            for blob in got[1:1 + len(nums)]:
                np.fromstring(blob or b"", dtype=np.int64, sep=",")
            rows += got[0]
    return {"rows": rows}


def _open(path: str) -> dict:
    from tracetui.nsys import load_nsys

    tr = load_nsys(path)
    return {"events": tr.n_events}


def _cached(path: str) -> dict:
    from tracetui.store.traces import entry_path, load_cached

    tr = load_cached([path]).kineto
    return {"events": tr.n_events, "entry_mb": entry_path(path).stat().st_size / MB}


CHILDREN = {"floor": _floor, "c_floor": _c_floor, "open": _open, "cached": _cached}


def child_main(what: str, path: str) -> None:
    import numpy  # noqa: F401 -- imports are not timed: every child has the same

    import tracetui.kineto.build  # noqa: F401
    import tracetui.nsys.loader  # noqa: F401
    import tracetui.store.traces  # noqa: F401

    t0, c0 = time.perf_counter(), time.process_time()
    out = CHILDREN[what](path)
    out.update(wall=time.perf_counter() - t0, cpu=time.process_time() - c0, peak_mb=peak_rss_mb())
    print(json.dumps(out))


def run_child(what: str, path: Path, cache: Path) -> dict:
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, __file__, "--child", what, str(path)], capture_output=True, text=True,
                          env=env, check=False)
    if proc.returncode:
        raise SystemExit(f"child {what} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ the table
def machine() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    import numpy as np

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return (f"{usable} CPUs ({cpu}), Python {platform.python_version()}, numpy {np.__version__}, SQLite "
            f"{sqlite3.sqlite_version}, {platform.system()} {platform.release()}, commit {commit or '?'}")


def measure(path: Path, work: Path, repeat: int) -> dict:
    row: dict = {}
    for r in range(repeat):
        for what in ("floor", "c_floor", "open"):
            got = run_child(what, path, work / "no-cache")
            row.setdefault(what, []).append(got)
        cache = work / f"cache-{r}"
        shutil.rmtree(cache, ignore_errors=True)
        row.setdefault("cold", []).append(run_child("cached", path, cache))
        row.setdefault("cached", []).extend(run_child("cached", path, cache) for _ in range(3))
    return row


def _best(runs: list[dict], key: str) -> float:
    return min(r[key] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000000", help="kernels + CUDA API calls per tiling, comma separated")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the timed children (minimum kept)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--child", nargs=2, metavar=("WHAT", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(*args.child)
        return
    print(f"machine: {machine()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    con = sqlite3.connect(f"file:{SAMPLE}?mode=ro", uri=True)
    per_copy = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                   for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"))
    con.close()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tracetui-nsys-bench-") as tmp:
        work = Path(tmp)
        for target in (int(x) for x in args.sizes.split(",") if x):
            copies = max(1, math.ceil(target / per_copy))
            path = work / f"tiled_{copies}.sqlite"
            t0 = time.perf_counter()
            counts = tile(SAMPLE, path, copies)
            made = time.perf_counter() - t0
            got = measure(path, work, args.repeat)
            row = {"copies": copies, "calls": counts.get("CUPTI_ACTIVITY_KIND_KERNEL", 0)
                   + counts.get("CUPTI_ACTIVITY_KIND_RUNTIME", 0), "events": got["open"][0]["events"],
                   "file_mb": path.stat().st_size / MB, "tiling_s": made}
            for what in ("floor", "c_floor", "open", "cold"):
                row[f"{what}_wall"] = _best(got[what], "wall")
                row[f"{what}_cpu"] = _best(got[what], "cpu")
                row[f"{what}_peak_mb"] = max(r["peak_mb"] for r in got[what])
            row["cached_wall"] = statistics.median(r["wall"] for r in got["cached"])
            row["cached_cpu"] = statistics.median(r["cpu"] for r in got["cached"])
            row["entry_mb"] = got["cached"][0]["entry_mb"]
            row["ratio_wall"] = row["open_wall"] / row["floor_wall"]
            row["ratio_cpu"] = row["open_cpu"] / row["floor_cpu"]
            rows.append(row)
            path.unlink()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    head = ("| copies | kernels + calls | events | file MB | floor s (CPU) | C floor s (CPU) | open s (CPU) | "
            "open / floor | open peak MB | cold open s | cached reopen s (CPU) | entry MB |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        print(f"| {r['copies']} | {r['calls']:,} | {r['events']:,} | {r['file_mb']:.0f} | "
              f"{r['floor_wall']:.2f} ({r['floor_cpu']:.2f}) | {r['c_floor_wall']:.2f} ({r['c_floor_cpu']:.2f}) | "
              f"{r['open_wall']:.2f} ({r['open_cpu']:.2f}) | {r['ratio_wall']:.2f}x ({r['ratio_cpu']:.2f}x CPU) | "
              f"{r['open_peak_mb']:.0f} | {r['cold_wall']:.2f} | {r['cached_wall']:.3f} ({r['cached_cpu']:.3f}) | "
              f"{r['entry_mb']:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
