"""Where did the memory go (issue 32): CPU time of the memory analysis of the largest shared
trace (216,092 events, 28,010 ``[memory]`` events on cuda:1 and the CPU), against the floor
of decoding those events' args, all in one process.

    python bench/bench_memory.py [--trace FILE] [--repeat 7] [--json FILE]

The trace is loaded once (not timed).  Each row is timed ``--repeat`` times on a fresh copy
of the trace's per-trace memo (nothing cached between runs); the minimum and the median of
``time.process_time()`` (CPU seconds of this process: the machine is shared, wall time is
noise) are printed, with wall time beside it:

* ``args floor``: one msgspec call decoding every ``[memory]`` event's args into the model's
  struct, nothing else (the least any analysis of these events does);
* ``model``: :func:`tracetui.analysis.memory.build_memory_model` (decode, order, pair with
  frees, attribute to the innermost host event / cpu_op / step, totals per device);
* ``peaks + owners``: on a built model, both peaks of every device with their live blocks and
  owners (shapes, callers), top ops and by-step rows: ``memory_document``;
* ``node index``: on a built model, the per-node index (preorder keys, LCAs for transient
  bytes) the detail pane asks;
* ``analysis``: all of it from the loaded trace, as ``tracetui memory`` does after the load
  (model + document): the number issue 32 bounds at 0.3 s;
* the browser, on a built model: ``timeline rows`` (the allocated/reserved tracks the timeline
  builds on open, ``memory_tracks``), ``draw rows`` (their cells for a 200-cell window over the
  whole trace, what each repaint costs), ``memory screen`` (``memory_views``: what ``M``
  computes in its worker) and ``peak key`` (``peak_targets``: what ``^`` computes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "traces" / "kineto" / "v100x2_nccl_216k.json.gz"
TARGET_S = 0.3


def _fresh(kt) -> None:
    """Forget every per-trace result (analysis/frames.py ``per_trace``) of ``kt``."""
    from tracetui.analysis import frames

    frames._CACHE.pop(id(kt), None)


def _time(fn, repeat: int) -> tuple[float, float, float]:
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), statistics.median(cpu), min(wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args()
    from tracetui.analysis.memory import _MemArgs, build_memory_model, memory_events, memory_model
    from tracetui.analysis.memory_doc import memory_document
    from tracetui.analysis.memory_peak import NodeIndex
    from tracetui.kineto import load_kineto
    from tracetui.session import LinkedTrace

    kt = load_kineto(args.trace)
    linked = LinkedTrace(kt)
    ev = memory_events(kt)
    _ = kt.order  # the preorder numbering is the model's, built at the first tree query anyway
    m = build_memory_model(kt)

    def analysis() -> None:
        _fresh(kt)
        memory_document(linked)

    def document() -> None:
        _fresh(kt)
        from tracetui.analysis import frames

        frames.per_trace(kt, "memory_model", lambda _t: m)
        memory_document(linked)

    rows = [
        ("args floor", _time(lambda: kt.args_batch(ev, _MemArgs), args.repeat)),
        ("model", _time(lambda: build_memory_model(kt), args.repeat)),
        ("peaks + owners", _time(document, args.repeat)),
        ("node index", _time(lambda: NodeIndex(kt, m), args.repeat)),
        ("analysis", _time(analysis, args.repeat)),
    ]
    from tracetui.ui.view.memory_track import memory_tracks
    from tracetui.ui.view.memory_view import memory_views, peak_targets

    def built(fn):  # on a fresh memo holding only the built model, as after the browser's first use
        def run() -> None:
            _fresh(kt)
            from tracetui.analysis import frames

            frames.per_trace(kt, "memory_model", lambda _t: m)
            fn()
        return run

    tracks = memory_tracks(kt)
    edges = np.linspace(min(t.starts[0] for t in tracks), max(t.ends[-1] for t in tracks), 201) if tracks else None
    rows += [
        ("timeline rows", _time(built(lambda: memory_tracks(kt)), args.repeat)),
        ("draw rows", _time(lambda: [t.cell_levels(edges) for t in tracks], args.repeat)),
        ("memory screen", _time(built(lambda: memory_views(linked)), args.repeat)),
        ("peak key", _time(built(lambda: peak_targets(kt)), args.repeat)),
    ]
    floor = rows[0][1][0]
    print(f"{Path(args.trace).name}: {kt.n_events:,} model events (flows and metadata apart), "
          f"{ev.size:,} [memory] events, {len(memory_model(kt).devices)} devices; "
          f"{args.repeat} runs each; CPU = time.process_time()")
    print()
    print("| step | CPU min s | CPU median s | wall min s | x args floor |")
    print("|---|---|---|---|---|")
    for name, (cmin, cmed, wmin) in rows:
        print(f"| {name} | {cmin:.4f} | {cmed:.4f} | {wmin:.4f} | {cmin / floor:.1f} |")
    total = dict(rows)["analysis"][0]
    print()
    print(f"analysis CPU min {total:.3f} s ({total / ev.size * 1e6:.2f} µs per [memory] event); issue 32's target: "
          f"{TARGET_S} s for the ~30k [memory] events of {DEFAULT.name}"
          + (f": {'met' if total < TARGET_S else 'MISSED'}" if Path(args.trace) == DEFAULT else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({name: {"cpu_min_s": a, "cpu_median_s": b, "wall_min_s": c}
                                               for name, (a, b, c) in rows}, indent=1))
    return 1 if Path(args.trace) == DEFAULT and total >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
