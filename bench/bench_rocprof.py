"""Open a rocprofv3 JSON file (issue 38) against its floor, each in a fresh child process.

    python bench/bench_rocprof.py [--tile 1,10] [--runs 3] [--json FILE]

The input is the shared sample (``../shared/traces/rocprof/908_results.json.gz``: 43,915 kernel
dispatches) and, with ``--tile N``, the sample with its dispatches repeated N times in time
(copy *i* shifted by *i* x the span, correlation and dispatch ids offset), written gzipped to a
temporary folder.

Rows (seconds; CPU seconds of the child; MB = 2^20 bytes, peak = the child's VmHWM):

* ``floor``: read the file, gunzip it and decode the whole JSON document into Python objects
  (``msgspec.json.decode``, untyped): the least any reader of the format does;
* ``load``: ``tracetui.formats.load`` (typed decode in chunks, columns, the Kineto build);
* ``summary``: ``tracetui summary FILE --json --no-cache`` as a command (process start to exit).

The ratio is load / floor, of medians from one run of this script (rows interleaved, so
machine noise hits every row alike).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/rss.py: this folder is on the path when run as a script
from rss import peak_rss_mb

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "traces" / "rocprof" / "908_results.json.gz"
TOOL = "rocprofiler-sdk-tool"


def tile(src: Path, n: int, out: Path) -> int:
    """Write the sample with its dispatches ``n`` times (shifted in time, ids offset); gives the count."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    proc = doc[TOOL][0]
    kd = proc["buffer_records"]["kernel_dispatch"]
    t0 = min(d["start_timestamp"] for d in kd)
    span = max(d["end_timestamp"] for d in kd) - t0 + 1000
    top_corr = max(d["correlation_id"]["internal"] for d in kd) + 1
    out_kd = []
    for i in range(n):
        for d in kd:
            c = json.loads(json.dumps(d)) if i else d
            if i:
                c["start_timestamp"] += i * span
                c["end_timestamp"] += i * span
                c["correlation_id"]["internal"] += i * top_corr
                c["dispatch_info"]["dispatch_id"] += i * top_corr
            out_kd.append(c)
    proc["buffer_records"]["kernel_dispatch"] = out_kd
    out.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=6))
    return len(out_kd)


def _child(what: str, path: str) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    if what == "floor":
        import msgspec

        with open(path, "rb") as fh:
            data = gzip.decompress(fh.read())
        doc = msgspec.json.decode(data)
        result = {"dispatches": len(doc[TOOL][0]["buffer_records"]["kernel_dispatch"])}
    else:
        from tracetui import formats

        kt = formats.load(path)
        result = {"events": kt.n_events}
    result.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0, peak_mb=peak_rss_mb())
    print(json.dumps(result))


def _run_child(what: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", what, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_summary(path: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracetui", "summary", path, "--json", "--no-cache"], check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, TRACETUI_CACHE_DIR=tempfile.mkdtemp()))
    return time.perf_counter() - t0


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tile", default="1,10", help="comma-separated tilings of the sample (1: the sample itself)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    tmp = Path(tempfile.mkdtemp(prefix="tracetui-rocprof-"))
    print(f"{os.cpu_count()} CPUs; median of {args.runs} fresh processes per row, rows interleaved")
    print("| input | dispatches | file MB | floor s (cpu) | load s (cpu) | load / floor | floor peak MB | "
          "load peak MB | summary command s |")
    print("|---|---|---|---|---|---|---|---|---|")
    report = []
    for n in [int(x) for x in args.tile.split(",") if x]:
        path = SAMPLE if n == 1 else tmp / f"908_results_x{n}.json.gz"
        count = 43915 if n == 1 else tile(SAMPLE, n, path)
        rows: dict[str, list[dict]] = {"floor": [], "load": []}
        summaries = []
        for _ in range(args.runs):
            for what in rows:
                rows[what].append(_run_child(what, str(path)))
            summaries.append(_run_summary(str(path)))
        med = {k: _median([r["seconds"] for r in v]) for k, v in rows.items()}
        cpu = {k: _median([r["cpu"] for r in v]) for k, v in rows.items()}
        peak = {k: max(r["peak_mb"] for r in v) for k, v in rows.items()}
        name = SAMPLE.name if n == 1 else f"{n}x tiling"
        print(f"| {name} | {count:,} | {path.stat().st_size / 2**20:.1f} | {med['floor']:.2f} ({cpu['floor']:.2f}) | "
              f"{med['load']:.2f} ({cpu['load']:.2f}) | {med['load'] / med['floor']:.2f} | {peak['floor']:.0f} | "
              f"{peak['load']:.0f} | {_median(summaries):.2f} |")
        report.append({"tile": n, "dispatches": count, "rows": rows, "summary": summaries})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
