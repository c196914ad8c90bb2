"""The benchmarks of the GPU-box run that need more than calling a bench script (issue 36).

    python scripts/gpu_box/bench_box.py load -- [bench_load.py arguments]
    python scripts/gpu_box/bench_box.py open-sweep TRACE [--workers 1,2,4,8,16] [--work DIR]
    python scripts/gpu_box/bench_box.py job --job8 DIR -- [bench_job.py arguments]

``load``: ``bench/bench_load.py`` as it is, except that its ``tracetui summary`` children keep
the ``PYTHONPATH`` they were started with after the repository (``bench_load.summary_env`` sets
it to the repository alone): on the GPU box tracetui's dependencies come from wheels installed
into a folder that only ``PYTHONPATH`` names.

``open-sweep``: the cold open of TRACE (``tracetui.store.traces.load_cached`` with an empty cache,
in a fresh child: ``bench/bench_load.py``'s own ``open`` measurement) once per decode-worker count
(``TRACETUI_DECODE_WORKERS``; the loader uses at most one worker per 200,000 events), with wall
and CPU seconds and the process tree's peak memory: how the decode spreads over a box's cores.

``job``: ``bench/bench_job.py`` as it is, except that the shared 8-rank job it reads (and tiles
into the 64-rank job) is DIR: on the GPU box ``../shared`` is not there, so the script carries a
copy inside the repository.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


def _bench_load():
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(REPO))
    import bench_load  # bench/ is put on the path above

    return bench_load


def load(argv: list[str]) -> int:
    bench_load = _bench_load()
    own = bench_load.summary_env

    def summary_env(cdir: Path) -> dict:
        env = own(cdir)
        rest = os.environ.get("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), rest) if p)
        return env

    bench_load.summary_env = summary_env
    return bench_load.main(argv)


def open_sweep(trace: str, workers: list[int], work: Path) -> int:
    bench_load = _bench_load()

    work.mkdir(parents=True, exist_ok=True)
    print(f"# cold open of {Path(trace).name} ({os.path.getsize(trace) / 2**20:.1f} MB) by decode workers; "
          f"{os.cpu_count()} CPUs; each a fresh child with an empty cache")
    print("| TRACETUI_DECODE_WORKERS | events | cold open s | cold open CPU s (parent) | tree peak MB |")
    print("|---:|---:|---:|---:|---:|")
    for w in workers:
        cdir = Path(tempfile.mkdtemp(prefix=f"sweep{w}_", dir=work))
        try:
            r = bench_load.run_child("open", trace, cdir, TRACETUI_DECODE_WORKERS=str(w))
        finally:
            shutil.rmtree(cdir, ignore_errors=True)
        print(f"| {w} | {r['n_events']:,} | {r['open']:.2f} | {r['cpu']:.2f} | {r['tree_peak'] / 2**20:.0f} |",
              flush=True)
    return 0


def job(job8: Path, argv: list[str]) -> int:
    sys.path.insert(0, str(REPO))
    from bench import bench_job

    if not (job8 / "rank0_kineto.json.gz").is_file():
        print(f"bench_box job: {job8} holds no rank0_kineto.json.gz", file=sys.stderr)
        return 2
    bench_job.JOB8 = job8.resolve()
    return bench_job.main(argv)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ld = sub.add_parser("load", help="bench/bench_load.py, its summary children keeping PYTHONPATH")
    ld.add_argument("rest", nargs=argparse.REMAINDER, help="bench_load.py's arguments (after --)")
    sw = sub.add_parser("open-sweep", help="cold open by decode-worker count")
    sw.add_argument("trace")
    sw.add_argument("--workers", default="1,2,4,8,16", help="worker counts (default 1,2,4,8,16)")
    sw.add_argument("--work", default="/tmp/tracetui_bench_sweep", help="cache folders go here")
    jb = sub.add_parser("job", help="bench/bench_job.py with the 8-rank job read from --job8")
    jb.add_argument("--job8", required=True, help="a copy of shared/traces/multirank/param_dlrm_8ranks")
    jb.add_argument("rest", nargs=argparse.REMAINDER, help="bench_job.py's arguments (after --)")
    args = ap.parse_args(argv)
    if args.cmd == "open-sweep":
        return open_sweep(args.trace, [int(w) for w in args.workers.split(",") if w], Path(args.work))
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    return load(rest) if args.cmd == "load" else job(Path(args.job8), rest)


if __name__ == "__main__":
    sys.exit(main())
