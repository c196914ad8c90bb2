"""Run HolisticTraceAnalysis's critical path on one trace (in HTA's own virtualenv, as a
subprocess of bench/bench_critical.py; never imported by tracetui or its tests).

    /tmp/htavenv/bin/python bench/hta_critical_path.py TRACE.json.gz ANNOTATION INSTANCE...
    /tmp/htavenv/bin/python bench/hta_critical_path.py TRACE.json.gz --window NAME START END ...

``--window``: for each (NAME, START, END) triple (absolute µs), the instance of the annotation
NAME whose window is [START, END] within 1 µs (HTA matches annotation names by substring and
counts the GPU copies of the step annotations too, so its instance numbers are not step
numbers); ``window_start``/``window_end`` in the output are the window HTA used.

Prints one JSON line per instance: ``total_us`` (the sum of the path's edge weights),
``start_us``/``end_us`` (µs of the path's first and last node from HTA's trace start
``min_ts``, also printed: absolute µs = ``min_ts + start_us``), ``by_type``
(weights by HTA edge type), ``by_bound`` (its cpu/gpu classification), ``seconds``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time


def _windows(ta, rank: int, annotation: str) -> list[tuple[float, float]]:
    """The windows (relative µs) of the instances of ``annotation`` as HTA's
    critical_path_analysis finds them (every name containing it, in the frame's order)."""
    df = ta.t.get_trace(rank)
    if annotation == "":
        return [(float(df.ts.min()), float((df.ts + df.dur).max()))]
    ids = [v for k, v in ta.t.symbol_table.get_sym_id_map().items() if annotation in k]
    ann = df[df.name.isin(ids)]
    return list(zip(ann.ts.astype(float).tolist(), (ann.ts + ann.dur).astype(float).tolist()))


def main() -> None:
    path = sys.argv[1]
    if sys.argv[2] == "--window":
        rest = sys.argv[3:]
        jobs = [(rest[i], float(rest[i + 1]), float(rest[i + 2])) for i in range(0, len(rest), 3)]
    else:
        jobs = [(sys.argv[2], int(x), None) for x in sys.argv[3:]]
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(path), os.path.join(tmp, os.path.basename(path)))
        t0 = time.process_time()
        ta = TraceAnalysis(trace_dir=tmp)
        load = time.process_time() - t0
        rank = next(iter(ta.t.traces))
        min_ts = float(ta.t.min_ts)
        for annotation, inst, end in jobs:
            t1 = time.process_time()
            wins = _windows(ta, rank, annotation)
            if end is not None:  # find the instance whose window is [inst, end] (absolute µs)
                hit = [k for k, (a, b) in enumerate(wins) if abs(a + min_ts - inst) < 1 and abs(b + min_ts - end) < 1]
                inst = hit[0] if hit else -1
            row = {"annotation": annotation, "instance": inst, "load_cpu_s": load, "min_ts": min_ts}
            if 0 <= inst < len(wins):
                row.update(window_start=wins[inst][0] + min_ts, window_end=wins[inst][1] + min_ts)
            try:
                if inst < 0:
                    raise LookupError(f"no instance of {annotation!r} has this window")
                res = ta.critical_path_analysis(rank=rank, annotation=annotation, instance_id=inst)
                if res is None:
                    raise ValueError("annotation not found")
                g, ok = res
                df = g.get_critical_path_breakdown()
                nodes = [g.node_list[n] for n in g.critical_path_nodes]
                row.update(ok=bool(ok), total_us=float(df.duration.sum()), start_us=float(nodes[0].ts),
                           end_us=float(nodes[-1].ts),
                           by_type={str(k): float(v) for k, v in df.groupby("type").duration.sum().items()},
                           by_bound={str(k): float(v) for k, v in df.groupby("bound_by").duration.sum().items()})
            except Exception as exc:  # noqa: BLE001 -- report HTA's failure in the table
                row.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            row["cpu_s"] = time.process_time() - t1
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
