"""Compare tracetui's headless outputs between a git revision and the working tree.

    python scripts/compare_outputs.py              # against HEAD~1
    python scripts/compare_outputs.py --ref main~5 [--jobs 2] [--keep DIR]

For every shared Kineto trace (``../shared/traces/kineto``), every ET + Kineto pair
(each ``../shared/traces/et/*/`` folder holding ``et.json.gz`` and ``kineto.json.gz``),
every ET alone and the bundled sample, it runs ``info --json``, ``summary --json``,
``summary`` (the text tables) and ``tree --depth 3`` (with ``--exports`` also the Chrome,
Markdown and CSV exports of the whole trace) with the code of ``--ref`` (checked out into a temporary git worktree)
and with the working tree, without the cache, and compares stdout, stderr and the exit
status byte for byte.  Prints one line per difference and a total; exits 1 when anything
differs.  Used to show that a refactoring changed no output.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "traces"
COMMANDS = (["info", "--json"], ["summary", "--json"], ["summary"], ["tree", "--depth", "3"])
#: with --exports: the whole-trace reports too (stdout), Chrome trace and Markdown
EXPORTS = (["export", "-f", "chrome", "-o", "-"], ["export", "-f", "md", "-o", "-"], ["export", "-f", "csv", "-o", "-"])


def inputs() -> list[list[str]]:
    """Every input set: one Kineto trace, an ET + Kineto pair, an ET alone, the sample pair."""
    sets = [[str(p)] for p in sorted((SHARED / "kineto").glob("*.json.gz"))]
    # every folder holding a pair (torch_cpu_pair_threads too, whose name does not end in _pair)
    for pair in sorted(p.parent for p in (SHARED / "et").glob("*/et.json.gz")
                       if (p.parent / "kineto.json.gz").exists()):
        sets.append([str(pair / "kineto.json.gz"), str(pair / "et.json.gz")])
    sets += [[str(p)] for p in sorted((SHARED / "et" / "et_only").glob("*.json.gz"))]
    samples = REPO / "sample_traces"
    sets.append([str(samples / "cpu_transformer_kineto.json.gz"), str(samples / "cpu_transformer_et.json.gz")])
    return sets


def run(tree: Path, command: list[str], paths: list[str], cache: str) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(tree), "TRACETUI_CACHE_DIR": cache, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "tracetui", command[0], *paths, *command[1:], "--no-cache"],
                          cwd=tree, env=env, capture_output=True, timeout=900)
    return done.returncode, done.stdout, done.stderr


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ref", default="HEAD~1", help="git revision to compare against (default HEAD~1)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--keep", default=None, help="write both outputs of each difference into this folder")
    p.add_argument("--exports", action="store_true", help="compare the whole-trace exports too")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "ref"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), args.ref], cwd=REPO, check=True,
                       capture_output=True)
        try:
            commands = COMMANDS + (EXPORTS if args.exports else ())
            jobs = [(cmd, paths) for paths in inputs() for cmd in commands]

            def compare(job):
                cmd, paths = job
                return job, run(old, cmd, paths, tmp), run(REPO, cmd, paths, tmp)

            differ = 0
            with ThreadPoolExecutor(args.jobs) as pool:
                for (cmd, paths), before, after in pool.map(compare, jobs):
                    label = f"{' '.join(cmd)} {' + '.join(Path(x).name for x in paths)}"
                    if before == after:
                        continue
                    differ += 1
                    print(f"DIFFERS: {label} (rc {before[0]} -> {after[0]}, stdout {len(before[1])} -> "
                          f"{len(after[1])} B, stderr {len(before[2])} -> {len(after[2])} B)")
                    if args.keep:
                        keep = Path(args.keep)
                        keep.mkdir(parents=True, exist_ok=True)
                        stem = label.replace(" ", "_").replace("/", "_")
                        (keep / f"{stem}.before").write_bytes(before[1] + before[2])
                        (keep / f"{stem}.after").write_bytes(after[1] + after[2])
            print(f"{len(jobs)} outputs compared against {args.ref}: {differ} differ")
            return 1 if differ else 0
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=REPO, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
