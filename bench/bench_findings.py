"""CPU time of ``tracetui check``'s rules (issue 29) on a big real trace, against the load and
the summary of the same trace measured in the same process.

    python bench/bench_findings.py [TRACE ...] [--repeat 3]

Default trace: ``../shared/traces/kineto/v100x2_nccl_216k.json.gz``; add the tilings of
``bench/scale_trace.py`` (``/tmp/tracetui_bench/*.json.gz``) for 2 million events.  Every
number is CPU seconds (``time.process_time``, minimum of ``--repeat`` runs) so that a loaded
machine gives comparable ratios: per rule (a fresh check context each run, so the shared
frames it needs are counted in the first rule that builds them: the order is the report's),
all rules together, ``build_summary``, and ``load_kineto``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "traces", "kineto", "v100x2_nccl_216k.json.gz")


def _cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def bench(path: str, repeat: int) -> list[tuple[str, float]]:
    from tracetui.analysis.summary import build_summary
    from tracetui.findings.context import CheckContext
    from tracetui.findings.engine import CHECKS, check_findings
    from tracetui.findings.spec import rule_configs
    from tracetui.kineto import load_kineto
    from tracetui.session import LinkedTrace

    rows = [("load_kineto", _cpu(lambda: load_kineto(path), 1))]
    linked = LinkedTrace(load_kineto(path))
    configs = rule_configs()
    rows.append(("all rules (check_findings)", _cpu(lambda: check_findings(linked, configs), repeat)))
    ctx_holder = {}

    def fresh():
        ctx_holder["ctx"] = CheckContext(linked)

    for rid, fn in CHECKS.items():
        def one(rid=rid, fn=fn):
            fn(ctx_holder["ctx"], configs[rid])
        # each rule on a context that already holds what the earlier rules built (as in a check run)
        fresh()
        for prev in list(CHECKS)[: list(CHECKS).index(rid)]:
            CHECKS[prev](ctx_holder["ctx"], configs[prev])
        rows.append((f"  {rid}", _cpu(one, 1)))
    rows.append(("build_summary", _cpu(lambda: build_summary(linked), repeat)))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", default=[DEFAULT])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for path in args.traces:
        rows = bench(path, args.repeat)
        load = rows[0][1]
        print(f"{os.path.basename(path)}  (CPU s, min of {args.repeat}; ratio to load_kineto)")
        for name, s in rows:
            print(f"  {name:<32} {s:8.3f}  {s / load:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
