"""How fast the browser answers: first paint, tree ready and every screen's open, per trace.

    python bench/bench_ui.py                         # the bundled sample, the 109k and 216k shared traces, the job
    python bench/bench_ui.py --repeats 5 --trace FILE [--trace FILE ...] [--job DIR]
    python bench/bench_ui.py --baseline ../main      # the same, interleaved with another checkout's code

Every number comes from a **fresh interpreter** (``python bench/bench_ui.py --child ...``)
running the real app headless under ``App.run_test()`` at 120x40 (the real load worker, the
real screens), started the way ``tracetui TRACE`` starts: the command line's entry module,
then the app module, then ``TraceApp([TRACE])``.  A first child fills a fresh cache
(``TRACETUI_CACHE_DIR``); the timed children reopen from it (warm cache).  Measured in each
child, as **wall** ms and **cpu** ms (``time.process_time()``: every thread of the process,
so the load worker and background workers count; the parse child and decode processes of a
cold load do not, and there are none warm):

* **first paint**: from just before the parent starts the child (interpreter start
  included) until the first screen (the loading screen with the file name and progress) has
  been painted; its cpu is the child's whole CPU time by then;
* **tree ready**: the same, until the browser's screen (op tree, detail, timeline) has been
  painted with the tree focused;
* each **screen**: from the key press until the screen it opens is on top and painted
  (``s`` summaries with their tables filled, ``?``/``f1`` help, ``e`` export dialog, ``a``
  every arg of the selected kernel, ``w`` warnings, ``ctrl+p`` the command palette, ``t`` the
  timeline focused, ``*`` every row below a lane of ~20k children expanded; ``i`` the icicle
  and ``b`` the bottom-up table of the thread with the most children, each in CPU time, then
  ``v`` to GPU time; the summaries' Plots tab; ``X`` the cross-rank screen of the shared
  8-rank job, ``p`` its arrivals plot), then Esc (or the key again) back to the tree.
  Background work started after the first paint (what the screens need, computed once per
  trace) is let finish first: the numbers are what a user who looks at the tree for a
  moment gets, and the **bg** row says what that background work cost.

Screens are recognised by their class names on the app's screen stack (polled every
millisecond; the mark is taken after the screen's next refresh).  Medians over
``--repeats`` children.  The machine these run on is shared: wall times vary with its
load, so compare the cpu column and rows of one run (``--baseline`` interleaves two
checkouts in one run and prints their ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"
DEFAULT_TRACES = [REPO / "sample_traces" / "h100_bert_inference.json.gz",
                  SHARED / "kineto" / "a100_cudagraph_nccl_rank0.json.gz",
                  SHARED / "kineto" / "v100x2_nccl_216k.json.gz"]
DEFAULT_JOB = SHARED / "multirank" / "param_dlrm_8ranks"
SIZE = (120, 40)
#: (label, key, screen class that shows it, key that closes it); "t" is a focus, not a screen
SCREENS = [("s summaries", "s", "SummariesScreen", "escape"),
           ("? help", "question_mark", "HelpScreen", "escape"),
           ("f1 help", "f1", "HelpScreen", "escape"),
           ("e export", "e", "ExportDialog", "escape"),
           ("a every arg", "a", "RawArgsScreen", "escape"),
           ("w warnings", "w", "WarningsScreen", "escape"),
           ("ctrl+p palette", "ctrl+p", "CommandPalette", "escape"),
           ("t timeline", "t", None, "t")]
#: the 10x tiling of the 216k trace (bench/scale_trace.py): its busiest thread has ~20k children, for ``*``
TILED = Path("/tmp/tracetui_bench/v100x2_nccl_216k_x10.json.gz")


# ---------------------------------------------------------------- the child (one start)
class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.time(), time.process_time()

    def since(self) -> tuple[float, float]:
        return (time.time() - self.wall) * 1e3, (time.process_time() - self.cpu) * 1e3


async def _until(app, cond, timeout: float = 120.0) -> None:
    """Wait until ``cond()`` holds, then until the screen on top has been refreshed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out; screen {type(app.screen).__name__}")
        await asyncio.sleep(0.001)
    painted = asyncio.Event()
    app.screen.call_after_refresh(painted.set)
    await asyncio.wait_for(painted.wait(), timeout)


def _top(app) -> str:
    try:
        return type(app.screen).__name__
    except Exception:  # noqa: BLE001 -- no screen yet
        return ""


async def _settle(app, pilot) -> float:
    """Let the background work after the first paint finish; its cpu ms."""
    t = time.process_time()
    for _ in range(600):
        busy = [w for w in app.workers if not w.is_finished and w.group not in ("load",)]
        for screen in app.screen_stack:
            busy += [w for w in getattr(screen, "workers", []) if not w.is_finished] if hasattr(screen, "workers") \
                else []
        if not busy:
            break
        await asyncio.sleep(0.05)
    await pilot.pause()
    return (time.process_time() - t) * 1e3


