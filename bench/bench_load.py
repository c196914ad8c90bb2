"""Load benchmark: one table for the largest shared trace and its 1x/4x/10x tilings.

    python bench/bench_load.py                 # sizes 1,4,10, HTA when /tmp/htavenv has it
    python bench/bench_load.py --sizes 1,4 --quick

Every number comes from a fresh child process (so peak memory is that measurement's
own RSS high-water mark, and nothing is warm in Python):

- events: entries of ``traceEvents`` in the file; file MB: size on disk (gzip);
- CPU s: the process's CPU time over the same interval as floor, load and cold open
  (``time.process_time``; decode workers and the parse child not included, so comparable to
  the wall time only for a trace decoded in one process): on a machine that other work
  keeps busy, the ratio of CPU times is what the ratio of wall times would be on an idle one;
- floor: gunzip + msgspec typed decode of every event (args left raw), nothing else; the
  gunzip is the loader's own (ISA-L via ``isal``, zlib only for cut or corrupt files);
  "zlib gunzip" times the same bytes through Python's zlib, what the floor paid before;
- load: ``load_kineto`` (read + decode + build), split into decode (read+decode) /
  build (lanes, host nesting) / link (GPU launch links, CSR tree, cpu_op map, fwd/bwd),
  from the loader's own progress callbacks;
- peak: RSS high-water mark (VmHWM) of the load child; held: RSS after load (after gc)
  minus the RSS before loading (imports done);
- decode procs: processes that decode the events (``kineto/parallel.py``: forked
  workers for big traces, as many as CPUs allow, at most 4);
- tree peak: the highest sum of PSS (proportional set size) over the measurement
  process and all its descendants (parse child, decode workers), sampled every 20 ms:
  counts decode workers, which one process's VmHWM does not, and pages they share once;
- cold open: ``tracetui.store.traces.load_cached`` with an empty cache (load + cache write; big
  traces are parsed by a child process and mapped), its peak (max of the process and
  its parse child), its tree peak and held RSS; for traces decoded by several
  processes, the same cold open again with ``TRACETUI_DECODE_WORKERS=1`` ("1 proc");
  cached open: the same call again (median of 3 children), its held RSS;
- summary: wall time of ``python -m tracetui summary FILE`` (process start to exit),
  empty cache / warm cache; only if ``tracetui.analysis.summary`` exists;
- TUI: the browser headless (``App.run_test``, 120x40) with an empty cache: seconds to the
  painted op tree (navigable) and to the cursor on the first match of a search for the
  most frequent kernel name among the rows a search can find (searchable; the query and
  its match count are printed under the table), and the process's peak RSS;
- ``--repeat N``: N interleaved rounds of floor, load, cold open, TUI and summary cold, each
  timing the minimum of its rounds (the spread is printed: min / median / max);
- targets: a second table checks issue 15's targets per trace (ratios to the floor of the
  same run, peaks, held memory, the HTA speedup) and says met or missed by how much;
- TraceLens: AMD's TraceLens ``TreePerfAnalyzer.from_file`` (the tree its reports start
  from), time and peak RSS, with the same interpreter as HTA when it can import TraceLens;
- HTA: HolisticTraceAnalysis ``TraceAnalysis`` load time and peak RSS, run with the
  interpreter of a separate venv (``--hta-python``, default /tmp/htavenv/bin/python)
  when it can import ``hta``.

Tilings are made by ``bench/scale_trace.py`` into /tmp/tracetui_bench if missing.  The
package is byte-compiled first (``compileall``), as an installed package is: with
PYTHONDONTWRITEBYTECODE=1 every measured process would otherwise compile its sources.
``--sizes ""`` measures the source trace alone.
Times are seconds, memory MB (2**20 bytes).
"""

from __future__ import annotations

import argparse
import compileall
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from rss import peak_rss_bytes  # noqa: E402
from scale_trace import DEFAULT_OUT_DIR, DEFAULT_SOURCE, default_output  # noqa: E402

HTA_PYTHON = "/tmp/htavenv/bin/python"
MB = 2**20


