"""Opening an ET + Kineto pair against opening its Kineto trace alone (issue 23).

    python bench/bench_pair.py             # the shared pairs, 5 interleaved rounds
    python bench/bench_pair.py --repeat 9 --pairs hta_simple_add_cuda_pair

Per pair, rounds interleaved (the minimum of each measurement is kept), CPU time (on a
loaded machine the ratio of CPU times is what the ratio of wall times would be on an idle
one), in milliseconds:

1. In this process, **cold** (no cache): ``load_kineto`` of the Kineto file against
   ``load_pair`` of both files (Kineto load + ET load + link); the ET's share split into
   reading the file (open, memory-limit probe, gunzip), decoding it into columns, and the
   link alone; "probe" is the memory-limit probe alone (/proc and cgroup files), which
   every trace file read pays once.
2. In this process, **cached reopen** (warm cache): ``load_cached([kineto])`` against
   ``load_cached([et, kineto])``; "parses" and "links" count the ET/Kineto parses and link
   runs during the cached reopens of the pair (0 and 0: all three come from the cache).
3. **End to end**, what a user pays: CPU of a fresh ``python -m tracetui info`` process
   (``resource.getrusage(RUSAGE_CHILDREN)``: interpreter start, imports, load, the report),
   Kineto alone against the pair, first open (an empty cache folder: parse, link, write
   the entries) and reopen (the entries written by the first open).

Each ratio is pair / Kineto alone; issue 23's target is at most 1.3x.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
ET_DIR = REPO.parent / "shared" / "traces" / "et"
PAIRS = ("param_linear_cuda_pair", "param_dlrm_rank0_cuda_pair", "hta_simple_add_cuda_pair", "torch_cpu_pair")
TARGET = 1.3


def _cpu(fn) -> float:
    gc.collect()
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1e3


def _child_cpu(args: list[str], cache: str) -> float:
    """CPU ms (user + system) of one fresh ``tracetui`` process."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=cache, PYTHONPATH=str(REPO), COLUMNS="120", NO_COLOR="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "tracetui", *args], env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


class _Counts:
    """Counts parses and link runs, wherever they are called from."""

    def __init__(self) -> None:
        import tracetui.et as et_pkg
        import tracetui.session as session
        import tracetui.store.links as links
        import tracetui.store.traces as traces

        self.n = {"parses": 0, "links": 0}
        self._undo = []
        for mod, name, what in ((session, "load_kineto", "parses"), (et_pkg, "load_et", "parses"),
                                (links, "link_et_kineto", "links"), (session, "link_et_kineto", "links"),
                                (traces, "link_et_kineto", "links")):
            real = getattr(mod, name)

            def counting(*a, _real=real, _what=what, **k):
                self.n[_what] += 1
                return _real(*a, **k)

            setattr(mod, name, counting)
            self._undo.append((mod, name, real))

    def close(self) -> None:
        for mod, name, real in self._undo:
            setattr(mod, name, real)


def measure(folder: str, repeat: int, e2e: bool) -> dict[str, float]:
    from tracetui import session
    from tracetui.et import load_et
    from tracetui.io.files import read_trace_bytes
    from tracetui.io.limits import available_memory_bytes
    from tracetui.kineto import load_kineto
    from tracetui.link import link_et_kineto
    from tracetui.store import traces

    et_path, k_path = str(ET_DIR / folder / "et.json.gz"), str(ET_DIR / folder / "kineto.json.gz")
    out: dict[str, list[float]] = {}

    def add(name: str, ms: float) -> None:
        out.setdefault(name, []).append(ms)

    with tempfile.TemporaryDirectory() as warm:
        os.environ["TRACETUI_CACHE_DIR"] = warm
        traces.load_cached([et_path, k_path])  # the trace entries and the link entry
        et, kt = session.load_trace(et_path), session.load_trace(k_path)
        counts = _Counts()
        try:
            for _ in range(repeat):
                add("kineto", _cpu(lambda: load_kineto(k_path)))
                add("pair", _cpu(lambda: session.load_pair(et_path, k_path)))
                add("et read", _cpu(lambda: read_trace_bytes(et_path)))
                add("probe", _cpu(available_memory_bytes))
                add("et load", _cpu(lambda: load_et(et_path)))
                add("link", _cpu(lambda: link_et_kineto(et, kt)))
                add("cached kineto", _cpu(lambda: traces.load_cached([k_path])))
                before = dict(counts.n)
                add("cached pair", _cpu(lambda: traces.load_cached([et_path, k_path])))
                for k in ("parses", "links"):
                    add(k, counts.n[k] - before[k])
                if e2e:
                    for name, args in (("kineto", ["info", k_path]), ("pair", ["info", k_path, et_path])):
                        with tempfile.TemporaryDirectory() as empty:
                            add(f"e2e first {name}", _child_cpu(args, empty))
                        add(f"e2e reopen {name}", _child_cpu(args, warm))
        finally:
            counts.close()
    res = {k: min(v) for k, v in out.items()}
    res["parses"], res["links"] = sum(out["parses"]), sum(out["links"])
    res["et decode"] = res["et load"] - res["et read"]
    return res


def _table(title: str, head: tuple[str, ...], rows: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    print(title)
    for row in (head, *rows):
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))
    print()


def _ratio(a: float, b: float) -> str:
    r = a / b
    return f"{r:.2f}x {'meets' if r <= TARGET else 'misses'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pairs", nargs="*", default=list(PAIRS))
    ap.add_argument("--no-e2e", action="store_true", help="skip the fresh-process measurements")
    args = ap.parse_args()
    res = {folder: measure(folder, args.repeat, not args.no_e2e) for folder in args.pairs}
    print(f"CPU ms, minimum of {args.repeat} interleaved rounds; ratio = pair / Kineto alone, target <= {TARGET}x\n")
    _table("1. cold open in this process (no cache)",
           ("pair", "kineto", "pair", "ratio", "et read", "et decode", "link", "probe"),
           [(f, f"{r['kineto']:.1f}", f"{r['pair']:.1f}", _ratio(r["pair"], r["kineto"]), f"{r['et read']:.2f}",
             f"{r['et decode']:.2f}", f"{r['link']:.2f}", f"{r['probe']:.2f}") for f, r in res.items()])
    _table("2. cached reopen in this process",
           ("pair", "kineto", "pair", "ratio", "parses", "links"),
           [(f, f"{r['cached kineto']:.2f}", f"{r['cached pair']:.2f}", _ratio(r["cached pair"], r["cached kineto"]),
             str(r["parses"]), str(r["links"])) for f, r in res.items()])
    if not args.no_e2e:
        _table("3. end to end: a fresh `tracetui info` process (CPU of the child)",
               ("pair", "first: kineto", "pair", "ratio", "reopen: kineto", "pair", "ratio"),
               [(f, f"{r['e2e first kineto']:.0f}", f"{r['e2e first pair']:.0f}",
                 _ratio(r["e2e first pair"], r["e2e first kineto"]), f"{r['e2e reopen kineto']:.0f}",
                 f"{r['e2e reopen pair']:.0f}", _ratio(r["e2e reopen pair"], r["e2e reopen kineto"]))
                for f, r in res.items()])


if __name__ == "__main__":
    main()
