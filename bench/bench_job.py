"""Whole-job benchmark: open and summarise a job of 8 and 64 ranks, locally and on a
2-worker Dask cluster, with the time and the peak memory of every process involved.

    python bench/bench_job.py                      # 8 ranks (shared job) and 64 ranks x 60 copies
    python bench/bench_job.py --ranks 8 --copies 10 --modes local
    python bench/bench_job.py --tiny 2000 --modes local   # 2,000 rank files of ~5 KB each

Jobs: "8" is the shared ``multirank/param_dlrm_8ranks`` (Kineto + ET per rank, ~3,300
events per rank).  "64" is made here (once, under ``--work``): rank r is the shared job's
rank ``r % 8`` with ``distributedInfo`` set to rank r of world size 64, tiled ``--copies``
times in time with ``bench/scale_trace.py`` (60 copies: ~195,000 events per rank; Kineto
only, ETs cannot be tiled).  ``--tiny N`` makes a job of N small rank files instead (issue
45: many ranks, little work each): rank r is a cut of the shared job's rank ``r % 8``, the
events of the window from 300 µs before the launch of its first NCCL kernel to that
kernel's end, with the ops that hold the launch and the metadata (~270 ``traceEvents``
entries, ~125 events as loaded, ~5 KB gzip, one collective), ``distributedInfo`` rank r
of world size N: what a job costs per rank when the ranks themselves cost almost nothing.

Every measurement runs in a fresh child process with an empty cache folder:

- cold: ``tracetui.job.open_job`` (identify every file, parse every rank into the cache,
  summarise, match collectives) -- what ``tracetui summary DIR`` does on first use;
- warm: the same call again in the same process (every rank mapped from the cache, its
  summary the stored one; the code fingerprint is pinned so that edits of the package
  during the run cannot invalidate the cache);
- CPU s: the CPU time of that process and of every descendant (pool workers, fork
  server, Dask processes) during the cold and the warm open, from the same 50 ms samples;
- parent peak: the RSS high-water mark of the process that called ``open_job`` (it holds
  only the per-rank summaries and the matched collectives);
- tree peak: the highest sum of RSS over that process and all its descendants (the local
  pool's worker processes via the fork server, or the Dask scheduler, nannies and
  workers), sampled every 50 ms with psutil;
- modes: ``local`` (``ProcessPoolExecutor``, one worker per core) and ``cluster2`` (a
  ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` started inside the
  measurement, its start-up not timed).

``--baseline DIR`` runs the same measurement with the tracetui of another checkout (a
``git worktree`` or ``git archive`` of the base commit) right after each of this one's,
so both see the same load; ``--repeat N`` rounds.  The load average is printed per row.
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
#: the checkout whose tracetui a measurement child imports (``--baseline``: another one)
CODE = Path(os.environ.get("BENCH_JOB_CODE") or REPO)
sys.path[:0] = [str(CODE)] + ([str(REPO)] if CODE != REPO else [])
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


def cut_rank(src: Path, rank: int, world: int) -> bytes:
    """The small rank file of ``--tiny`` (see the module docstring), gzip-compressed."""
    d = json.loads(gzip.decompress(src.read_bytes()))
    ev = d["traceEvents"]
    kernel = next(e for e in ev if e.get("cat") == "kernel" and "nccl" in e["name"])
    corr = kernel["args"]["correlation"]
    launch = next(e for e in ev if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") == corr)
    t0, t1 = launch["ts"] - 300, kernel["ts"] + kernel["dur"]

    def kept(e: dict) -> bool:
        ts = e.get("ts")
        if e.get("ph") == "M":
            return True
        if not isinstance(ts, (int, float)):
            return False
        holds_launch = e.get("tid") == launch["tid"] and ts <= launch["ts"] <= ts + e.get("dur", 0)
        return t0 <= ts <= t1 or holds_launch

    d["traceEvents"] = [e for e in ev if kept(e)]
    d["distributedInfo"] = dict(d["distributedInfo"], rank=rank, world_size=world)
    return gzip.compress(json.dumps(d).encode(), 6, mtime=0)


def make_tiny_job(ranks: int, work: Path) -> Path:
    """A job folder of ``ranks`` small Kineto files (``--tiny``); reused when present."""
    out = work / f"tiny{ranks}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        (out / f"rank{r}_kineto.json.gz").write_bytes(cut_rank(JOB8 / f"rank{r % 8}_kineto.json.gz", r, ranks))
    done.touch()
    return out


def _tree_rss(proc, cpu: dict[int, float]) -> int:
    """The summed RSS of ``proc`` and its descendants; each one's CPU seconds so far into ``cpu``."""
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            with p.oneshot():
                total += p.memory_info().rss
                t = p.cpu_times()
                cpu[(p.pid, p.create_time())] = t.user + t.system
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
    cpu: dict = {}  # (pid, start) -> CPU seconds at its last sample: the whole tree's CPU, workers too
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(me, cpu))
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
        _tree_rss(me, cpu)
        cold_cpu = sum(cpu.values())
        t0 = time.perf_counter()
        j2 = open_job([job], scheduler=scheduler)
        warm = time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
        _tree_rss(me, cpu)
        if cluster is not None:
            cluster.close()
    events = sum(r.summary["trace"]["events"] for r in j.results.values() if r.ok)
    return {"ranks": len(j.ranks), "loaded": sum(r.ok for r in j.results.values()), "events": events,
            "collectives": len(j.collectives), "all_matched": all(c["ranks"] == len(j.ranks) for c in j.collectives),
            "same_warm": len(j2.collectives) == len(j.collectives), "cold_s": cold, "warm_s": warm,
            "cold_cpu_s": cold_cpu, "warm_cpu_s": sum(cpu.values()) - cold_cpu,
            "parent_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tree_peak_mb": peak[0] / 2**20, "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="8,64", help="job sizes (default 8,64)")
    ap.add_argument("--copies", type=int, default=60, help="time tiles per rank of the made-up jobs (default 60)")
    ap.add_argument("--modes", default="local,cluster2",
                    help="local and/or clusterN, a LocalCluster of N workers (default local,cluster2)")
    ap.add_argument("--tiny", type=int, default=0, metavar="N",
                    help="instead of --ranks: a job of N small rank files (see the module docstring)")
    ap.add_argument("--baseline", metavar="DIR",
                    help="also time the tracetui of the checkout in DIR, interleaved with this one")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (each: this checkout, then the baseline)")
    ap.add_argument("--work", default="/tmp/tracetui_bench_job", help="where made-up jobs are written")
    ap.add_argument("--one", nargs=2, metavar=("MODE", "JOB"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(*args.one)))
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.tiny:
        jobs = [(args.tiny, make_tiny_job(args.tiny, work))]
    else:
        jobs = [(n, make_job(n, 1 if n == 8 else args.copies, work)) for n in (int(x) for x in args.ranks.split(","))]
    codes = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    rows = []
    for n, job in jobs:
        for mode, _ in ((m, k) for k in range(args.repeat) for m in args.modes.split(",")):
            for code, root in codes:  # interleaved: this checkout, then the baseline, per job and mode
                r = _run_one(root, mode, job)
                if r is None:
                    print(f"bench_job: {n} ranks, {mode}, {code}: failed", file=sys.stderr)
                    continue
                rows.append((n, mode, code, r))
                print(f"{n} ranks {mode} {code}: {r}", file=sys.stderr)
    print("| ranks | events (all ranks) | mode | code | cold open + summary s | CPU s | warm s | CPU s |"
          " parent peak MB | tree peak MB | collectives (all matched) | load average |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for n, mode, code, r in rows:
        print(f"| {n} | {r['events']:,} | {mode} | {code} | {r['cold_s']:.2f} | {r['cold_cpu_s']:.2f} |"
              f" {r['warm_s']:.2f} | {r['warm_cpu_s']:.2f} |"
              f" {r['parent_peak_mb']:.0f} | {r['tree_peak_mb']:.0f} | {r['collectives']}"
              f" ({'yes' if r['all_matched'] else 'no'}) | {r['load']} |")
    if rows:
        print(f"\n{rows[0][3]['cpus']} CPUs; local = one worker process per CPU.")
    return 0


def _run_one(root: Path, mode: str, job: Path) -> dict | None:
    """One measurement in a fresh child of the checkout at ``root``, with an empty cache
    folder; the load average (1 min) before and after it."""
    with tempfile.TemporaryDirectory() as cache:
        # the code fingerprint pinned: an edit of the package during a run must not
        # invalidate the cache between the cold and the warm open
        env = dict(os.environ, TRACETUI_CACHE_DIR=cache, TRACETUI_CODE_FINGERPRINT="bench-job",
                   BENCH_JOB_CODE=str(root), PYTHONPATH=str(root))
        before = os.getloadavg()[0]
        # cwd: not a checkout (the fork server runs `python -c`, whose sys.path starts with it)
        out = subprocess.run([sys.executable, __file__, "--one", mode, str(job)], cwd=cache,
                             env=env, capture_output=True, text=True, check=False)
        after = os.getloadavg()[0]
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["load"] = f"{before:.1f}-{after:.1f}"
    return r


if __name__ == "__main__":
    sys.exit(main())
