"""`tracetui query` and `tracetui slice` at scale, and peers opening a slice.

    python bench/bench_query.py                 # v100x2_nccl_216k tiled 14x (2,119,474 model events)
    python bench/bench_query.py -n 4 --no-peers

Prints one table:

- load: the trace loaded without the cache (CPU seconds of this process: the machine is
  shared, CPU time is what the code costs), and whether DuckDB was imported by the load
  (it must not be: no query, no cost);
- the first query (``events`` built from the columns + DuckDB started + the GROUP BY), a
  second GROUP BY over the built table (the target: < 0.5 s for 2M events), a GROUP BY
  over ``kernels`` (frame of GPU work, categories, occupancy) -- CPU seconds;
- HTA 0.5.0 (``TraceAnalysis``) and TraceLens (``TreePerfAnalyzer.from_file``) opening a
  one-step slice of a shared trace, run as subprocesses in /tmp/htavenv (never a
  dependency): the rows they parsed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
REPO = HERE.parent
SHARED = REPO.parent / "shared" / "traces" / "kineto"


def cpu() -> float:
    return time.process_time()


def measure(n: int, out_dir: str) -> list[tuple[str, str]]:
    from scale_trace import scale_trace

    from tracetui.kineto import load_kineto
    from tracetui.query import QuerySession
    from tracetui.session import LinkedTrace

    rows: list[tuple[str, str]] = []
    big = os.path.join(out_dir, f"big{n}.json")
    scale_trace(SHARED / "v100x2_nccl_216k.json.gz", big, n)
    t = cpu()
    kt = load_kineto(big)
    rows.append((f"load {kt.n_events:,} events (CPU s)", f"{cpu() - t:.2f}"))
    rows.append(("DuckDB imported by the load", str("duckdb" in sys.modules)))
    s = QuerySession.for_trace(LinkedTrace(kt))
    q = "SELECT name, count(*) AS n, sum(dur_us) AS us FROM events GROUP BY name ORDER BY us DESC LIMIT 10"
    t = cpu()
    s.run(q)
    rows.append(("first query: events built + GROUP BY name (CPU s)", f"{cpu() - t:.3f}"))
    t, w = cpu(), time.perf_counter()
    s.run("SELECT kind, lane, count(*), sum(dur_us) FROM events GROUP BY ALL")
    rows.append(("GROUP BY kind, lane over every event (CPU s / wall s)",
                 f"{cpu() - t:.3f} / {time.perf_counter() - w:.3f}"))
    t = cpu()
    s.run("SELECT category, count(*), sum(dur_us) FROM kernels GROUP BY category")
    rows.append(("kernels built + GROUP BY category (CPU s)", f"{cpu() - t:.3f}"))
    t, w = cpu(), time.perf_counter()
    s.run("SELECT category, count(*), sum(dur_us) FROM kernels GROUP BY category")
    rows.append(("GROUP BY category again (CPU s / wall s)", f"{cpu() - t:.3f} / {time.perf_counter() - w:.3f}"))
    s.close()
    os.unlink(big)
    return rows


def peers(out_dir: str) -> list[tuple[str, str]]:
    from bench_load import HTA_PYTHON, HTA_SCRIPT, TRACELENS_SCRIPT, peer_available, run_peer

    from tracetui.cli import main

    rows: list[tuple[str, str]] = []
    for name, step in (("mi300_resnet_train_checkpointing.json.gz", 16), ("h100_bert_inference.json.gz", 6)):
        folder = os.path.join(out_dir, f"slice_{step}")
        os.makedirs(folder, exist_ok=True)
        out = os.path.join(folder, f"step{step}.json.gz")
        main(["slice", str(SHARED / name), "--step", str(step), "-o", out, "--no-cache"])
        for peer, probe, script in (("HTA 0.5.0", "import hta.trace_analysis", HTA_SCRIPT),
                                    ("TraceLens", "from TraceLens import TreePerfAnalyzer", TRACELENS_SCRIPT)):
            if not peer_available(HTA_PYTHON, probe):
                rows.append((f"{peer} opens {name} step {step}", "not installed"))
                continue
            try:
                res = run_peer(HTA_PYTHON, script, peer, out)
                rows.append((f"{peer} opens {name} step {step}", f"yes, {res['rows']:,} rows"))
            except RuntimeError as exc:
                rows.append((f"{peer} opens {name} step {step}", f"FAILED: {str(exc).splitlines()[-1][:80]}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=14,
                    help="copies of v100x2_nccl_216k (14: 2,119,474 events in the model; 10: 1,513,910)")
    ap.add_argument("--no-peers", action="store_true", help="skip HTA and TraceLens")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_query_") as d:
        rows = measure(args.n, d)
        if not args.no_peers:
            rows += peers(d)
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
