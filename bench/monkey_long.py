"""Long monkey run: the walks of tests/ui/test_ui_monkey.py with fresh seeds and more keys.

    python bench/monkey_long.py                     # 5 seeds x 4,000 keys per trace
    python bench/monkey_long.py --seeds 20 --keys 10000 --only MTIA

Prints one row per walk (trace, seed, keys, screens reached, apps started, seconds, keys/s)
and, for a failure, the seed and the last keys so it can be replayed with
``--first-seed SEED --seeds 1``.  Exits 1 when any walk failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the test helpers import each other by module name (pyproject's pythonpath: tests, tests/ui)
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "ui")]

from monkey import WalkFailure, walk  # noqa: E402
from test_ui_monkey import WALKS, _app, _paths, _ready  # noqa: E402


async def run(args) -> int:
    failures = 0
    print(f"{'trace':34} {'seed':>6} {'keys':>7} {'apps':>4} {'s':>7} {'keys/s':>7}  screens")
    for label, spec, _n, size in WALKS:
        if args.only and args.only.lower() not in label.lower():
            continue
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            with tempfile.TemporaryDirectory() as tmp:
                os.chdir(tmp)
                paths = _paths(spec, Path(tmp))
                start = time.perf_counter()
                try:
                    record = await walk(lambda paths=paths, spec=spec: _app(spec, paths), _ready, label=label,
                                        seed=seed, n_keys=args.keys, size=size)
                except WalkFailure as exc:
                    failures += 1
                    print(f"FAIL {exc}")
                    if exc.__cause__ is not None:  # where it failed, to fix it
                        traceback.print_exception(exc.__cause__, limit=-12, file=sys.stdout)
                    continue
                finally:
                    os.chdir(REPO)
                took = time.perf_counter() - start
                print(f"{label:34} {seed:>6} {len(record.keys):>7} {record.apps:>4} {took:>7.1f} "
                      f"{len(record.keys) / took:>7.0f}  {', '.join(sorted(record.screens))}")
    from tracetui.ui import textual_guards

    print(f"{failures} failed walk(s); {len(textual_guards.clamped_timers)} timer(s) with a delay <= 0 clamped")
    for delay, name, stack in textual_guards.clamped_timers[:5]:
        print(f"clamped timer {name!r} (delay {delay} s), created at:\n{stack}")
    return 1 if failures else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=10_000)
    p.add_argument("--keys", type=int, default=4000)
    p.add_argument("--only", default=None, help="run only walks whose label contains this")
    return asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
