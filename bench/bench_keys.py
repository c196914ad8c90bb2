"""Benchmark the browser app on a big trace: first paint, time to a navigable tree, key latency.

    python bench/bench_keys.py                     # 10x tiling of v100x2_nccl_216k (~2.2M file events)
    python bench/bench_keys.py --trace BIG.json.gz [--size 200x50] [--repeats 10]

The default trace is made once with ``bench/scale_trace.py`` under /tmp/tracetui_ui_bench.
The app runs headless (``App.run_test``) and real keys go through Textual's Pilot.

Measured (milliseconds):

* **first paint**: from creating the app until the loading screen has been painted;
* **navigable**: from creating the app until the browser (op tree with rows) has been
  painted: load (through the on-disk cache when warm) + link + index + first frame;
* per key, **wall**: the Pilot round trip (key in, handlers run, screen refreshed, app idle
  again) and **cpu**: process CPU time spent in that round trip.  The wall time includes
  Pilot's own idle detection (a fixed ~50-100 ms); the row ``baseline`` (a key bound to
  nothing) shows it, so the app's own cost is roughly ``key - baseline``.  Medians over
  ``--repeats`` presses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetui.ui.app import MainScreen, TraceApp  # noqa: E402
from tracetui.ui.browser.loading_screen import LoadingScreen  # noqa: E402

DEFAULT_OUT = Path("/tmp/tracetui_ui_bench")
SOURCE = REPO.parent / "shared" / "traces" / "kineto" / "v100x2_nccl_216k.json.gz"


def default_trace(copies: int) -> Path:
    out = DEFAULT_OUT / f"v100x2_nccl_216k_x{copies}.json.gz"
    if not out.exists():
        DEFAULT_OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "bench" / "scale_trace.py"), str(SOURCE), "-n", str(copies),
                        "-o", str(out)], check=True)
    return out


async def timed_press(pilot, key: str) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    await pilot.press(key)
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


async def measure(pilot, keys: list[str], repeats: int, before=None) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        if before is not None:
            await before()
        for key in keys[:-1]:
            await pilot.press(key)
        wall, cpu = await timed_press(pilot, keys[-1])
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def install_paint_marks(marks: dict[str, float]) -> None:
    """Record when the loading screen and the browser are first painted (the callbacks run
    after the screen's first refresh), independent of Pilot's idle detection."""

    def loading_mounted(screen: LoadingScreen) -> None:
        screen.call_after_refresh(lambda: marks.setdefault("loading", time.perf_counter()))

    LoadingScreen.on_mount = loading_mounted  # type: ignore[attr-defined]
    original = MainScreen.on_mount

    def main_mounted(screen: MainScreen) -> None:
        original(screen)
        screen.call_after_refresh(lambda: marks.setdefault("main", time.perf_counter()))

    MainScreen.on_mount = main_mounted  # type: ignore[method-assign]


async def run(trace: str, size: tuple[int, int], repeats: int) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    marks: dict[str, float] = {}
    install_paint_marks(marks)
    t0 = time.perf_counter()
    app = TraceApp([trace])
    async with app.run_test(size=size) as pilot:
        while "main" not in marks:
            await asyncio.sleep(0.005)
        await pilot.pause()
        rows.append(("first paint (loading screen)", f"{(marks['loading'] - t0) * 1e3:,.0f}", ""))
        rows.append(("tree navigable (load+link+index+paint)", f"{(marks['main'] - t0) * 1e3:,.0f}", ""))
        screen: MainScreen = app.screen
        kt = screen.source.kt
        rows.append(("trace", f"{kt.n_events:,} events", f"{kt.n_nodes - kt.n_events} lanes"))

        def add(name: str, result: tuple[float, float]) -> None:
            rows.append((name, f"{result[0]:.1f}", f"{result[1]:.1f}"))

        add("baseline (unbound key f12)", await measure(pilot, ["f12"], repeats))
        tree = screen.op_tree
        # the thread with the most direct children (20k+ on the 10x tiling)
        lanes = [lane.node for lane in kt.lanes]
        big = max(lanes, key=lambda n: len(screen.source.child_nodes(n)))
        screen.select(big)
        await pilot.pause()

        async def collapse_big() -> None:
            tree.collapse(big)
            screen.select(big)
            await pilot.pause()

        add(f"expand lane ({len(screen.source.child_nodes(big)):,} children)",
            await measure(pilot, ["l"], repeats, before=collapse_big))
        tree.expand(big)
        add("move down (j)", await measure(pilot, ["j"], repeats * 2))
        add("move up (k)", await measure(pilot, ["k"], repeats))
        add("page down", await measure(pilot, ["pagedown"], repeats))
        # an op with GPU work: first nccl/AllReduce-launching op found by search
        await pilot.press("slash", *"aten::", "enter")
        await pilot.pause()
        add("search-next (n) 'aten::'", await measure(pilot, ["n"], repeats))
        op = None
        for node in screen.matches[: 50_000].tolist():
            if screen.source.gpu_count[node] >= 2:
                op = node
                break
        if op is not None:
            async def on_op() -> None:
                screen.select(op)
                await pilot.pause()

            add("> (op -> first GPU event)", await measure(pilot, [">"], repeats, before=on_op))
            add("> again (next GPU event)", await measure(pilot, [">", ">"], repeats, before=on_op))
            add("< (GPU event -> op)", await measure(pilot, [">", "<"], repeats, before=on_op))
        add("search (Enter) 'nccl'",
            await measure(pilot, ["slash", *"nccl", "enter"], max(3, repeats // 3)))
        add("timeline zoom in (])", await measure(pilot, ["]"], repeats))
        add("timeline zoom out ([)", await measure(pilot, ["["], repeats))
        add("timeline pan (})", await measure(pilot, ["}"], repeats))
        add("toggle python rows (.)", await measure(pilot, ["."], max(3, repeats // 3)))
        await pilot.press("q")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=None, help="trace to open (default: a 10x tiling of v100x2_nccl_216k)")
    ap.add_argument("--copies", type=int, default=10, help="tiling factor for the default trace")
    ap.add_argument("--size", default="200x50", help="terminal size WxH (default 200x50)")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    trace = args.trace or str(default_trace(args.copies))
    width, height = (int(x) for x in args.size.lower().split("x"))
    print(f"trace: {trace} ({os.path.getsize(trace) / 1e6:,.0f} MB gz); terminal {width}x{height}; "
          f"python {sys.version.split()[0]}; {os.cpu_count()} cpus")
    rows = asyncio.run(run(trace, (width, height), args.repeats))
    print(f"\n| {'measurement':<36} | {'wall ms':>12} | {'cpu ms':>10} |")
    print(f"|{'-' * 38}|{'-' * 14}|{'-' * 12}|")
    for name, wall, cpu in rows:
        print(f"| {name:<36} | {wall:>12} | {cpu:>10} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
