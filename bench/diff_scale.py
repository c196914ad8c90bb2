"""Scale of ``tracetui diff`` (issue 27, item 7): two 2-million-event traces, and two jobs.

    python bench/diff_scale.py                          # traces 10x, jobs of 64 ranks x 4 copies
    python bench/diff_scale.py --copies 4 --no-jobs
    python bench/diff_scale.py --no-traces --job-copies 10 --modes local,cluster2

**Traces.**  A and B are tilings of ``v100x2_nccl_216k`` (``bench/scale_trace.py``; A with
1,000 µs between copies, B with 5,000 µs: the same program, other timestamps), 10 copies
each: 2,160,578 events, 50 ProfilerSteps.  Every measurement runs in a fresh child process
with its own empty cache folder (the code fingerprint pinned), timed in wall seconds and in
CPU seconds of the child and every process it waited for (the parse children):

- *load both*: ``load_cached([A])`` then ``load_cached([B])``: what loading the two traces
  costs, one after the other;
- *diff*: ``tracetui diff A B --json`` from an empty cache: loading both (at the same time,
  each in its parse child), aligning 50 steps a side and every summary delta and table;
- *re-diff, cached loads*: the same command with another ``--top`` (its document is not
  stored): both traces mapped from the cache, the diff computed again;
- *re-diff, stored*: the first command again: its document comes from the store.

``--pair A B`` times two given traces instead of the tilings (issue 45: a cold ``diff --text``
of two mid-size traces against opening both), ``--text`` the command with ``--text``.

The target is diff < 1.3 x load both.  On this shared 2-core machine wall times depend on
the other sessions' load; CPU seconds, and ratios of numbers measured in the same run, are
what the table's verdict uses.

**Jobs.**  Two 64-rank jobs (``bench/bench_job.py``'s ``make_job``: rank r is the shared
8-rank job's rank r % 8 with rank r of 64, tiled ``--job-copies`` times; B is the same
files written into another folder), compared rank by rank in worker processes (``local``:
one per CPU) or on a 2-worker Dask ``LocalCluster`` (``cluster2``), cold (empty cache) and
again (every rank's document stored), against ``tracetui summary`` of both jobs in the
same child.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = Path("/tmp/tracetui_bench")

_CHILD = r"""
import contextlib, io, json, os, resource, sys, time
sys.path.insert(0, {repo!r})
what, args = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
if what == "load":
    from tracetui.store.traces import load_cached
    for p in args:
        load_cached([p])
else:
    from tracetui.cli.entry import main
    extra = []
    if args and args[0] == "--cluster2":
        from distributed import LocalCluster
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        args, extra = args[1:], ["--scheduler", cluster.scheduler_address]
        t0 = time.perf_counter()  # the cluster's start-up is not timed
    calls = [["summary", p, "--json", *extra] for p in args] if what == "summary" else [["diff", *args, *extra]]
    for call in calls:
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(call)
        assert rc == 0, (call, rc)
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"wall": wall, "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime}}))
"""


_PHASES = r"""
import io, json, os, sys, time
sys.path.insert(0, {repo!r})
a, b = sys.argv[1:3]
T = [(time.perf_counter(), time.process_time())]
from tracetui.diff.runs import _import_diff, load_both
A, B = load_both([a], [b], True, meanwhile=_import_diff); T.append((time.perf_counter(), time.process_time()))
from rich.console import Console
from tracetui.analysis.categories import get_categorizer
from tracetui.cli.diff_text import print_diff
from tracetui.diff import compare, model
from tracetui.diff.report import diff_document
from tracetui.io import jsonout
cat = compare.resolve_categorizer(get_categorizer(None))
sa, sb = compare.make_side("A", A, None, cat), compare.make_side("B", B, None, cat)
T.append((time.perf_counter(), time.process_time()))
tree = model.build_tree(sa.side, sb.side); T.append((time.perf_counter(), time.process_time()))
doc = jsonout.loads(jsonout.dumps(diff_document(compare.TraceDiff(tree, sa, sb), 15)))
T.append((time.perf_counter(), time.process_time()))
out = io.StringIO()
print_diff(doc, Console(file=out, width=120)); T.append((time.perf_counter(), time.process_time()))
names = ["load both (threads) + imports", "both sides: steps, frames, op forests, step tables",
         "align the templates + every step to its side's template", "document (deltas, tables, kernel changes)",
         "text (rich tables)"]
print(json.dumps({{"phases": [[n, T[i + 1][0] - T[i][0], T[i + 1][1] - T[i][1]] for i, n in enumerate(names)],
                  "steps": [len(sa.side.used), len(sb.side.used)], "rows": int(tree.parent.size),
                  "lines": out.getvalue().count("\n")}}))
"""


def phases_table(a: str, b: str) -> None:
    """CPU and wall of a cold diff's parts, in one process (``--phases``)."""
    with tempfile.TemporaryDirectory() as c:
        env = dict(os.environ, TRACETUI_CACHE_DIR=c, TRACETUI_CODE_FINGERPRINT="bench-diff")
        res = subprocess.run([sys.executable, "-c", _PHASES.format(repo=str(REPO)), a, b], env=env,
                             capture_output=True, text=True, timeout=3600, check=True)
    r = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"\nPhases of a cold diff in one process ({r['steps'][0]} + {r['steps'][1]} steps, {r['rows']:,} merged "
          f"rows, {r['lines']:,} lines of text; load average {os.getloadavg()[0]:.1f}):\n")
    print("| phase | wall s | CPU s |")
    print("|---|---:|---:|")
    for n, w, c in r["phases"]:
        print(f"| {n} | {w:.2f} | {c:.2f} |")