# ------------------------------------------------------------------ child measurements
def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def _children_peak() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def child_floor(path: str) -> dict:
    import msgspec

    from tracetui.io.files import read_trace_bytes
    from tracetui.kineto.schema import Event as _Event  # the loader's own typed struct

    c0 = time.process_time()
    t0 = time.perf_counter()
    data = read_trace_bytes(path).data
    t1 = time.perf_counter()
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    evs = msgspec.json.decode(top["traceEvents"], type=list[_Event])
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    zlib_gunzip = None
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":  # the same bytes through Python's zlib, for the gunzip row
        import zlib

        t3 = time.perf_counter()
        zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
        zlib_gunzip = time.perf_counter() - t3
    return {"gunzip": t1 - t0, "decode": t2 - t1, "floor": t2 - t0, "events": len(evs), "json_bytes": len(data),
            "zlib_gunzip": zlib_gunzip, "cpu": cpu}


def child_load(path: str) -> dict:
    from tracetui.kineto import load_kineto

    gc.collect()
    base = _rss()
    marks: dict[str, float] = {}

    def progress(msg: str, frac: float) -> None:
        marks.setdefault(msg, time.perf_counter())

    import tracetui.kineto.parallel as parallel

    workers: list[int] = []
    real = parallel.decode_workers
    parallel.decode_workers = lambda n: workers.append(real(n)) or workers[-1]  # what the decode chose
    c0 = time.process_time()
    t0 = time.perf_counter()
    kt = load_kineto(path, progress=progress)
    t1 = time.perf_counter()
    cpu = time.process_time() - c0
    gc.collect()
    held = _rss() - base
    m = lambda k, d: marks.get(k, d)  # noqa: E731
    t_build = m("building", t1)
    t_links = m("gpu links", t1)
    return {"load": t1 - t0, "decode": t_build - t0, "build": t_links - t_build, "link": t1 - t_links,
            "peak": peak_rss_bytes(), "held": held, "n_events": kt.n_events, "workers": workers[0] if workers else 1,
            "cpu": cpu}


def child_open(path: str) -> dict:
    from tracetui.store.traces import load_cached

    gc.collect()
    base = _rss()
    c0 = time.process_time()
    t0 = time.perf_counter()
    lt = load_cached([path], use_cache=True)
    t1 = time.perf_counter()
    cpu = time.process_time() - c0
    gc.collect()
    kt = lt.kineto
    return {"open": t1 - t0, "held": _rss() - base, "peak": peak_rss_bytes(), "child_peak": _children_peak(),
            "n_events": kt.n_events, "cpu": cpu}


def search_query(source) -> str:
    """What the TUI row searches for: the name of the most frequent GPU kernel among the
    rows the search can find (in the tree, python rows hidden), else of the most frequent
    such event; the whole name, so it is a plain substring of every row it names."""
    import numpy as np

    from tracetui.kineto.kinds import Kind

    kt = source.kt
    n = kt.n_events
    findable = source.order.pre[:n] >= 0
    if source.hide_python:
        findable &= ~source.is_python[:n]
    kernels = findable & (kt.kind[:n] == int(Kind.KERNEL))
    pick = kernels if kernels.any() else findable
    ids, counts = np.unique(kt.name_id[:n][pick], return_counts=True)
    return kt.names[int(ids[int(np.argmax(counts))])]


def child_tui(path: str) -> dict:
    """The browser, headless, cold cache: seconds from creating the app until the op tree is
    painted (navigable) and until a search (:func:`search_query`: the most frequent kernel
    name) has found its matches and moved the cursor to the first (searchable), measured in
    the app's own event loop."""
    import asyncio

    from bench_keys import install_paint_marks

    from tracetui.ui.app import MainScreen, TraceApp

    marks: dict[str, float] = {}
    install_paint_marks(marks)

    async def run() -> dict:
        t0 = time.perf_counter()
        app = TraceApp([path])
        async with app.run_test(size=(120, 40)) as pilot:
            while "main" not in marks:
                await asyncio.sleep(0.005)
            screen = app.screen
            assert isinstance(screen, MainScreen)
            query = search_query(screen.source)
            screen.run_search(query)
            t_search = time.perf_counter()
            found = int(screen.matches.size)
            await pilot.pause()
        return {"navigable": marks["main"] - t0, "searchable": t_search - t0, "search_query": query,
                "search_matches": found, "peak": peak_rss_bytes()}

    return asyncio.run(run())


