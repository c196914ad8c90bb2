"""Opening a large CUDA memory snapshot (issue 39): time and peak memory against the file's
size, beside ``pickle.load``'s own on the same file (the floor: any reader that builds the
pickle's objects pays it).

    python bench/bench_memsnap.py [--mb 1024] [--frames 10] [--dir /tmp] [--keep] [--json FILE]

The snapshot is written by ``tests/memsnap_gen.write_scaled`` (the layout torch writes, pickled
opcode by opcode as the standard pickler does: frames of 64 KiB, every container memoized,
frame dicts shared; ``--frames`` frames per stack: 10 is Python stacks, 60 is like
``stacks="all"``) scaled to ``--mb`` megabytes.  Each row runs in a fresh child process (its
peak RSS is the child's ``ru_maxrss``; wall time, as the user waits it):

* ``pickle.load``: the standard library, garbage collection as it comes (what memory_viz's
  command line runs), and ``pickle.load, gc off`` (the same with the collector off, as
  tracetui reads);
* ``tracetui open``: ``load_memsnap`` (the restricted unpickler, columns, the trace) and the
  memory model (every history entry a row): what ``tracetui memory`` and the browser need
  before their first answer;
* ``tracetui memory``: the whole command (``--json``, to /dev/null);
* ``browser``: the app, headless at 80x24, until the snapshot's memory screen is shown and
  its workers are done (what ``tracetui SNAPSHOT`` holds once the user can read it); it also
  prints the longest stall of the UI's event loop meanwhile (a 20 ms timer's lateness: what
  froze the screen).

Prints one row each: file MB, history entries, seconds, peak RSS MB, RSS / file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

_COMMAND = ("from tracetui.cli import main\nsys.stdout = open(os.devnull, 'w')\n"
            "rc = main(['memory', P, '--json', '--no-cache'])\nsys.stdout = sys.__stdout__")
_BROWSER = """import asyncio
from tracetui.ui.app import TraceApp

async def _browse():
    app = TraceApp([P], use_cache=False)
    stall = [0.0]
    async with app.run_test(size=(80, 24)) as pilot:
        async def watch():
            while True:
                t = time.perf_counter()
                await asyncio.sleep(0.02)
                stall[0] = max(stall[0], time.perf_counter() - t - 0.02)
        asyncio.get_running_loop().create_task(watch())
        while type(app.screen).__name__ != "MemorySnapshotScreen":
            await asyncio.sleep(0.1)
        await app.workers.wait_for_complete()
        await pilot.pause()
    print(f"longest UI-loop stall {stall[0]:.2f} s", file=sys.stderr)

asyncio.run(_browse())"""
_CHILD = {
    "pickle.load": "import pickle\nwith open(P, 'rb') as fh:\n    x = pickle.load(fh)",
    "pickle.load, gc off": "import gc, pickle\ngc.disable()\nwith open(P, 'rb') as fh:\n    x = pickle.load(fh)",
    "tracetui open": "from tracetui.memsnap.loader import load_memsnap\nfrom tracetui.analysis.memory import "
                     "memory_model\nkt = load_memsnap(P)\nm = memory_model(kt)",
    "tracetui memory": _COMMAND,
    "browser": _BROWSER,
}
_TAIL = ("\nimport resource, time\nu = resource.getrusage(resource.RUSAGE_SELF)\n"
         "print(time.perf_counter() - T0, u.ru_maxrss, u.ru_utime + u.ru_stime)")


def _child(code: str, path: Path) -> tuple[float, float, float]:
    """(wall s, peak RSS bytes, CPU s) of ``code`` in a fresh interpreter (imports included)."""
    src = f"import os, sys, time\nT0 = time.perf_counter()\nP = {str(path)!r}\n{code}{_TAIL}"
    done = subprocess.run([sys.executable, "-c", src], check=True, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    if "stall" in done.stderr:
        print(done.stderr.strip())
    out = done.stdout.split()
    return float(out[0]), float(out[1]) * 1024, float(out[2])



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1024.0, help="file size to write (MB, 10^6 bytes; default 1024)")
    ap.add_argument("--frames", type=int, default=10, help="frames per stack (default 10: Python stacks)")
    ap.add_argument("--dir", default="/tmp", help="where the snapshot is written")
    ap.add_argument("--keep", action="store_true", help="keep the snapshot file (and reuse one kept before)")
    ap.add_argument("--skip", default="", help="rows to skip, comma separated (pickle.load, ...)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    from memsnap_gen import write_scaled

    path = Path(args.dir) / f"bench_memsnap_{int(args.mb)}mb_{args.frames}f.pickle"
    facts = path.with_suffix(".json")
    if args.keep and path.exists() and facts.exists():  # a file kept by an earlier run: not written again
        info = json.loads(facts.read_text())
        print(f"reusing {path} ({info['size'] / 1e6:,.1f} MB, {info['entries']:,} entries)")
    else:
        probe = write_scaled(path, 30_000, frames_per_stack=args.frames)
        per_entry = probe["size"] / probe["entries"]
        t = time.perf_counter()
        info = write_scaled(path, int(args.mb * 1e6 / per_entry), frames_per_stack=args.frames)
        print(f"wrote {path} ({info['size'] / 1e6:,.1f} MB, {info['entries']:,} entries, {per_entry:.0f} B each) "
              f"in {time.perf_counter() - t:.1f} s")
        if args.keep:
            facts.write_text(json.dumps(info))
    size = info["size"]
    rows = []
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    try:
        for name, code in _CHILD.items():
            if name in skip:
                continue
            secs, rss, cpu = _child(code, path)
            rows.append({"row": name, "file_mb": size / 1e6, "entries": info["entries"], "seconds": secs,
                         "cpu_seconds": cpu, "peak_rss_mb": rss / 1e6, "ratio": rss / size})
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    print(f"{'row':<22} {'file MB':>9} {'entries':>12} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>12} "
          f"{'RSS/file':>9}")
    for r in rows:
        print(f"{r['row']:<22} {r['file_mb']:>9,.1f} {r['entries']:>12,} {r['seconds']:>7.2f} {r['cpu_seconds']:>7.2f} "
              f"{r['peak_rss_mb']:>12,.0f} {r['ratio']:>9.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