async def _run_trace(trace: str, code: str, screens: bool, job: bool, only_expand: bool) -> dict[str, list[float]]:
    sys.path.insert(0, code)
    import importlib

    importlib.import_module("tracetui.cli.entry")
    app_mod = importlib.import_module("tracetui.ui.app")
    out: dict[str, list[float]] = {}
    if job:  # as run_job_app does: the pool's helpers start before Textual takes over stderr
        from tracetui.job.executor import start_pool_helpers

        start_pool_helpers()
    app = app_mod.TraceApp([], job_inputs=[trace]) if job else app_mod.TraceApp([trace])
    marks: dict[str, float] = {}

    async def watch() -> None:
        while "MainScreen" not in marks:
            name = _top(app)
            if name in ("LoadingScreen", "MainScreen") and name not in marks:
                marks[name] = -1.0

                def mark(n: str = name) -> None:
                    marks[n] = time.time()
                    marks[n + ":cpu"] = time.process_time()

                app.screen.call_after_refresh(mark)
            await asyncio.sleep(0.001)

    watcher = asyncio.create_task(watch())
    async with app.run_test(size=SIZE) as pilot:
        await _until(app, lambda: marks.get("MainScreen", -1) > 0 and app.screen.focused is not None, 600)
        watcher.cancel()
        first = min((k for k in ("LoadingScreen", "MainScreen") if marks.get(k, -1) > 0), key=lambda k: marks[k])
        out["first paint"] = [marks[first], marks[first + ":cpu"] * 1e3]  # absolute: the parent subtracts its t0
        out["tree ready"] = [marks["MainScreen"], marks["MainScreen:cpu"] * 1e3]
        out["bg"] = [0.0, await _settle(app, pilot)]
        if not screens:
            return out
        main = app.screen
        if job:
            await _time_screen(app, pilot, out, "X cross-rank", "X", "JobSummaryScreen", "escape")
            await pilot.press("X")
            await _until(app, lambda: _top(app) == "JobSummaryScreen")
            await _time_screen(app, pilot, out, "X p arrivals plot", "p", "PlotsScreen", "escape")
            return out
        # a kernel selected (``a`` shows its args): the trace's first GPU event
        import numpy as np

        from tracetui.kineto.kinds import GPU_KINDS

        kt = main.source.kt
        gpu = np.flatnonzero(np.isin(kt.kind, [int(k) for k in GPU_KINDS]))
        if gpu.size:
            main.select(int(gpu[0]))
            await pilot.pause()
        for label, key, cls, close in [] if only_expand else SCREENS:
            await _time_screen(app, pilot, out, label, key, cls, close)
        if not only_expand:
            await _time_pictures(app, pilot, out)
        await _time_expand(app, pilot, out)
    return out


async def _time_screen(app, pilot, out, label, key, cls, close) -> None:
    main = app.screen
    clock = Clock()
    press = asyncio.create_task(pilot.press(key))
    if cls is None:  # t: the timeline takes the focus
        await _until(app, lambda: main.timeline.has_focus)
    else:
        await _until(app, lambda: _top(app) == cls and _ready(app.screen))
    out[label] = list(clock.since())
    await press
    await pilot.pause()
    await pilot.press(close)
    await _until(app, lambda: app.screen is main and (cls is not None or main.op_tree.has_focus))
    await pilot.pause()


def _ready(screen) -> bool:
    """A screen filled in: the summaries' tables have their rows."""
    if type(screen).__name__ == "SummariesScreen":  # its tables (RowTable, or DataTables before issue 26)
        return any(getattr(w, "row_count", 0) for w in screen.query("RowTable, DataTable"))
    return True


async def _time_pictures(app, pilot, out) -> None:
    """``i`` and ``b`` on the lane with the most children (its tree computed on the key), ``v``
    there (the GPU time's tree), and the summaries' Plots tab (the plots computed in the
    background with the tables, drawn on the key)."""
    main = app.screen
    src = main.source
    roots = [int(r) for r in src.root_nodes()]
    sizes = [(len(src.child_nodes(r)), r) for r in roots]
    if not sizes:
        return
    main.op_tree.select_node(max(sizes)[1])
    await pilot.pause()
    for label, key, cls in (("i icicle", "i", "IcicleScreen"), ("b bottom-up", "b", "BottomUpScreen")):
        clock = Clock()
        press = asyncio.create_task(pilot.press(key))
        await _until(app, lambda c=cls: _top(app) == c)
        out[label] = list(clock.since())
        await press
        screen = app.screen
        clock = Clock()
        await pilot.press("v")
        await _until(app, lambda s=screen: s.mode == "gpu")
        out[f"{label} v (GPU)"] = list(clock.since())
        await pilot.press("q")
        await _until(app, lambda: app.screen is main)
        await pilot.pause()
    await pilot.press("s")
    await _until(app, lambda: _top(app) == "SummariesScreen" and _ready(app.screen))
    summ = app.screen
    if summ.plots:
        clock = Clock()
        await pilot.press(str(len(summ.tables) + 1))
        await _until(app, lambda: summ.plots_shown and summ.query_one("PlotPanel PlotWidget").model is not None)
        out["s plots tab"] = list(clock.since())
    await pilot.press("escape")
    await _until(app, lambda: app.screen is main)
    await pilot.pause()