CHILDREN = {"floor": child_floor, "load": child_load, "open": child_open, "tui": child_tui}


# ------------------------------------------------------------------ parent
#: cold and cached runs must agree on the loader fingerprint even if sources are edited meanwhile
PIN = {"TRACETUI_CODE_FINGERPRINT": f"bench-{os.getpid()}-{int(time.time())}"}


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_pss(root: int) -> int:
    """Sum of the proportional set size (bytes) of ``root`` and all its descendants: memory
    the process tree takes, shared pages (forked workers, mapped files) counted once."""
    kids = _children_map()
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def run_child(kind: str, path: str, cache_dir: Path, timeout: float = 900, **env_extra: str) -> dict:
    """Run a measurement child; adds ``tree_peak``: the highest :func:`tree_pss` of the child
    and its descendants (parse child, decode workers), sampled every 20 ms."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(cache_dir), **PIN, **env_extra)
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, path], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], tree_pss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"child {kind} {path} failed:\n{stderr[-3000:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    res["tree_peak"] = peak[0]
    return res


def wall(cmd: list[str], env: dict, timeout: float = 900) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         timeout=timeout)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return dt


HTA_SCRIPT = r"""
import json, os, resource, sys, time, logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
p = os.path.abspath(sys.argv[1])
t0 = time.perf_counter()
ta = TraceAnalysis(trace_files={0: p}, trace_dir=os.path.dirname(p))
t1 = time.perf_counter()
hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1]) * 1024
peak = max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
print(json.dumps({"load": t1 - t0, "peak": peak, "rows": len(ta.t.get_trace(0))}))
"""


TRACELENS_SCRIPT = r"""
import json, os, resource, sys, time, logging
logging.disable(logging.CRITICAL)
from TraceLens import TreePerfAnalyzer
p = os.path.abspath(sys.argv[1])
t0 = time.perf_counter()
analyzer = TreePerfAnalyzer.from_file(p)
t1 = time.perf_counter()
hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1]) * 1024
print(json.dumps({"load": t1 - t0, "peak": hwm, "rows": len(analyzer.tree.events)}))
"""


def peer_available(py: str, probe: str) -> bool:
    """Whether the peer venv's interpreter ``py`` can run ``probe`` (an import)."""
    if not Path(py).exists():
        return False
    return subprocess.run([py, "-c", probe], capture_output=True).returncode == 0