def child(what: str, args: list[str], cache: str) -> dict:
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache, TRACETUI_CODE_FINGERPRINT="bench-diff")
    res = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO)), what, *args], env=env,
                         capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise RuntimeError(f"{what} {args}: {res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def make_traces(copies: int) -> tuple[Path, Path]:
    from bench.scale_trace import DEFAULT_SOURCE, scale_trace

    OUT.mkdir(parents=True, exist_ok=True)
    out = []
    for name, gap in (("a", 1000.0), ("b", 5000.0)):
        p = OUT / f"diff_{name}_x{copies}.json.gz"
        if not p.exists():
            tmp = p.with_suffix(".tmp.gz")
            scale_trace(DEFAULT_SOURCE, tmp, copies, gap_us=gap, level=1)
            tmp.rename(p)
        out.append(p)
    return out[0], out[1]


def traces_table(copies: int, repeat: int, pair: list[str] | None = None, fmt: str = "--json") -> None:
    a, b = (Path(pair[0]), Path(pair[1])) if pair else make_traces(copies)
    rows: dict[str, list[dict]] = {}
    for _ in range(repeat):  # interleaved rounds; the minimum of each row is kept
        with tempfile.TemporaryDirectory() as c1, tempfile.TemporaryDirectory() as c2:
            rows.setdefault("load both (one after the other)", []).append(child("load", [str(a), str(b)], c1))
            rows.setdefault(f"diff A B {fmt} (cold)", []).append(child("diff", [str(a), str(b), fmt], c2))
            rows.setdefault("re-diff, cached loads", []).append(child("diff", [str(a), str(b), fmt, "--top", "14"],
                                                                      c2))
            rows.setdefault("re-diff, stored document", []).append(child("diff", [str(a), str(b), fmt], c2))
    best = {k: {m: min(r[m] for r in v) for m in ("wall", "cpu")} for k, v in rows.items()}
    load = best["load both (one after the other)"]
    what = "given" if pair else "10x tilings: 2,160,578 events each"
    print(f"\nTraces: A = {a.name}, B = {b.name} ({what}); {os.cpu_count()} CPUs; minimum of {repeat} round(s); "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| measurement | wall s | CPU s | wall / load both | CPU / load both |")
    print("|---|---:|---:|---:|---:|")
    for k, v in best.items():
        print(f"| {k} | {v['wall']:.2f} | {v['cpu']:.2f} | {v['wall'] / load['wall']:.2f} | "
              f"{v['cpu'] / load['cpu']:.2f} |")
    d = best[f"diff A B {fmt} (cold)"]
    print(f"\ndiff / load both: CPU {d['cpu'] / load['cpu']:.2f}x, wall {d['wall'] / load['wall']:.2f}x "
          f"(target < 1.3x): {'holds' if d['cpu'] / load['cpu'] < 1.3 else 'DOES NOT HOLD'} on CPU time")


def jobs_table(ranks: int, copies: int, modes: list[str], work: Path) -> None:
    from bench.bench_job import make_job

    ja = make_job(ranks, copies, work / "a")
    jb = make_job(ranks, copies, work / "b")
    print(f"\nJobs: {ranks} ranks x {copies} copies each (A: {ja}, B: {jb})\n")
    print("| mode | summary A + summary B (cold) s | diff A B cold s | diff A B again (stored) s |")
    print("|---|---:|---:|---:|")
    for mode in modes:
        extra = ["--cluster2"] if mode == "cluster2" else []
        with tempfile.TemporaryDirectory() as c1, tempfile.TemporaryDirectory() as c2:
            summ = child("summary", extra + [str(ja), str(jb)], c1)
            cold = child("diff", extra + [str(ja), str(jb), "--json"], c2)
            warm = child("diff", extra + [str(ja), str(jb), "--json"], c2)
        print(f"| {mode} | {summ['wall']:.2f} | {cold['wall']:.2f} | {warm['wall']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=10, help="tiles per trace (default 10: 2.16M events)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds of the trace rows (minimum kept)")
    ap.add_argument("--pair", nargs=2, metavar=("A", "B"), help="two given traces instead of the tilings")
    ap.add_argument("--text", action="store_true", help="time `diff --text` instead of `diff --json`")
    ap.add_argument("--phases", action="store_true", help="with --pair: also the parts of a cold diff, in one process")
    ap.add_argument("--no-traces", action="store_true")
    ap.add_argument("--no-jobs", action="store_true")
    ap.add_argument("--job-ranks", type=int, default=64)
    ap.add_argument("--job-copies", type=int, default=4, help="tiles per rank of the made-up jobs (default 4)")
    ap.add_argument("--modes", default="local", help="local and/or cluster2 (default local)")
    ap.add_argument("--work", default="/tmp/tracetui_bench_job", help="where made-up jobs are written")
    args = ap.parse_args(argv)
    if not args.no_traces:
        traces_table(args.copies, args.repeat, args.pair, "--text" if args.text else "--json")
        if args.phases and args.pair:
            phases_table(*args.pair)
    if not args.no_jobs:
        jobs_table(args.job_ranks, args.job_copies, args.modes.split(","), Path(args.work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
