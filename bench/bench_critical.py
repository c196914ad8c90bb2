"""Critical path (issue 28): agreement with HolisticTraceAnalysis, and speed.

    python bench/bench_critical.py                 # all three parts
    python bench/bench_critical.py --parts hta     # or speed, job; --copies N (64-rank job), --size N (tiling)

**hta**: for every profiler step (or the whole trace when it has none) of a set of shared
traces, HTA 0.5.0's critical path of the same window
(``TraceAnalysis.critical_path_analysis(rank, "ProfilerStep#N", instance)``, run by
``bench/hta_critical_path.py`` in ``/tmp/htavenv`` as a subprocess, nanosecond rounding off,
the instance whose window is the step's, so that both tools look at the same window;
``--reuse-hta`` reads the last run's rows) beside

1. tracetui's ``--method hta`` (HTA's definition computed on tracetui's graph:
   :mod:`tracetui.critical.hta_method`), on ``TRACES`` and on ``EXTRA_TRACES``;
2. tracetui's own ``total_us`` (the elapsed time).  The methods differ (docs/critical_path.md,
   "Differences from HTA"), and each difference is measured from tracetui's own segments:

- where the two paths run: HTA's path goes from its first to its last node (its *span*),
  tracetui's from the window start to the end of its last event; tracetui's time before
  HTA's start and after its end is counted apart (work carried in from the previous step,
  the time before the window's first op, the forward and optimizer on the main thread when
  HTA's path stays on the autograd thread, a first launch the GPU ran 149 ms late);
- inside HTA's span, the time HTA gives zero weight: ``outside ops`` (host time outside any
  cpu_op or runtime/driver call: python functions, annotations such as ProfilerStep,
  untraced time, hand-offs between threads; HTA's graph has cpu_ops and runtime calls only,
  joined by zero-weight edges), ``sync`` (blocking sync calls: zero weight in HTA, like its
  GPU-to-host sync edges), ``zeroed calls`` (host time in calls HTA treats as blocking
  whatever they did: ``cudaMemcpyAsync``, ``cudaEventQuery``, ...) and ``other threads``
  (host time on threads other than the one with the most: HTA has no edge between threads);
- *comparable*: tracetui's path inside HTA's span minus that zero-weight time.

**speed**: one step (the longest) of a 2-million-event trace (the shared
``v100x2_nccl_216k`` tiled ``--size`` times by ``bench/scale_trace.py``, loaded through the
cache), split into graph, path and slack; and the whole trace as one window.  CPU seconds
of this process (``time.process_time``): the machine is shared and loaded, wall time is noise.

**job**: every step of a 64-rank job (``bench/bench_job.py``'s tiling of the shared 8-rank
job, ``--copies`` copies per rank) on the local process pool: wall seconds and the CPU
seconds of this process and of the per-rank work (measured in the workers, both rounds),
cold (empty trace cache: every rank parsed first) and warm.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KINETO = REPO.parent / "shared" / "traces" / "kineto"
HTA_PY = Path("/tmp/htavenv/bin/python")
TRACES = ["h100_bert_inference", "a100_event_sync_multistream", "mi300_resnet_train_checkpointing",
          "v100_ns_timestamps_fwdbwd", "a100_cudagraph_nccl_rank0", "v100x2_nccl_216k", "b200x8_eager",
          "amd_vllm_hipgraph"]
#: traces checked with --method hta only (added after the method was written: an independent check)
EXTRA_TRACES = ["v100_old_flow_format_cudagraph", "h100_qwen_chat_inference", "mi250_minitoy_train", "a100_triton",
                "mtia_inference_rank0", "mi210_gpu_only"]
_OP_KINDS = ("cpu_op", "runtime", "driver")


def _cpu() -> float:
    return time.process_time()


# ---------------------------------------------------------------------- hta
HTA_CACHE = Path("/tmp/tracetui_bench/hta_critical_rows.json")


def hta_rows(name: str, windows: list[tuple[str, float, float]] | None, reuse: bool = False) -> list[dict]:
    """HTA's rows for ``windows`` ((annotation, start, end), absolute µs: HTA runs the instance
    of that annotation whose window it is) or, with None, for the whole trace; run with
    ``HTA_DISABLE_NS_ROUNDING=1`` (HTA otherwise rounds nanosecond timestamps down to whole
    µs, which alone moves h100_bert_inference's path by 3 %); ``reuse``: from the last run's file."""
    cache = json.loads(HTA_CACHE.read_text()) if reuse and HTA_CACHE.exists() else {}
    args = ["", "0"] if windows is None else ["--window", *[str(x) for w in windows for x in w]]
    key = f"{name}:{' '.join(args)}"
    if key in cache:
        return cache[key]
    cmd = [str(HTA_PY), str(REPO / "bench" / "hta_critical_path.py"), str(KINETO / f"{name}.json.gz"), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                         env=dict(os.environ, HTA_DISABLE_NS_ROUNDING="1"))
    rows = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    cache = json.loads(HTA_CACHE.read_text()) if HTA_CACHE.exists() else {}
    cache[key] = rows
    HTA_CACHE.parent.mkdir(parents=True, exist_ok=True)
    HTA_CACHE.write_text(json.dumps(cache))
    return rows


_GPU_SIDE = ("gpu", "gpu_gap", "launch_delay", "stream_wait")


def ours(kt, window, span: tuple[float, float] | None = None) -> dict:
    """tracetui's path of ``window``; with ``span`` (absolute µs: HTA's path from its first
    to its last node), the part of it inside that span and, of that part, the time HTA gives
    zero weight by method (each documented difference measured from tracetui's segments)."""
    from tracetui.critical import critical_path
    from tracetui.critical.hta_method import HTA_ZERO_WEIGHT_CALLS
    from tracetui.critical.model import kind_name
    from tracetui.kineto.kinds import Kind

    cp = critical_path(kt, window, slack=False)
    s = cp.segments
    start = s.start_us + cp.origin_us
    lo, hi = span if span is not None else (-np.inf, np.inf)
    inside = np.clip(np.minimum(start + s.dur_us, hi) - np.maximum(start, lo), 0.0, None)
    parts = dict.fromkeys(("outside", "sync", "zeroed"), 0.0)
    gpu_side = 0.0
    per_thread: dict[str, float] = {}
    ops = {int(Kind.CPU_OP), int(Kind.RUNTIME), int(Kind.DRIVER)}
    for k, e, d, where in zip(s.kind.tolist(), s.event.tolist(), inside.tolist(), s.where):
        kind = kind_name(k)
        if kind in _GPU_SIDE:
            gpu_side += d
        elif kind == "sync_wait":
            parts["sync"] += d
        elif e < 0 or (int(kt.kind[e]) not in ops and kt.cpu_op_of[e] < 0):
            parts["outside"] += d
        elif kt.name(e) in HTA_ZERO_WEIGHT_CALLS:
            parts["zeroed"] += d
        else:
            per_thread[where] = per_thread.get(where, 0.0) + d
    # HTA has no edge between CPU threads: its path stays on one thread's ops
    host = max(per_thread.values(), default=0.0)
    parts["other_threads"] = sum(per_thread.values()) - host
    first = float(start[0]) if len(s) else 0.0
    before = max(0.0, min(lo, first + cp.total_us) - first)
    return {"total": cp.total_us, "carried": cp.carried_in_us, "in_span": float(inside.sum()), "before": before,
            "after": max(0.0, cp.total_us - before - float(inside.sum())), **parts, "comparable": gpu_side + host}


def _windows(kt) -> list[tuple[str, object]]:
    from tracetui.critical import profiler_steps, step_window, trace_window

    steps = profiler_steps(kt)
    return [(f"ProfilerStep#{n}", step_window(kt, n)) for n, _ in steps] or [("whole trace", trace_window(kt))]


def part_hta(reuse: bool = False) -> list[str]:
    """Two tables: tracetui ``--method hta`` beside HTA (the same definition, computed on
    tracetui's graph), and tracetui's elapsed-time path beside HTA with every difference in
    method measured from tracetui's segments."""
    from tracetui.critical import critical_path
    from tracetui.kineto import load_kineto

    same = ["| trace | window | HTA instance | tracetui --method hta µs | HTA µs | ratio | tracetui span µs "
            "| HTA span µs | tracetui elapsed µs |", "|---|---|---|---|---|---|---|---|---|"]
    diff = ["| trace | window | tracetui total µs | carried in µs | HTA µs | HTA path span µs | tracetui before "
            "HTA's start µs | tracetui after HTA's end µs | tracetui in HTA's span µs | outside ops µs | sync µs "
            "| zeroed calls µs | other threads µs | comparable µs | total / HTA | comparable / HTA |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in TRACES + EXTRA_TRACES:
        kt = load_kineto(KINETO / f"{name}.json.gz")
        wins = _windows(kt)
        spec = None if wins[0][0] == "whole trace" else [
            (label, kt.origin_us + w.start_us, kt.origin_us + w.end_us) for label, w in wins]
        hta = hta_rows(name, spec, reuse) if HTA_PY.exists() else []
        for i, (label, w) in enumerate(wins):
            h = hta[i] if i < len(hta) else {"ok": False, "error": "HTA not run"}
            mine = critical_path(kt, w, slack=False, method="hta")
            if not h.get("ok"):
                err = h.get("error", "?")
                err = "no HTA instance has this window" if err.startswith("LookupError") else err[:60]
                same.append(f"| {name} | {label} | - | {mine.total_us:,.1f} | HTA failed: {err} | - | - | - | - |")
                if name in TRACES:
                    o = ours(kt, w)
                    diff.append(f"| {name} | {label} | {o['total']:,.0f} | {o['carried']:,.0f} | HTA failed: "
                                f"{err} | - | - | - | - | - | - | - | - | - | - | - |")
                print(same[-1], flush=True)
                continue
            ht = h["total_us"]
            span = (h["min_ts"] + h["start_us"], h["min_ts"] + h["end_us"])
            o = ours(kt, w, span)
            a, b = mine.span_us or (0.0, 0.0)
            same.append(f"| {name} | {label} | {h['instance']} | {mine.total_us:,.1f} | {ht:,.1f} | "
                        f"{mine.total_us / ht:.4f} | {b - a:,.0f} | {span[1] - span[0]:,.0f} | {o['total']:,.0f} |")
            print(same[-1], flush=True)
            if name not in TRACES:
                continue
            diff.append(f"| {name} | {label} | {o['total']:,.0f} | {o['carried']:,.0f} | {ht:,.0f} | "
                        f"{span[1] - span[0]:,.0f} | {o['before']:,.0f} | {o['after']:,.0f} | {o['in_span']:,.0f} | "
                        f"{o['outside']:,.0f} | "
                        f"{o['sync']:,.0f} | {o['zeroed']:,.0f} | {o['other_threads']:,.0f} | {o['comparable']:,.0f} "
                        f"| {o['total'] / ht:.3f} | {o['comparable'] / ht:.3f} |")
    return (["### tracetui --method hta (HTA's definition) beside HTA", ""] + same
            + ["", "### tracetui's elapsed-time path beside HTA, each difference in method measured", ""] + diff)


# ---------------------------------------------------------------------- speed
def part_speed(size: int) -> list[str]:
    from bench.scale_trace import DEFAULT_OUT_DIR, DEFAULT_SOURCE, scale_trace
    from tracetui.critical import build_graph, default_window, trace_window
    from tracetui.critical.model import segments_of, slack_of
    from tracetui.critical.solve import event_slack, latest_times, path_edges
    from tracetui.store.traces import load_cached

    path = DEFAULT_OUT_DIR / f"v100x2_nccl_216k_x{size}.json.gz"
    if not path.exists():
        DEFAULT_OUT_DIR.mkdir(parents=True, exist_ok=True)
        scale_trace(DEFAULT_SOURCE, path, size)
    t0 = time.perf_counter()
    kt = load_cached([str(path)]).kineto
    load_s = time.perf_counter() - t0
    lines = [f"trace: {path.name}, {kt.n_events:,} events in the model (load {load_s:.1f} s wall, cache)", "",
             "| window | events | edges | graph CPU s | path CPU s | slack CPU s | total CPU s | path µs |",
             "|---|---|---|---|---|---|---|---|"]
    for label, w in (("longest step", default_window(kt)), ("whole trace", trace_window(kt))):
        c0 = _cpu()
        g = build_graph(kt, w)
        c1 = _cpu()
        e = path_edges(g)
        segments_of(g, e)
        c2 = _cpu()
        slack_of(g, event_slack(g, latest_times(g)))
        c3 = _cpu()
        lines.append(f"| {label} ({w.name}) | {len(g.sel):,} | {g.src.size:,} | {c1 - c0:.2f} | {c2 - c1:.2f} | "
                     f"{c3 - c2:.2f} | {c3 - c0:.2f} | {g.node_t[g.sink] - w.start_us:,.0f} |")
        print(lines[-1], flush=True)
    return lines


# ---------------------------------------------------------------------- job
def part_job(copies: int, workers: int | None) -> list[str]:
    from bench.bench_job import make_job
    from tracetui.job.critical import job_critical_paths

    work = Path("/tmp/tracetui_bench")
    work.mkdir(parents=True, exist_ok=True)
    job = make_job(64, copies, work)
    lines = [f"job: {job} (64 ranks, {copies} copies of the 8-rank job per rank)", "",
             "| run | steps | crossings | wall s | CPU s (this process) | CPU s (per-rank work, all processes) |",
             "|---|---|---|---|---|---|"]
    cold = tempfile.mkdtemp(prefix="tracetui_cp_cache_")
    os.environ["TRACETUI_CACHE_DIR"] = cold  # cold: an empty cache
    for label in ("cold cache", "warm cache"):
        c0, t0 = _cpu(), time.perf_counter()
        res = job_critical_paths([str(job)], every_step=True, workers=workers)
        wall = time.perf_counter() - t0
        crossings = sum(len(cp.crossings) for cp in res.paths.values())
        lines.append(f"| {label} | {len(res.paths)} | {crossings} | {wall:.1f} | {_cpu() - c0:.1f} | "
                     f"{res.worker_cpu_s:.1f} |")
        print(lines[-1], flush=True)
    shutil.rmtree(cold, ignore_errors=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="hta,speed,job")
    ap.add_argument("--size", type=int, default=10, help="tiling of v100x2_nccl_216k for the speed part")
    ap.add_argument("--copies", type=int, default=10, help="copies per rank of the 64-rank job")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--reuse-hta", action="store_true", help=f"HTA's rows from the last run ({HTA_CACHE})")
    args = ap.parse_args()
    os.environ.setdefault("TRACETUI_CACHE_DIR", "/tmp/tracetui_bench/cache")
    out = []
    parts = args.parts.split(",")
    if "hta" in parts:
        out += ["## Agreement with HTA", ""] + part_hta(args.reuse_hta) + [""]
    if "speed" in parts:
        out += ["## One step of a 2-million-event trace", ""] + part_speed(args.size) + [""]
    if "job" in parts:
        out += ["## Every step of a 64-rank job", ""] + part_job(args.copies, args.workers) + [""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
