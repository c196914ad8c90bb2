"""What the defences against untrusted traces (issue 24, docs/security.md) cost, in one run.

    python bench/bench_untrusted.py              # the 216k-event trace, 15 cached opens
    python bench/bench_untrusted.py --runs 5 --trace ../shared/traces/kineto/h100_bert_inference.json.gz

Table 1, a cached open (``tracetui.store.traces.read_cached``) of one trace, median of
``--runs`` opens in this process, split into its parts (CPU ms, ``time.process_time``, so a
busy machine shows the ratio an idle one would):

- key: the cache key, a CRC-32 (ISA-L) of every byte of the trace file;
- header: the entry's preamble and header read, its CRC checked, the header decoded;
- read: the entry's sections read into private memory (no file stays mapped: a truncated
  entry cannot SIGBUS a reader);
- checksums: the CRC-32 of every section compared with the header's;
- rebuild: the trace rebuilt from the sections (the part that was there before issue 24).

Table 2, recovery of a trace cut short and padded: ``content_end`` over N MiB of NUL
padding against the byte-at-a-time loop it replaced (measured on 4 MiB, scaled linearly
for the larger sizes: the loop is linear too, just slow).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def cached_open_parts(trace: str, runs: int) -> dict[str, float]:
    import tracetui.io.colfile as persist
    import tracetui.store.traces as cache

    spent: dict[str, float] = {}

    def timed(name: str, fn):
        def wrapper(*a, **k):
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t
        return wrapper

    real_crc = persist.crc32
    persist.crc32 = timed("checksums", real_crc)
    persist._pread = timed("read", persist._pread)
    persist._read_header = timed("header", persist._read_header)
    cache.cache_key = timed("key", cache.cache_key)
    cache.load_cached([trace])  # writes the entry
    totals: dict[str, list[float]] = {}
    for _ in range(runs):
        spent.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        assert cache.read_cached(trace) is not None
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        parts = dict(spent)  # the header's CRC (a few µs) counts in "header" and in "checksums"
        parts["rebuild"] = cpu - sum(parts.values())
        parts["total CPU"], parts["total wall"] = cpu, wall
        for k, v in parts.items():
            totals.setdefault(k, []).append(v)
    persist.crc32 = real_crc
    size = os.path.getsize(cache.entry_path(trace))
    out = {k: statistics.median(v) * 1e3 for k, v in totals.items()}
    out["entry MiB"] = size / 2**20
    return out


def _byte_loop(data: bytes) -> int:
    end = len(data)
    while end > 0 and data[end - 1] in b" \t\r\n\x00":
        end -= 1
    return end


def padding_rows() -> list[tuple[int, float, float]]:
    from tracetui.io.jsonrecover import content_end

    small = b"x" + b"\x00" * (4 << 20)
    t = time.process_time()
    assert _byte_loop(small) == 1
    loop_per_mib = (time.process_time() - t) / 4
    rows = []
    for mib in (4, 64, 1024):
        data = b"x" + b"\x00" * (mib << 20)
        t = time.process_time()
        assert content_end(data) == 1
        rows.append((mib, loop_per_mib * mib, time.process_time() - t))
        del data
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=str(REPO.parent / "shared/traces/kineto/v100x2_nccl_216k.json.gz"))
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        os.environ["TRACETUI_CACHE_DIR"] = d
        os.environ["TRACETUI_CODE_FINGERPRINT"] = "bench"
        parts = cached_open_parts(os.path.abspath(args.trace), args.runs)
    print(f"Cached open of {os.path.basename(args.trace)} (entry {parts.pop('entry MiB'):.1f} MiB), "
          f"median of {args.runs}, ms")
    print(f"{'part':<12}{'ms':>10}{'share':>9}")
    cpu = parts["total CPU"]
    for name in ("key", "header", "read", "checksums", "rebuild", "total CPU", "total wall"):
        share = f"{100 * parts.get(name, 0.0) / cpu:7.0f} %" if not name.startswith("total") else ""
        print(f"{name:<12}{parts.get(name, 0.0):>10.1f}{share:>9}")
    print()
    print("Trailing padding after a cut: CPU s")
    print(f"{'MiB':>6}{'byte loop':>12}{'content_end':>13}{'ratio':>9}")
    for mib, old, new in padding_rows():
        print(f"{mib:>6}{old:>12.2f}{new:>13.3f}{old / max(new, 1e-9):>8.0f}x")
    print(f"\nload average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