def run_peer(py: str, script: str, name: str, path: str) -> dict:
    """Run a peer's measuring ``script`` on ``path``; its last stdout line is the JSON result."""
    out = subprocess.run([py, "-c", script, path], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed on {path}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def hta_available(py: str) -> bool:
    return peer_available(py, "import hta.trace_analysis")


def have_summary() -> bool:
    try:
        import tracetui.analysis.summary  # noqa: F401
    except ImportError:
        return False
    return True


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def measure(label: str, path: str, args: argparse.Namespace, hta_py: str | None, summary: bool) -> dict:
    row: dict = {"trace": label, "file_mb": os.path.getsize(path) / MB}
    cdir = Path(args.workdir) / f"cache-{Path(path).name}"
    log = lambda msg: print(f"  [{label}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    fl = run_child("floor", path, cdir)
    row.update(events=fl["events"], json_mb=fl["json_bytes"] / MB, gunzip=fl["gunzip"], floor=fl["floor"],
               floor_cpu=fl["cpu"])
    if fl["zlib_gunzip"] is not None:
        row["zlib_gunzip"] = fl["zlib_gunzip"]
    log(f"floor {fl['floor']:.2f}s")
    ld = run_child("load", path, cdir)
    row.update(load=ld["load"], decode=ld["decode"], build=ld["build"], link=ld["link"], peak=ld["peak"] / MB,
               sys_peak=ld["tree_peak"] / MB, held=ld["held"] / MB, n_events=ld["n_events"],
               workers=ld["workers"], load_cpu=ld["cpu"])
    log(f"load {ld['load']:.2f}s peak {ld['peak'] / MB:.0f} MB, tree {ld['tree_peak'] / MB:.0f} MB, "
        f"{ld['workers']} decode processes")
    if ld["workers"] > 1:  # the same cold open decoded in one process, for comparison
        shutil.rmtree(cdir, ignore_errors=True)
        serial = run_child("open", path, cdir, TRACETUI_DECODE_WORKERS="1")
        row.update(cold_open_1=serial["open"], cold_sys_peak_1=serial["tree_peak"] / MB)
        log(f"cold open in one process {serial['open']:.2f}s, tree {serial['tree_peak'] / MB:.0f} MB")
    shutil.rmtree(cdir, ignore_errors=True)
    cold = run_child("open", path, cdir)
    row.update(cold_open=cold["open"], cold_open_cpu=cold["cpu"], cold_held=cold["held"] / MB,
               cold_peak=max(cold["peak"], cold["child_peak"]) / MB, cold_sys_peak=cold["tree_peak"] / MB)
    cached = [run_child("open", path, cdir) for _ in range(1 if args.quick else 3)]
    row.update(cached_open=statistics.median(c["open"] for c in cached),
               cached_held=statistics.median(c["held"] for c in cached) / MB,
               cache_mb=sum(f.stat().st_size for f in cdir.glob("*.ttc")) / MB)
    log(f"cold open {cold['open']:.2f}s cached {row['cached_open']:.3f}s")
    shutil.rmtree(cdir, ignore_errors=True)
    tui = run_child("tui", path, cdir)
    row.update(tui_navigable=tui["navigable"], tui_searchable=tui["searchable"], tui_peak=tui["peak"] / MB,
               search_query=tui["search_query"], search_matches=tui["search_matches"])
    log(f"TUI navigable {tui['navigable']:.2f}s, searchable {tui['searchable']:.2f}s "
        f"({tui['search_matches']:,} matches of {tui['search_query']!r})")
    if summary:
        env = summary_env(cdir)
        cmd = [sys.executable, "-m", "tracetui", "summary", path]
        shutil.rmtree(cdir, ignore_errors=True)
        row["summary_cold"] = wall(cmd, env)
        row["summary_cached"] = statistics.median(wall(cmd, env) for _ in range(1 if args.quick else 3))
        log(f"summary {row['summary_cold']:.2f}s / {row['summary_cached']:.2f}s")
    if args.repeat > 1:
        repeat_timed(row, label, path, cdir, args.repeat - 1, summary)
    if hta_py and peer_available(hta_py, "from TraceLens import TreePerfAnalyzer"):
        tl = run_peer(hta_py, TRACELENS_SCRIPT, "TraceLens", path)
        row.update(tracelens_load=tl["load"], tracelens_peak=tl["peak"] / MB)
        log(f"TraceLens {tl['load']:.1f}s {tl['peak'] / MB:.0f} MB")
    if hta_py:
        h = run_peer(hta_py, HTA_SCRIPT, "HTA", path)
        row.update(hta_load=h["load"], hta_peak=h["peak"] / MB)
        log(f"HTA {h['load']:.1f}s {h['peak'] / MB:.0f} MB")
    shutil.rmtree(cdir, ignore_errors=True)
    return row


def summary_env(cdir: Path) -> dict:
    """Environment of a measured ``python -m tracetui summary``: this checkout's package
    (not whatever ``tracetui`` the working directory holds), the pinned fingerprint."""
    return dict(os.environ, TRACETUI_CACHE_DIR=str(cdir), PYTHONPATH=str(REPO), **PIN)


#: the timings ``--repeat`` measures again (their ratios are issue 15's targets)
TIMED = ("floor", "load", "cold_open", "tui_navigable", "tui_searchable", "summary_cold")


def repeat_timed(row: dict, label: str, path: str, cdir: Path, rounds: int, summary: bool) -> None:
    """``rounds`` more rounds of the timed measurements, interleaved (floor, load, cold open,
    TUI, summary cold, then again), each in a fresh child; every timing becomes the minimum
    over all rounds (the least disturbed by other work on a shared machine) and
    ``row["samples"]`` keeps every value for the spread table."""
    samples = {k: [row[k]] for k in TIMED if k in row}
    cpus = {k: [row[k]] for k in ("floor_cpu", "load_cpu", "cold_open_cpu") if k in row}
    cmd = [sys.executable, "-m", "tracetui", "summary", path]
    for i in range(rounds):
        fl = run_child("floor", path, cdir)
        samples["floor"].append(fl["floor"])
        ld = run_child("load", path, cdir)
        samples["load"].append(ld["load"])
        shutil.rmtree(cdir, ignore_errors=True)
        op = run_child("open", path, cdir)
        samples["cold_open"].append(op["open"])
        for k, res in (("floor_cpu", fl), ("load_cpu", ld), ("cold_open_cpu", op)):
            if k in cpus:
                cpus[k].append(res["cpu"])
        shutil.rmtree(cdir, ignore_errors=True)
        tui = run_child("tui", path, cdir)
        samples["tui_navigable"].append(tui["navigable"])
        samples["tui_searchable"].append(tui["searchable"])
        if summary:
            shutil.rmtree(cdir, ignore_errors=True)
            samples["summary_cold"].append(wall(cmd, summary_env(cdir)))
        print(f"  [{label}] round {i + 2}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items()),
              file=sys.stderr, flush=True)
    row.update({k: min(v) for k, v in samples.items()})
    row.update({k: min(v) for k, v in cpus.items()})
    row["samples"] = samples


def spread_table(rows: list[dict]) -> str:
    """min / median / max of every repeated timing, and the ratio of each to the floor's min."""
    lines = ["| trace | timing | runs | min s | median s | max s | min / floor min |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for k, v in r.get("samples", {}).items():
            lines.append(f"| {r['trace']} | {k} | {len(v)} | {min(v):.2f} | {statistics.median(v):.2f} | "
                         f"{max(v):.2f} | {min(v) / r['floor']:.2f} |")
    return "\n".join(lines)


COLUMNS = [
    ("trace", "trace", "{}"), ("events", "events", "{:,}"), ("file_mb", "file MB", "{:.0f}"),
    ("json_mb", "JSON MB", "{:.0f}"), ("gunzip", "gunzip s", "{:.2f}"), ("zlib_gunzip", "zlib gunzip s", "{:.2f}"),
    ("floor", "floor s", "{:.2f}"), ("load", "load s", "{:.2f}"),
    ("decode", "decode s", "{:.2f}"), ("build", "build s", "{:.2f}"), ("link", "link s", "{:.2f}"),
    ("workers", "decode procs", "{}"), ("peak", "peak MB", "{:.0f}"), ("sys_peak", "tree peak MB", "{:.0f}"),
    ("held", "held MB", "{:.0f}"), ("cold_open", "cold open s", "{:.2f}"),
    ("cold_peak", "cold open peak MB", "{:.0f}"), ("cold_sys_peak", "cold open tree peak MB", "{:.0f}"),
    ("cold_held", "cold open held MB", "{:.0f}"), ("cold_open_1", "cold open 1 proc s", "{:.2f}"),
    ("cold_sys_peak_1", "cold open 1 proc tree peak MB", "{:.0f}"),
    ("floor_cpu", "floor CPU s", "{:.2f}"), ("load_cpu", "load CPU s", "{:.2f}"),
    ("cold_open_cpu", "cold open CPU s", "{:.2f}"),
    ("cached_open", "cached open s", "{:.3f}"), ("cached_held", "cached held MB", "{:.0f}"),
    ("tui_navigable", "TUI navigable s", "{:.2f}"), ("tui_searchable", "TUI searchable s", "{:.2f}"),
    ("tui_peak", "TUI peak MB", "{:.0f}"),
    ("summary_cold", "summary cold s", "{:.2f}"), ("summary_cached", "summary cached s", "{:.2f}"),
    ("hta_load", "HTA load s", "{:.1f}"), ("hta_peak", "HTA peak MB", "{:.0f}"),
    ("tracelens_load", "TraceLens tree s", "{:.1f}"), ("tracelens_peak", "TraceLens peak MB", "{:.0f}"),
]


#: issue 15's targets: (label, value of a row or None, limit, unit); ratios are against the
#: floor of the same row, measured in the same run
def targets(row: dict) -> list[tuple[str, float | None, float, str]]:
    floor = row["floor"]
    ratio = lambda k: row[k] / floor if k in row and floor > 0 else None  # noqa: E731
    peaks = [row[k] for k in ("peak", "cold_peak", "cold_sys_peak", "tui_peak") if k in row]
    hta = row["hta_load"] / row["cold_open"] if "hta_load" in row else None
    tracelens = row["tracelens_load"] / row["cold_open"] if "tracelens_load" in row else None
    return [
        ("cold open (API cache path) / floor", ratio("cold_open"), 1.5, "x"),
        ("load_trace (API) / floor", ratio("load"), 1.5, "x"),
        ("TUI navigable / floor", ratio("tui_navigable"), 2.0, "x"),
        ("TUI searchable / floor", ratio("tui_searchable"), 2.0, "x"),
        ("summary cold / floor", ratio("summary_cold"), 2.0, "x"),
        ("peak MB, every path", max(peaks) if peaks else None, 1536.0, "MB"),
        ("held MB (API load)", row.get("held"), 800.0, "MB"),
        ("HTA load / cold open", hta, 10.0, "x (at least)"),
        ("TraceLens tree / cold open", tracelens, 10.0, "x (at least)"),
    ]


def targets_table(rows: list[dict]) -> str:
    """One line per target and trace: the value, the limit, met or missed (by how much)."""
    lines = ["| trace | target | value | limit | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        for label, value, limit, unit in targets(r):
            if value is None:
                verdict, shown = "not measured", "-"
            else:
                at_least = unit.endswith("(at least)")
                ok = value >= limit if at_least else value <= limit
                shown = f"{value:.2f}" if unit.startswith("x") else f"{value:.0f}"
                verdict = "met" if ok else f"missed by {abs(value / limit - 1) * 100:.0f}%"
            lines.append(f"| {r['trace']} | {label} | {shown} | {limit:g} {unit} | {verdict} |")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    cols = [c for c in COLUMNS if any(c[0] in r for r in rows)]
    lines = ["| " + " | ".join(h for _, h, _ in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(fmt.format(r[k]) if k in r else "-" for k, _, fmt in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,4,10", help="tiling factors (default 1,4,10)")
    ap.add_argument("--quick", action="store_true", help="one run per cached measurement, no HTA")
    ap.add_argument("--src", default=str(DEFAULT_SOURCE), help="source trace (default: the largest shared one)")
    ap.add_argument("--workdir", default=str(DEFAULT_OUT_DIR), help="tilings and cache folders")
    ap.add_argument("--hta-python", default=HTA_PYTHON, help="python of a venv with HolisticTraceAnalysis")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of the timed measurements (floor, load, cold open, TUI, summary cold); "
                         "each timing is the minimum over the rounds (default 1)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](args.child[1])))
        return 0
    # byte-compiled modules, as a pip install leaves them (PYTHONDONTWRITEBYTECODE=1 would
    # otherwise make every measured process compile the package's sources again: ~0.2 s)
    compileall.compile_dir(str(REPO / "tracetui"), quiet=1)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    src = Path(args.src)
    hta_py = None if (args.quick or args.no_hta or not hta_available(args.hta_python)) else args.hta_python
    summary = have_summary()
    files = [(src.name, str(src))]
    for n in sizes:
        out = default_output(src, n)
        if args.workdir != str(DEFAULT_OUT_DIR):
            out = Path(args.workdir) / out.name
        if not out.exists():  # in a child: this process stays small (see _peak)
            print(f"making {out} ...", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, str(HERE / "scale_trace.py"), str(src), "-n", str(n), "-o", str(out)],
                           check=True, stdout=subprocess.DEVNULL)
        files.append((f"{n}x tiling", str(out)))
    rows = []
    for label, path in files:
        rows.append(measure(label, path, args, hta_py, summary))
    print(f"# tracetui load benchmark, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"# machine: {machine()}")
    print(f"# HTA: {'yes (' + hta_py + ')' if hta_py else 'not run'}; summary: {'yes' if summary else 'no'}")
    print(table(rows))
    for r in rows:
        if "search_query" in r:
            print(f"# TUI search on {r['trace']}: {r['search_query']!r}, {r['search_matches']:,} matches")
    if any("samples" in r for r in rows):
        print()
        print(spread_table(rows))
    print()
    print(targets_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