async def _time_expand(app, pilot, out) -> None:
    """``*`` on the root with the most children (a lane): every row below it expanded, breadth
    first, up to the tree's limit (100,000 rows)."""
    main = app.screen
    src = main.source
    roots = [int(r) for r in src.root_nodes()]
    sizes = [(len(src.child_nodes(r)), r) for r in roots]
    n, lane = max(sizes) if sizes else (0, -1)
    if n < 2:
        return
    tree = main.op_tree
    tree.select_node(lane)
    await pilot.pause()
    before = tree.row_count
    clock = Clock()
    press = asyncio.create_task(pilot.press("asterisk"))
    await _until(app, lambda: tree.row_count > before + n)
    out[f"* lane of {n:,} children"] = list(clock.since())
    await press
    await pilot.press("minus")
    await pilot.pause()


def child(trace: str, code: str, screens: bool, job: bool, only_expand: bool) -> int:
    out = asyncio.run(_run_trace(trace, code, screens, job, only_expand))
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


# ---------------------------------------------------------------- the parent
def one_run(trace: Path, cache_dir: str, code: Path, screens: bool, job: bool,
            only_expand: bool = False) -> dict[str, list[float]]:
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache_dir)
    t0 = time.time()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(trace), "--code", str(code)]
    cmd += ["--screens"] if screens else []
    cmd += ["--as-job"] if job else []
    cmd += ["--only-expand"] if only_expand else []
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"child failed on {trace}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in ("first paint", "tree ready"):
        out[k][0] = (out[k][0] - t0) * 1e3  # from just before the child was started
    return out


def tiled_trace(copies: int) -> Path:
    """The ``copies``-times tiling of the 216k trace (made once, ~15 s per 10 copies)."""
    out = TILED.with_name(f"v100x2_nccl_216k_x{copies}.json.gz")
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "bench" / "scale_trace.py"), str(DEFAULT_TRACES[2]), "-n",
                        str(copies), "-o", str(out)], check=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", action="append", default=None, help="a trace to open (repeatable)")
    ap.add_argument("--job", default=str(DEFAULT_JOB), help="a job folder for X ('' : none)")
    ap.add_argument("--tiled", type=int, default=10,
                    help="also time the N-times tiling of the 216k trace (its busiest thread: ~2,000 x N children; "
                         "made once by bench/scale_trace.py under /tmp/tracetui_bench; 0: skip)")
    ap.add_argument("--repeats", type=int, default=3, help="timed children per trace (median)")
    ap.add_argument("--baseline", default=None, metavar="DIR", help="another checkout, timed interleaved")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(REPO), help=argparse.SUPPRESS)
    ap.add_argument("--screens", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--as-job", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only-expand", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.code, args.screens, args.as_job, args.only_expand)
    # (trace, a job, only the * row)
    traces = [(Path(t), False, False) for t in args.trace] if args.trace else [(t, False, False)
                                                                                for t in DEFAULT_TRACES]
    if args.tiled and not args.trace:
        traces.append((tiled_trace(args.tiled), False, True))
    if args.job:
        traces.append((Path(args.job), True, False))
    checkouts = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cpus; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; terminal {SIZE[0]}x{SIZE[1]}; medians of "
          f"{args.repeats} fresh processes, warm cache; first paint and tree ready from the process start")
    for trace, job, only_expand in traces:
        results: dict[str, dict[str, list[list[float]]]] = {label: {} for label, _ in checkouts}
        with tempfile.TemporaryDirectory(prefix="tracetui_ui_") as cache:
            for _label, checkout in checkouts:
                one_run(trace, cache, checkout, False, job, only_expand)  # fills the cache
            for _ in range(args.repeats):
                for label, checkout in checkouts:  # interleaved: load changes hit both alike
                    for k, v in one_run(trace, cache, checkout, True, job, only_expand).items():
                        results[label].setdefault(k, []).append(v)
        print(f"\n{trace.name}{' (job)' if job else ''}:\n")
        head = "| what | " + " | ".join(f"{lb} wall ms | {lb} cpu ms" for lb, _ in checkouts)
        head += " | cpu this/baseline |" if len(checkouts) > 1 else " |"
        print(head)
        print("|" + "---|" * (1 + 2 * len(checkouts) + (1 if len(checkouts) > 1 else 0)))
        for what in results["this"]:
            cells = []
            meds = []
            for label, _ in checkouts:
                runs = results[label].get(what, [])
                if not runs:
                    cells += ["", ""]
                    meds.append(None)
                    continue
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                cells += [f"{wall:,.0f}", f"{cpu:,.0f}"]
                meds.append(cpu)
            if len(checkouts) > 1:
                cells.append(f"{meds[0] / meds[1]:.2f}" if meds[1] else "")
            print(f"| {what} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
