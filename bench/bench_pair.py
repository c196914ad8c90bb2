"""Opening an ET + Kineto pair against opening its Kineto trace alone (issue 23).

    python bench/bench_pair.py             # the shared pairs, 5 interleaved rounds
    python bench/bench_pair.py --repeat 9

Per pair, in one process, rounds interleaved (the minimum of each is kept), CPU time
(``time.process_time``: on a loaded machine the ratio of CPU times is what the ratio of
wall times would be on an idle one):

- kineto: ``load_kineto`` of the Kineto file, no cache;
- et: ``load_trace`` of the ET file alone (its parse: what a pair adds besides the link);
- pair: ``load_pair`` of both files (Kineto + ET load + the link), no cache;
- link: ``link_et_kineto`` alone on the two loaded traces;
- ratio: pair / kineto (issue 23's target: at most 1.3x; a pair whose ET file is as big as
  its Kineto file -- one iteration each -- pays about as much again for parsing the ET);
- cached kineto / cached pair: ``load_cached`` with a warm cache (trace entry, and the link
  entry for the pair); "links run" counts calls of the link function during the cached
  reopens of the pair (0: the link came from the cache).

Times are milliseconds of CPU.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
ET_DIR = REPO.parent / "shared" / "traces" / "et"
PAIRS = ("param_linear_cuda_pair", "param_dlrm_rank0_cuda_pair", "hta_simple_add_cuda_pair", "torch_cpu_pair")


def _cpu(fn) -> float:
    gc.collect()
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1e3


def measure(folder: str, repeat: int) -> dict[str, float]:
    from tracetui import session
    from tracetui.kineto import load_kineto
    from tracetui.link import link_et_kineto
    from tracetui.store import links, traces

    et_path, k_path = str(ET_DIR / folder / "et.json.gz"), str(ET_DIR / folder / "kineto.json.gz")
    calls = []

    def counting(et, kt):
        calls.append(1)
        return link_et_kineto(et, kt)

    links.link_et_kineto = counting
    out: dict[str, list[float]] = {k: [] for k in ("kineto", "et", "pair", "link", "cached kineto", "cached pair")}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRACETUI_CACHE_DIR"] = cache
        traces.load_cached([et_path, k_path])  # warm: trace entry + link entry
        calls.clear()
        for _ in range(repeat):
            out["kineto"].append(_cpu(lambda: load_kineto(k_path)))
            out["et"].append(_cpu(lambda: session.load_trace(et_path)))
            out["pair"].append(_cpu(lambda: session.load_pair(et_path, k_path)))
            et, kt = session.load_trace(et_path), session.load_trace(k_path)
            out["link"].append(_cpu(lambda et=et, kt=kt: link_et_kineto(et, kt)))
            out["cached kineto"].append(_cpu(lambda: traces.load_cached([k_path])))
            out["cached pair"].append(_cpu(lambda: traces.load_cached([et_path, k_path])))
    links.link_et_kineto = link_et_kineto
    res = {k: min(v) for k, v in out.items()}
    res["links run"] = len(calls)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    head = ("pair", "kineto", "et", "pair", "link", "ratio", "cached kineto", "cached pair", "links run")
    rows = []
    for folder in PAIRS:
        r = measure(folder, args.repeat)
        rows.append((folder, f"{r['kineto']:.1f}", f"{r['et']:.1f}", f"{r['pair']:.1f}", f"{r['link']:.1f}",
                     f"{r['pair'] / r['kineto']:.2f}x", f"{r['cached kineto']:.1f}", f"{r['cached pair']:.1f}",
                     str(r["links run"])))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    print("CPU ms, minimum of", args.repeat, "interleaved rounds; ratio = pair / kineto (target <= 1.3x)")
    for row in (head, *rows):
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
