"""Issue 41: cold open against its floor, the verified cached reopen and the peak, two checkouts in one run.

    python bench/bench_open.py --baseline ../cmpnow                  # the default traces
    python bench/bench_open.py --baseline DIR --trace FILE --rounds 3

A baseline older than 1f32d97 starts its parse child with ``python -c``, which imports the
tracetui of the working directory first: start the benchmark outside any checkout
(``cd /tmp && python /path/to/bench/bench_open.py ...``), or that baseline's cold open runs
the parse code of the checkout it was started from.

For each trace, ``--rounds`` rounds; in each round, fresh child processes in this order:
the floor, then for every checkout (the baseline first, then this one) a cold open and
three cached reopens.  Alternating the checkouts inside a round puts both under the same
load: compare ratios within one run.  Each child imports the package from its checkout
(``sys.path[0]``); the code fingerprint is pinned per checkout, so a cold open writes the
entry its reopens read.

* **floor**: ISA-L gunzip of the file (``isal.igzip.decompress``, one call) + msgspec typed
  decode of every event into the loader's own struct (``tracetui.kineto.schema.Event`` of
  this checkout, args left raw), nothing else; wall and CPU seconds;
* **cold**: ``tracetui.store.traces.load_cached([file])`` with an empty cache directory
  (the parse child, decode workers and the cache write included); wall, CPU of the child,
  its parse child and the decode workers (``RUSAGE_CHILDREN``: on a busy machine the CPU
  ratio is what the wall ratio would be on idle cores), and **tree peak**: the highest sum
  of PSS over the child and all its descendants, sampled every 20 ms (decode workers and
  the parse child counted, shared pages once);
* **reopen**: the same call on the filled cache, median of three children; **reopen+read**:
  the same, then every field the entry holds read and checked (``__getstate__`` reads the
  fields a reopen defers to their first use): what a reopen costs when everything is used.

Imports are done before any timer starts.  Minimum over the rounds for times, maximum for
peaks.  Seconds, MB (2**20 bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared" / "traces" / "kineto"
DEFAULT_TRACES = [SHARED / "a100_cudagraph_nccl_rank0.json.gz", SHARED / "v100x2_nccl_216k.json.gz",
                  Path("/tmp/tracetui_bench/v100x2_nccl_216k_x11.json.gz")]
MB = 2**20


# ------------------------------------------------------------------ children
def child(kind: str, path: str) -> dict:
    import resource

    import isal.igzip
    import msgspec

    from tracetui.kineto.schema import Event
    from tracetui.store.traces import load_cached

    c0, t0 = time.process_time(), time.perf_counter()  # imports done: they are not timed
    if kind == "floor":
        raw = Path(path).read_bytes()
        data = isal.igzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        del raw
        t1 = time.perf_counter()
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        n = len(msgspec.json.decode(top["traceEvents"], type=list[Event]))
        out = {"gunzip": t1 - t0, "events": n}
    else:
        lt = load_cached([path])
        out = {"open": time.perf_counter() - t0, "open_cpu": time.process_time() - c0}
        if kind == "read":
            lt.kineto.__getstate__()
        out["events"] = lt.kineto.n_events
    out["wall"] = time.perf_counter() - t0
    out["cpu"] = time.process_time() - c0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["tree_cpu"] = out["cpu"] + kids.ru_utime + kids.ru_stime  # + the parse child and its decode workers
    out["hwm"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    kids.setdefault(int(fh.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def tree_pss(root: int) -> int:
    kids, todo, total = _children_map(), [root], 0
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) * 1024 for line in fh if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total


def run_child(code: Path, kind: str, path: Path, cache: Path, pin: str) -> dict:
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(cache), TRACETUI_CODE_FINGERPRINT=pin, PYTHONPATH=str(code))
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, str(path), "--code", str(code)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], tree_pss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=1800)
    finally:
        done.set()
        sampler.join()
    if proc.returncode:
        raise RuntimeError(f"{kind} {path} ({code}) failed:\n{err[-3000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["tree_peak"] = peak[0]
    return res


def machine() -> str:
    import platform

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    mem = next(int(line.split()[1]) // 2**20 for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem} GiB RAM, Python {platform.python_version()}, "
            f"Linux {platform.release()}")


def git_rev(code: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=code, capture_output=True,
                           text=True).stdout.strip()
    if out.returncode:
        return code.name
    return out.stdout.strip() + ("+changes" if dirty else "")


# ------------------------------------------------------------------ parent
def measure(traces: list[Path], codes: list[Path], rounds: int) -> list[dict]:
    rows = []
    stamp = f"{os.getpid()}-{int(time.time())}"
    for path in traces:
        res: dict = {"floor": [], **{str(c): {"cold": [], "reopen": [], "reopen_cpu": [], "read": []} for c in codes}}
        for r in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                res["floor"].append(run_child(REPO, "floor", path, Path(tmp) / "none", "floor"))
                for k, code in enumerate(codes):
                    cache = Path(tmp) / f"cache{k}"
                    pin = f"bench41-{stamp}-{k}"
                    res[str(code)]["cold"].append(run_child(code, "cold", path, cache, pin))
                    reopen = [run_child(code, "reopen", path, cache, pin) for _ in range(3)]
                    res[str(code)]["reopen"].append(statistics.median(x["open"] for x in reopen))
                    res[str(code)]["reopen_cpu"].append(statistics.median(x["open_cpu"] for x in reopen))
                    res[str(code)]["read"].append(run_child(code, "read", path, cache, pin)["wall"])
                    shutil.rmtree(cache, ignore_errors=True)
            print(f"# {path.name} round {r + 1}: load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        floor = min(x["wall"] for x in res["floor"])
        for code in codes:
            m = res[str(code)]
            cold = min(x["wall"] for x in m["cold"])
            rows.append({"trace": path.name, "code": git_rev(code), "events": res["floor"][0]["events"],
                         "floor": floor, "floor_cpu": min(x["cpu"] for x in res["floor"]),
                         "gunzip": min(x["gunzip"] for x in res["floor"]),
                         "cold": cold, "cold_cpu": min(x["tree_cpu"] for x in m["cold"]), "ratio": cold / floor,
                         "tree_peak": max(x["tree_peak"] for x in m["cold"]),
                         "reopen": min(m["reopen"]), "reopen_cpu": min(m["reopen_cpu"]), "read": min(m["read"]),
                         "cold_all": [round(x["wall"], 2) for x in m["cold"]],
                         "floor_all": [round(x["wall"], 2) for x in res["floor"]]})
    return rows


def table(rows: list[dict]) -> str:
    head = ("| trace | events | code | floor s (rounds) | floor CPU s | cold open s (rounds) "
            "| cold CPU s (all processes) | cold / floor | CPU ratio | tree peak MB | reopen s (CPU s) "
            "| reopen + every field read s |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        floors, colds = ", ".join(map(str, r["floor_all"])), ", ".join(map(str, r["cold_all"]))
        lines.append(f"| {r['trace']} | {r['events']:,} | {r['code']} | {r['floor']:.2f} ({floors}) "
                     f"| {r['floor_cpu']:.2f} | {r['cold']:.2f} ({colds}) | {r['cold_cpu']:.2f} | {r['ratio']:.2f} "
                     f"| {r['cold_cpu'] / r['floor_cpu']:.2f} | {r['tree_peak'] / MB:.0f} "
                     f"| {r['reopen']:.3f} ({r['reopen_cpu']:.3f}) "
                     f"| {r['read']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append", type=Path, default=None, help="a trace (repeatable)")
    ap.add_argument("--baseline", type=Path, default=None, metavar="DIR", help="another checkout, timed interleaved")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(REPO), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        sys.path.insert(0, args.code)
        print(json.dumps(child(*args.child)))
        return 0
    traces = args.trace or DEFAULT_TRACES
    if not traces[-1].exists() and traces[-1] == DEFAULT_TRACES[-1]:
        subprocess.run([sys.executable, str(HERE / "scale_trace.py"), "-n", "11"], check=True)
    codes = ([args.baseline.resolve()] if args.baseline else []) + [REPO]
    import compileall

    for code in codes:
        compileall.compile_dir(str(code / "tracetui"), quiet=1)
    load0 = os.getloadavg()
    t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = measure(traces, codes, args.rounds)
    print(f"{t0}; {machine()}; load average {load0[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
