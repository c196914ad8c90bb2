"""Run HolisticTraceAnalysis's critical path on one trace (in HTA's own virtualenv, as a
subprocess of bench/bench_critical.py; never imported by tracetui or its tests).

    /tmp/htavenv/bin/python bench/hta_critical_path.py TRACE.json.gz ANNOTATION INSTANCE...

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


def main() -> None:
    path, annotation, instances = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(path), os.path.join(tmp, os.path.basename(path)))
        t0 = time.process_time()
        ta = TraceAnalysis(trace_dir=tmp)
        load = time.process_time() - t0
        rank = next(iter(ta.t.traces))
        min_ts = float(ta.t.min_ts)
        for inst in instances:
            t1 = time.process_time()
            row = {"instance": inst, "load_cpu_s": load, "min_ts": min_ts}
            try:
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
