"""Whole-job benchmark: open and summarise a job of 8 and 64 ranks, locally and on a
2-worker Dask cluster, with the time and the peak memory of every process involved.

    python bench/bench_job.py                      # 8 ranks (shared job) and 64 ranks x 60 copies
    python bench/bench_job.py --ranks 8 --copies 10 --modes local

Jobs: "8" is the shared ``multirank/param_dlrm_8ranks`` (Kineto + ET per rank, ~3,300
events per rank).  "64" is made here (once, under ``--work``): rank r is the shared job's
rank ``r % 8`` with ``distributedInfo`` set to rank r of world size 64, tiled ``--copies``
times in time with ``bench/scale_trace.py`` (60 copies: ~195,000 events per rank; Kineto
only, ETs cannot be tiled).

Every measurement runs in a fresh child process with an empty cache folder:

- cold: ``tracetui.job.open_job`` (identify every file, parse every rank into the cache,
  summarise, match collectives) -- what ``tracetui summary DIR`` does on first use;
- warm: the same call again in the same process (every rank mapped from the cache, its
  summary the stored one; the code fingerprint is pinned so that edits of the package
  during the run cannot invalidate the cache);
- parent peak: the RSS high-water mark of the process that called ``open_job`` (it holds
  only the per-rank summaries and the matched collectives);
- tree peak: the highest sum of RSS over that process and all its descendants (the local
  pool's worker processes via the fork server, or the Dask scheduler, nannies and
  workers), sampled every 50 ms with psutil;
- modes: ``local`` (``ProcessPoolExecutor``, one worker per core) and ``cluster2`` (a
  ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` started inside the
  measurement, its start-up not timed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
JOB8 = REPO.parent / "shared" / "traces" / "multirank" / "param_dlrm_8ranks"


def make_job(ranks: int, copies: int, work: Path) -> Path:
    """A job folder of ``ranks`` Kineto files (see the module docstring); reused when present."""
    if ranks == 8 and copies <= 1:
        return JOB8
    from bench.scale_trace import scale_trace

    out = work / f"job{ranks}x{copies}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        src = gzip.decompress((JOB8 / f"rank{r % 8}_kineto.json.gz").read_bytes())
        src = re.sub(rb'"rank":\s*\d+,\s*"world_size":\s*\d+', f'"rank": {r}, "world_size": {ranks}'.encode(), src,
                     count=1)
        with tempfile.NamedTemporaryFile(suffix=".json", dir=work, delete=False) as tmp:
            tmp.write(src)
        try:
            scale_trace(tmp.name, out / f"rank{r}_kineto.json.gz", copies, level=1)
        finally:
            os.unlink(tmp.name)
    done.touch()
    return out


def _tree_rss(proc) -> int:
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(mode: str, job: str) -> dict:
    """One measurement (run in a child process: ``--one MODE JOB``)."""
    import resource

    import psutil

    from tracetui.job import open_job

    me = psutil.Process()
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(me))
            time.sleep(0.05)

    cluster = None
    scheduler = None
    if mode.startswith("cluster"):  # clusterN: a LocalCluster of N one-thread worker processes
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=int(mode[len("cluster"):] or 2), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        scheduler = cluster.scheduler_address
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        t0 = time.perf_counter()
        j = open_job([job], scheduler=scheduler)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        j2 = open_job([job], scheduler=scheduler)
        warm = time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
        if cluster is not None:
            cluster.close()
    events = sum(r.summary["trace"]["events"] for r in j.results.values() if r.ok)
    return {"ranks": len(j.ranks), "loaded": sum(r.ok for r in j.results.values()), "events": events,
            "collectives": len(j.collectives), "all_matched": all(c["ranks"] == len(j.ranks) for c in j.collectives),
            "same_warm": len(j2.collectives) == len(j.collectives), "cold_s": cold, "warm_s": warm,
            "parent_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tree_peak_mb": peak[0] / 2**20, "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="8,64", help="job sizes (default 8,64)")
    ap.add_argument("--copies", type=int, default=60, help="time tiles per rank of the made-up jobs (default 60)")
    ap.add_argument("--modes", default="local,cluster2",
                    help="local and/or clusterN (a LocalCluster of N workers; default local,cluster2)")
    ap.add_argument("--work", default="/tmp/tracetui_bench_job", help="where made-up jobs are written")
    ap.add_argument("--one", nargs=2, metavar=("MODE", "JOB"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(*args.one)))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(x) for x in args.ranks.split(",")):
        job = make_job(n, 1 if n == 8 else args.copies, work)
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory() as cache:
                # the code fingerprint pinned: an edit of the package during a run must not
                # invalidate the cache between the cold and the warm open
                env = dict(os.environ, TRACETUI_CACHE_DIR=cache, TRACETUI_CODE_FINGERPRINT="bench-job")
                out = subprocess.run([sys.executable, __file__, "--one", mode, str(job)], env=env,
                                     capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"bench_job: {n} ranks, {mode}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((n, mode, r))
            print(f"{n} ranks {mode}: {r}", file=sys.stderr)
    print("| ranks | events (all ranks) | mode | cold open + summary s | warm s | parent peak MB | tree peak MB |"
          " collectives (all matched) |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    for n, mode, r in rows:
        print(f"| {n} | {r['events']:,} | {mode} | {r['cold_s']:.2f} | {r['warm_s']:.2f} | {r['parent_peak_mb']:.0f} |"
              f" {r['tree_peak_mb']:.0f} | {r['collectives']} ({'yes' if r['all_matched'] else 'no'}) |")
    if rows:
        print(f"\n{rows[0][2]['cpus']} CPUs; local = one worker process per CPU.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
