"""The long robustness run (issue 7): thousands of fuzz examples, and a cut at every byte.

    python bench/fuzz_long.py                       # both parts, defaults below
    python bench/fuzz_long.py --examples 2000       # hypothesis examples per property test
    python bench/fuzz_long.py --every-byte mi250_minitoy_train.json.gz --jobs 2
    python bench/fuzz_long.py --skip-property       # only the every-byte sweep

Part 1 runs ``tests/core/test_robust_property.py`` with ``TRACETUI_FUZZ_EXAMPLES`` set (random
seeds, not the derandomized CI run) and reports examples, time and failures.

Part 2 cuts a shared Kineto trace at *every* byte, plain and as a gzip stream cut at every
compressed byte, loads each cut with ``load_kineto`` and checks it against the stdlib oracle
of ``tests/core/test_robust_oracle.py``: every complete event before the cut is in the model or
counted as rejected, links are valid, and only a cut before the event array may fail.
Results are printed as one line per part (and as JSON with ``--json``); record them in
``tests/README.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
KINETO = REPO.parent / "shared" / "traces" / "kineto"
DEFAULT_FILES = ["mi250_minitoy_train.json.gz", "a100_event_sync_multistream.json.gz",
                 "old_categories_inference.json.gz"]


def run_property(examples: int) -> dict:
    env = dict(os.environ, TRACETUI_FUZZ_EXAMPLES=str(examples))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", str(TESTS / "core" / "test_robust_property.py"), "-q",
                           "-p", "no:cacheprovider", "-x"], cwd=REPO, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    return {"part": "property", "examples_per_test": examples, "seconds": round(dt, 1), "exit": proc.returncode,
            "summary": tail, "output": proc.stdout[-4000:] if proc.returncode else ""}


def _check_range(args: tuple) -> dict:
    """Worker: load every cut in [lo, hi) of ``name`` (plain or compressed) and check it."""
    name, lo, hi, compressed = args
    sys.path.insert(0, str(TESTS))
    sys.path.insert(0, str(REPO))
    from test_robust_oracle import assert_accounted, assert_links_valid, elements_of

    from tracetui.errors import TraceError
    from tracetui.kineto import load_kineto

    data = gzip.open(KINETO / name).read()
    el = elements_of(data)
    comp = gzip.compress(data, compresslevel=6) if compressed else b""
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-every-byte-"))
    p = tmp / ("cut.json.gz" if compressed else "cut.json")
    out = {"cuts": 0, "loaded": 0, "errors": 0, "failures": []}
    for cut in range(lo, hi):
        if compressed:
            p.write_bytes(comp[:cut])
            text_len = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(comp[:cut]))
        else:
            p.write_bytes(data[:cut])
            text_len = cut
        out["cuts"] += 1
        try:
            kt = load_kineto(p)
        except TraceError as exc:
            out["errors"] += 1
            if el.complete_before(text_len):  # only a cut before the first complete event may fail
                out["failures"].append((cut, f"unexpected error: {exc}"))
            continue
        except Exception:  # noqa: BLE001 - a crash is exactly what this run looks for
            out["failures"].append((cut, traceback.format_exc(limit=3)))
            continue
        try:
            assert_accounted(kt, el.values[:el.complete_before(text_len)])
            assert_links_valid(kt)
            out["loaded"] += 1
        except AssertionError as exc:
            out["failures"].append((cut, f"invariant: {exc}"))
    p.unlink(missing_ok=True)
    tmp.rmdir()
    return out


def run_every_byte(name: str, jobs: int, compressed: bool) -> dict:
    data = gzip.open(KINETO / name).read()
    n = len(gzip.compress(data, compresslevel=6)) if compressed else len(data)
    step = max(n // (jobs * 8), 1)
    ranges = [(name, lo, min(lo + step, n + 1), compressed) for lo in range(0, n + 1, step)]
    t0 = time.perf_counter()
    total = {"cuts": 0, "loaded": 0, "errors": 0, "failures": []}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(_check_range, ranges):
            for k in ("cuts", "loaded", "errors"):
                total[k] += res[k]
            total["failures"] += res["failures"]
    total["failures"] = total["failures"][:20]
    return {"part": "every-byte", "file": name, "stream": "gzip" if compressed else "plain", "bytes": n,
            "seconds": round(time.perf_counter() - t0, 1), **total}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=2000, help="hypothesis examples per property test")
    ap.add_argument("--every-byte", nargs="*", default=DEFAULT_FILES, metavar="FILE",
                    help="shared Kineto traces to cut at every byte (default: three small ones)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-property", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the results as JSON lines")
    args = ap.parse_args(argv)
    results = []
    if not args.skip_property:
        results.append(run_property(args.examples))
    for name in args.every_byte:
        for compressed in (False, True):
            results.append(run_every_byte(name, args.jobs, compressed))
    bad = 0
    for r in results:
        if args.json:
            sys.stdout.write(json.dumps(r) + "\n")
        elif r["part"] == "property":
            sys.stdout.write(f"property: {r['examples_per_test']} examples/test, {r['seconds']} s: {r['summary']}\n")
            if r["exit"]:
                sys.stdout.write(r["output"] + "\n")
        else:
            sys.stdout.write(f"every-byte {r['file']} ({r['stream']}, {r['bytes']:,} bytes): {r['cuts']:,} cuts, "
                             f"{r['loaded']:,} loaded and checked, {r['errors']:,} clear errors (cut before the "
                             f"event array), {len(r['failures'])} failures, {r['seconds']} s\n")
            for cut, why in r["failures"]:
                sys.stdout.write(f"  cut {cut}: {why}\n")
        bad += bool(r.get("exit")) or bool(r.get("failures"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
