"""How fast the browser starts: import time, first paint and the tree shown, per trace, cold and warm.

    python bench/bench_startup.py                        # the bundled sample, the 109k and 216k shared traces
    python bench/bench_startup.py --repeats 5 --trace FILE [--trace FILE ...]
    python bench/bench_startup.py --baseline ../main      # the same, interleaved with another checkout's code

Every number comes from a **fresh interpreter** (``python bench/bench_startup.py --child ...``),
started the way ``tracetui TRACE`` starts: it imports the command line's entry module, then the
browser's app module (as ``cli/entry.py`` does to open a trace), creates ``TraceApp([TRACE])``
and runs it headless under ``App.run_test()`` (the real app, the real load worker).  Measured
from just before the parent starts the child (interpreter start included), wall milliseconds:

* **imports**: until ``tracetui.cli.entry`` and ``tracetui.ui.app`` are imported;
* **first paint**: until the first screen (the loading screen with the file name and
  progress, or the tree if the app shows it at once) has been painted;
* **tree shown**: until the browser's screen (op tree, detail, timeline) has been painted;
* **cpu**: the child's own CPU time at the tree (decode workers and the parse child not
  included);
* **cold**: an empty cache directory (``TRACETUI_CACHE_DIR``); **warm**: the same
  directory again, once the cold run wrote its entry;
* **first** (``--first-open``): the first open after ``pip install -e .``: an empty cache
  directory and no bytecode of the package (every ``__pycache__`` under the checkout's
  ``tracetui/`` removed before the child, so Python compiles the package's modules again;
  the dependencies keep the bytecode pip wrote for them).  The children write and reuse
  bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says, as an installed tracetui does.

Screens are recognised by their class names (``LoadingScreen``, ``MainScreen``) on the app's
screen stack, polled every millisecond, so the script does not depend on where the ui
modules live; the mark is taken after the screen's next refresh (``call_after_refresh``).

Also printed: ``python -X importtime`` of the first screen's imports (the heaviest
modules, cumulative), and which heavy modules (pandas, dask, the job machinery, the
driver-call reader) are already imported when the tree is shown.  Medians over
``--repeats`` children; timings on a loaded machine vary (compare rows of one run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T_START = time.time()  # the child's own interpreter is up (before any tracetui import)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces" / "kineto"
DEFAULT_TRACES = [REPO / "sample_traces" / "h100_bert_inference.json.gz",
                  SHARED / "a100_cudagraph_nccl_rank0.json.gz",
                  SHARED / "v100x2_nccl_216k.json.gz"]
#: the modules the first screen needs (what ``tracetui TRACE`` imports before it paints)
FIRST_SCREEN_IMPORTS = ("tracetui.cli.entry", "tracetui.ui.app")
#: heavy modules that the first screen should not need, by what they are
HEAVY = {"pandas": "pandas", "dask": "dask", "job machinery": "tracetui.job.job",
         "driver-call reader": "tracetui.driver.loader", "export": "tracetui.export.report"}
SIZE = (120, 40)


# ---------------------------------------------------------------- the child (one start)
async def _run_app(trace: str, code: str) -> dict[str, float]:
    sys.path.insert(0, code)
    import importlib

    for mod in FIRST_SCREEN_IMPORTS:
        importlib.import_module(mod)
    marks: dict[str, float] = {"python": T_START, "imports": time.time()}
    from tracetui.ui.app import TraceApp

    app = TraceApp([trace])
    done = asyncio.Event()
    heavy: dict[str, bool] = {}

    def mark(name: str) -> None:
        marks.setdefault(name, time.time())
        if name == "MainScreen":
            marks["cpu"] = time.process_time()
            heavy.update({k: m in sys.modules for k, m in HEAVY.items()})
            done.set()

    async def watch() -> None:
        seen: set[str] = set()
        while not done.is_set():
            try:
                screen = app.screen
            except Exception:  # noqa: BLE001 -- no screen yet
                screen = None
            name = type(screen).__name__ if screen is not None else ""
            if name in ("LoadingScreen", "MainScreen") and name not in seen:
                seen.add(name)
                screen.call_after_refresh(mark, name)
            await asyncio.sleep(0.001)

    watcher = asyncio.create_task(watch())
    async with app.run_test(size=SIZE):
        await asyncio.wait_for(done.wait(), timeout=600)
    watcher.cancel()
    marks["first_paint"] = min(marks[k] for k in ("LoadingScreen", "MainScreen") if k in marks)
    marks["tree"] = marks["MainScreen"]
    return {**marks, **{f"heavy:{k}": float(v) for k, v in heavy.items()}}


def child(trace: str, code: str) -> int:
    marks = asyncio.run(_run_app(trace, code))
    sys.stdout.write(json.dumps(marks) + "\n")
    return 0


# ---------------------------------------------------------------- the parent
def one_start(trace: Path, cache_dir: str, code: Path) -> dict[str, float]:
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache_dir)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode written and reused, as after an install
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(trace), "--code", str(code)],
                          env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise SystemExit(f"child failed on {trace}:\n{proc.stderr[-3000:]}")
    marks = json.loads(proc.stdout.strip().splitlines()[-1])
    out = {k: (marks[k] - t0) * 1e3 for k in ("python", "imports", "first_paint", "tree")}
    out["cpu"] = marks["cpu"] * 1e3
    out.update({k: v for k, v in marks.items() if k.startswith("heavy:")})
    return out


def import_profile(checkout: Path, top: int = 12) -> list[tuple[str, float, float]]:
    """(module, self ms, cumulative ms) of the heaviest first-screen imports (``-X importtime``)."""
    code = f"import sys; sys.path.insert(0, {str(checkout)!r}); " + "; ".join(
        f"import {m}" for m in FIRST_SCREEN_IMPORTS)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        try:
            self_us, cum_us = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        rows.append((parts[2].strip(), self_us / 1e3, cum_us / 1e3))
    total = sum(s for _, s, _ in rows)
    rows.sort(key=lambda r: -r[2])
    return [("(all imports, self times summed)", total, total)] + rows[:top]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", action="append", default=None, help="a trace to open (repeatable)")
    ap.add_argument("--repeats", type=int, default=3, help="children per measurement (median)")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="another checkout (e.g. ../main): its code is timed too, interleaved, on the same traces")
    ap.add_argument("--first-open", action="store_true",
                    help="also the first open after an editable install: no bytecode of the package, empty cache")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(REPO), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.code)
    traces = [Path(t) for t in args.trace] if args.trace else DEFAULT_TRACES
    checkouts = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cpus; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; terminal {SIZE[0]}x{SIZE[1]}; "
          f"medians of {args.repeats} fresh processes; wall ms from process start")
    for label, checkout in checkouts:
        print(f"\nImports of the first screen, {label} ({checkout}; python -X importtime, top modules):\n")
        print(f"| {'module':<44} | {'self ms':>8} | {'cumulative ms':>13} |")
        print(f"|{'-' * 46}|{'-' * 10}|{'-' * 15}|")
        for name, self_ms, cum_ms in import_profile(checkout):
            print(f"| {name:<44} | {self_ms:>8.1f} | {cum_ms:>13.1f} |")
    print(f"\n| {'trace':<36} | {'code':<8} | {'cache':<5} | {'python':>6} | {'imports':>7} | {'first paint':>11} | "
          f"{'tree shown':>10} | {'cpu ms':>7} | heavy modules loaded at the tree |")
    print(f"|{'-' * 38}|{'-' * 10}|{'-' * 7}|{'-' * 8}|{'-' * 9}|{'-' * 13}|{'-' * 12}|{'-' * 9}|{'-' * 34}|")
    for trace in traces:
        results: dict[tuple[str, str], list[dict[str, float]]] = {
            (label, state): [] for label, _ in checkouts for state in ("first", "cold", "warm")
            if state != "first" or args.first_open}
        for _ in range(args.repeats):
            for label, checkout in checkouts:  # interleaved: load changes hit both alike
                if args.first_open:
                    for cached in (checkout / "tracetui").rglob("__pycache__"):
                        shutil.rmtree(cached, ignore_errors=True)
                    with tempfile.TemporaryDirectory(prefix="tracetui_startup_") as cache:
                        results[label, "first"].append(one_start(trace, cache, checkout))
                with tempfile.TemporaryDirectory(prefix="tracetui_startup_") as cache:
                    results[label, "cold"].append(one_start(trace, cache, checkout))
                    results[label, "warm"].append(one_start(trace, cache, checkout))
        for (label, state), runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in ("python", "imports", "first_paint", "tree",
                                                                        "cpu")}
            heavy = [k.split(":", 1)[1] for k in runs[0] if k.startswith("heavy:") and any(r[k] for r in runs)]
            print(f"| {trace.name[:36]:<36} | {label:<8} | {state:<5} | {med['python']:>6.0f} | "
                  f"{med['imports']:>7.0f} | {med['first_paint']:>11.0f} | {med['tree']:>10.0f} | {med['cpu']:>7.0f} | "
                  f"{', '.join(heavy) or 'none':<32} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
