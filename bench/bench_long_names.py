"""What 10 MB names cost, before and after the bound of issue 40 (``tracetui/names.py``), in one run.

    python bench/bench_long_names.py                       # --ref main against this tree
    python bench/bench_long_names.py --ref 98f976c --timeout 120 --keys-timeout 1800
    python bench/bench_long_names.py --only after          # this tree alone

The file is ``tests/long_names.py``'s: a small real trace (a100_event_sync_multistream) with
one op and one kernel renamed to 10 MB names (20 MB of JSON).  The code of ``--ref`` is
checked out into a temporary git worktree; each side runs:

* every command of ``long_names.COMMANDS`` in a child process with an empty cache, its
  output piped: the child's CPU seconds (``RUSAGE_CHILDREN``: a loaded machine shows what an
  idle one would) and its wall seconds (process start to exit: what the user waits, the
  issue's "under 5 s per command"); a command still running after ``--timeout`` s is
  stopped and shown as ``>= N``;
* the browser at 80x24 under Textual's Pilot, in a child, walking ``long_names.KEY_WALK``
  (first on the trace the names were put into, unmeasured: what a key imports on first use,
  pandas for ``s``, is not work per name; ``tests/ui/test_ui_long_names.py`` does the same):
  the CPU seconds of the open and of each key (``time.process_time``, from the press until
  the app is idle: workers included), and the child's peak RSS; keys not reached before
  ``--keys-timeout`` s are shown as ``-`` (the peak RSS is the child's when it stopped).

Prints one table: commands (CPU, then wall), then keys (CPU), before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
sys.path.insert(0, str(TESTS))

from long_names import COMMANDS, KEY_WALK, command_argv, write_long_names  # noqa: E402

#: the browser walk, run in a child whose PYTHONPATH puts the measured tree first
WALK = r"""
import asyncio, json, os, resource, sys, time
from long_names import BASE, KEY_WALK
from pilot import open_app
from shared_traces import kineto_path
from tracetui.ui.app import TraceApp

def say(*parts):
    print(json.dumps(parts), flush=True)

async def main(path, measured):
    app = TraceApp([path], use_cache=False)
    t = time.process_time()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_app(app, pilot, timeout=3600)
        if measured:
            say("open", time.process_time() - t)
        for i, (key, _) in enumerate(KEY_WALK):
            t = time.process_time()
            await pilot.press(key)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            if measured:
                say("key", i, time.process_time() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

asyncio.run(main(str(kineto_path(BASE)), False))  # what keys load on first use, as the test does
asyncio.run(main(sys.argv[1], True))
"""


def _env(tree: Path, cache: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(TESTS)]), "TRACETUI_CACHE_DIR": cache,
           "TRACETUI_BACKGROUND": "0"}
    # the commands' output piped, as to a file or a pager (tables as wide as their content); no
    # NO_COLOR: with it Textual 8.2.8's Monochrome filter fails on the tree's unstyled segments
    env.pop("COLUMNS", None)
    env.pop("NO_COLOR", None)
    return env


def commands(tree: Path, trace: Path, timeout: float) -> dict[str, tuple[float, bool, float]]:
    """(CPU seconds, whether it was stopped at ``timeout``, wall seconds) of each command."""
    out: dict[str, tuple[float, bool, float]] = {}
    for name in COMMANDS:
        with tempfile.TemporaryDirectory() as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            stopped = False
            start = time.monotonic()
            try:
                done = subprocess.run([sys.executable, "-m", "tracetui", *command_argv(name, trace, tmp)],
                                      cwd=tree, env=_env(tree, tmp), capture_output=True, timeout=timeout)
                if done.returncode != 0:
                    print(f"  {tree.name}: {name}: exit {done.returncode}: {done.stderr.decode()[-200:]}",
                          file=sys.stderr)
            except subprocess.TimeoutExpired:
                stopped = True
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out[name] = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), stopped, wall)
        print(f"  {tree.name}: {name}: {out[name][0]:.2f} s CPU, {wall:.2f} s wall{' (stopped)' if stopped else ''}",
              file=sys.stderr)
    return out


def keys(tree: Path, trace: Path, timeout: float) -> tuple[float | None, list[float | None], float | None]:
    """(CPU seconds of the open, of each key of the walk (None: not reached), peak RSS in MB)."""
    opened, spent, rss = None, [None] * len(KEY_WALK), None
    with tempfile.TemporaryDirectory() as tmp:
        errors = Path(tmp) / "stderr"
        child = subprocess.Popen([sys.executable, "-c", WALK, str(trace)], cwd=tree, env=_env(tree, tmp),
                                 stdout=subprocess.PIPE, stderr=errors.open("w"), text=True)
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(child.stdout, selectors.EVENT_READ)
        try:
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                line = child.stdout.readline()
                if not line:
                    break
                what, *rest = json.loads(line)
                if what == "open":
                    opened = rest[0]
                elif what == "key":
                    spent[rest[0]], rss = rest[1], rest[2]
                    key, label = KEY_WALK[rest[0]]
                    print(f"  {tree.name}: key {key} ({label}): {rest[1]:.3f} s", file=sys.stderr)
        finally:
            child.kill()
            child.wait()
        if child.returncode not in (0, -9):  # the walk failed: say why, not just '-'
            print(f"  {tree.name}: the key walk ended with {child.returncode}: {errors.read_text()[-400:]}",
                  file=sys.stderr)
    return opened, spent, rss


def _cell(v: float | None, stopped: bool = False) -> str:
    if v is None:
        return "-"
    return f">= {v:.1f}" if stopped else (f"{v:.2f}" if v >= 1 else f"{v * 1e3:.0f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ref", default="main", help="the code before (a git revision; default main)")
    p.add_argument("--only", choices=("before", "after"), help="measure one side only")
    p.add_argument("--timeout", type=float, default=150.0, help="seconds a command may run (default 150)")
    p.add_argument("--keys-timeout", type=float, default=1800.0, help="seconds the key walk may run (default 1800)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_long_names(Path(tmp))
        sides: dict[str, Path] = {}
        if args.only != "after":
            old = Path(tmp) / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(old), args.ref], cwd=REPO, check=True,
                           capture_output=True)
            sides["before"] = old
        if args.only != "before":
            sides["after"] = REPO
        results = {}
        try:
            for side, tree in sides.items():
                print(f"{side}: {tree}", file=sys.stderr)
                results[side] = (commands(tree, trace, args.timeout), keys(tree, trace, args.keys_timeout))
        finally:
            if "before" in sides:
                subprocess.run(["git", "worktree", "remove", "--force", str(sides["before"])], cwd=REPO,
                               capture_output=True)
    names = list(results)
    print(f"| what (s; 10 MB names, 80x24) | {' | '.join(f'{s} CPU | {s} wall' for s in names)} |")
    print("|---|" + "---:|" * 2 * len(names))
    for name in COMMANDS:
        cells = []
        for s in names:
            cpu, stopped, wall = results[s][0][name]
            cells += [_cell(cpu, stopped), _cell(wall, stopped)]
        print(f"| `{name}` | " + " | ".join(cells) + " |")
    def row(what: str, cells: list[str]) -> None:  # the browser's: one number per side, in its CPU column
        print(f"| {what} | " + " | ".join(f"{c} | " for c in cells) + "|")

    row("browser: open", [_cell(results[s][1][0]) for s in names])
    for i, (key, label) in enumerate(KEY_WALK):
        row(f"key `{key}` ({label})", [_cell(results[s][1][1][i]) for s in names])
    row("browser: peak RSS (MB)", ["-" if results[s][1][2] is None else f"{results[s][1][2]:.0f}" for s in names])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
