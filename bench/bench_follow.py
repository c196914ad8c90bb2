"""What following a run costs (issue 42, docs/follow.md): CPU while nothing changes, and the
completeness check of a trace beside the load it guards.

1. **One look** at a folder of ``--files`` traces (default 100) that were all read already: CPU µs
   of :meth:`tracetui.follow.watch.Watcher.scan` (an ``os.scandir`` and a stat per file), minimum
   and median of ``--looks`` looks.
2. **A minute of idle follow**: ``tracetui follow DIR --json`` in a child process on a folder of
   ``--files`` files, none of which changes; its CPU (``/proc/PID/stat`` utime + stime) from
   ``--warmup`` seconds after its start (imports, the first look, each file's one completeness
   check) over the next ``--seconds`` seconds, per minute.  The files are traces cut short (never
   complete), so the child reads none of them and only the watching is measured.
3. **The completeness check** of the largest shared trace (gzip: inflate and check the trailer;
   its JSON: parse, skipping every value) beside the CPU of loading it (``load_kineto``).

    python bench/bench_follow.py            # all three (about 80 s)
    python bench/bench_follow.py --seconds 20 --warmup 5
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tracetui.follow.complete import trace_complete  # noqa: E402
from tracetui.follow.watch import Watcher  # noqa: E402

SHARED = REPO.parent / "shared" / "traces" / "kineto"
SMALL = SHARED / "h100_bert_inference.json.gz"
LARGE = SHARED / "v100x2_nccl_216k.json.gz"


def _name(k: int) -> str:
    return f"gpu-box_4242.{1_700_000_000_000_000_000 + k * 1_000_000_000}.pt.trace.json.gz"


def _folder(n: int, data: bytes) -> str:
    folder = tempfile.mkdtemp(prefix="tracetui-follow-bench-")
    for k in range(n):
        p = os.path.join(folder, _name(k))
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, (0, 0))
    return folder


def one_look(n: int, looks: int) -> tuple[float, float]:
    """CPU µs of one look at ``n`` files already read (min, median)."""
    folder = _folder(n, SMALL.read_bytes())
    w = Watcher(folder, suffixes=(".json", ".json.gz"), complete=trace_complete)
    ready, _ = w.scan()
    assert len(ready) == n
    for item in ready:
        assert w.after_read(item) is None
    times = []
    for _ in range(looks):
        t = time.process_time_ns()
        ready, notes = w.scan()
        times.append((time.process_time_ns() - t) / 1e3)
        assert not ready and not notes
    return min(times), statistics.median(times)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_minute(n: int, warmup: float, seconds: float, interval: float) -> float:
    """CPU seconds per minute of ``tracetui follow DIR --json`` on ``n`` unchanging files."""
    folder = _folder(n, SMALL.read_bytes()[:20_000])  # cut short: never complete, never read
    child = subprocess.Popen([sys.executable, "-m", "tracetui", "follow", folder, "--json", "--interval",
                              str(interval)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        time.sleep(warmup)
        c0, t0 = _cpu_s(child.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = _cpu_s(child.pid), time.monotonic()
    finally:
        child.terminate()
        child.wait(timeout=30)
    return (c1 - c0) * 60.0 / (t1 - t0)


def check_vs_load() -> list[tuple[str, float]]:
    """CPU s of the completeness checks of LARGE (gzip, and its JSON) and of loading it."""
    from tracetui.kineto import load_kineto

    folder = tempfile.mkdtemp(prefix="tracetui-follow-bench-")
    plain = os.path.join(folder, "large.json")
    with open(plain, "wb") as f:
        f.write(gzip.decompress(LARGE.read_bytes()))
    rows = []
    for label, path in (("check, gzip (inflate + trailer)", str(LARGE)), ("check, JSON (parse, skip values)", plain)):
        best = float("inf")
        for _ in range(3):
            t = time.process_time()
            assert trace_complete(path) is None
            best = min(best, time.process_time() - t)
        rows.append((label, best))
    t = time.process_time()
    load_kineto(str(LARGE))
    rows.append(("load_kineto (this process; decode workers not counted)", time.process_time() - t))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--looks", type=int, default=200)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    lo, med = one_look(args.files, args.looks)
    print(f"one look at {args.files} files read already: {lo:.0f} µs CPU (min), {med:.0f} µs (median)")
    per_min = idle_minute(args.files, args.warmup, args.seconds, args.interval)
    print(f"idle `tracetui follow --json --interval {args.interval:g}` on {args.files} files: "
          f"{per_min:.3f} CPU s per minute ({per_min / 60 * 100:.3f} % of a core), over {args.seconds:g} s")
    size = LARGE.stat().st_size
    print(f"{LARGE.name} ({size:,} B gzip, 216,092 events):")
    for label, s in check_vs_load():
        print(f"  {label}: {s * 1e3:.0f} ms CPU")


if __name__ == "__main__":
    main()
