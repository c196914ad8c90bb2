"""The times README.md states, each cold and warm, in one run (issue 45).

    python bench/readme_times.py                 # every row below, 3 rounds, medians
    python bench/readme_times.py --rounds 1 --no-big

Each row is a command run in a fresh process (``python -m tracetui ...``, output discarded):

- **cold**: an empty cache folder (``TRACETUI_CACHE_DIR``): the trace is parsed and its
  entry written, nothing is stored yet;
- **warm**: the same command again with that folder: the trace mapped from its entry and,
  where the command stores its result (``summary``, ``diff``), the result read back.

The children write and reuse bytecode (``PYTHONDONTWRITEBYTECODE`` dropped), as an installed
tracetui does.  Wall seconds from the process start to its exit, and CPU seconds of the process and every
process it waited for (parse children, decode workers).  The trace-open row of the 2M-event
tiling (``--no-big`` leaves it out) times ``load_cached`` in a child instead of a command.
``--open FILE`` adds such a row for another file (an XPlane profile, an Nsight export).
The 1-minute load average is printed per row: on the shared 2-core VM wall times grow with
it; CPU seconds much less.  The browser's first paint and tree shown are
``bench_startup.py --first-open``'s rows.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_traces" / "h100_bert_inference.json.gz"
SHARED = REPO.parent / "shared" / "traces" / "kineto"
V100 = SHARED / "v100x2_nccl_216k.json.gz"
TILED = Path("/tmp/tracetui_bench/v100x2_nccl_216k_x10.json.gz")  # bench/scale_trace.py -n 10

ROWS: list[tuple[str, list[str]]] = [
    ("summary, bundled sample", ["summary", str(SAMPLE)]),
    ("summary, 216k-event trace", ["summary", str(V100)]),
    ("memory, 216k-event trace", ["memory", str(V100)]),
    ("critical-path, bundled sample (BERT step)", ["critical-path", str(SAMPLE)]),
    ("query GROUP BY over kernels, 216k-event trace",
     ["query", str(V100), "SELECT category, count(*) FROM kernels GROUP BY category"]),
]
_OPEN = "import sys; sys.path.insert(0, {repo!r}); from tracetui.store.traces import load_cached; load_cached([{p!r}])"


def timed(argv: list[str], cache: str) -> tuple[float, float]:
    """(wall s, CPU s of the child and its waited-for descendants) of one fresh process."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode written and reused, as after an install
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   cwd=tempfile.gettempdir(), timeout=1800)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="cold + warm pairs per row (medians)")
    ap.add_argument("--no-big", action="store_true", help="leave out the 2M-event tiling's open")
    ap.add_argument("--open", action="append", default=[], metavar="FILE",
                    help="also a row timing load_cached of FILE (repeatable)")
    ap.add_argument("--no-commands", action="store_true", help="only the open rows")
    args = ap.parse_args(argv)
    rows = [] if args.no_commands else [(label, ["-m", "tracetui", *cmd]) for label, cmd in ROWS]
    opens = ([("the 2,160,578-event tiling", TILED)] if not args.no_big and TILED.exists() else [])
    opens += [(Path(f).name, Path(f)) for f in args.open]
    for name, path in opens:
        rows.append((f"open {name} (load_cached)", ["-c", _OPEN.format(repo=str(REPO), p=str(path))]))
    print(f"{os.cpu_count()} CPUs; medians of {args.rounds} round(s); wall / CPU seconds\n")
    print("| command | cold wall s | cold CPU s | warm wall s | warm CPU s | load average |")
    print("|---|---:|---:|---:|---:|---|")
    for label, cmd in rows:
        cold, warm = [], []
        load0 = os.getloadavg()[0]
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="tracetui_readme_") as cache:
                cold.append(timed(cmd, cache))
                warm.append(timed(cmd, cache))
        med = [statistics.median(x[i] for x in runs) for runs in (cold, warm) for i in (0, 1)]
        print(f"| {label} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.2f} |"
              f" {load0:.1f}-{os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
