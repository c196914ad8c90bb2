"""Independent oracles for the findings tests: facts read straight from a Kineto file with
gzip + json (no tracetui code), by containment of ts/dur on one (pid, tid)."""

from __future__ import annotations

import bisect
import gzip
import json
import re
from functools import lru_cache
from pathlib import Path

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
CALL_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "runtime"}
SYNC = re.compile(r"^(cuda|hip)(DeviceSynchronize|StreamSynchronize|EventSynchronize)$"
                  r"|^cu(Ctx|Stream|Event)Synchronize")
ITEM_OPS = {"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"}
COPY_OPS = {"aten::to", "aten::_to_copy", "aten::copy_"}


@lru_cache(maxsize=8)
def complete_events(path: Path) -> tuple[dict, ...]:
    """Every ``ph: X`` event of the file, in file order."""
    doc = json.loads(gzip.open(path).read())
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    return tuple(e for e in evs if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e)


def end(e: dict) -> float:
    return float(e["ts"]) + float(e.get("dur", 0.0))


def corr(e: dict):
    return (e.get("args") or {}).get("correlation")


class Threads:
    """Events per (pid, tid), sorted by start, for containment queries."""

    def __init__(self, events) -> None:
        self.by: dict[tuple, list[dict]] = {}
        for e in events:
            self.by.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        for v in self.by.values():
            v.sort(key=lambda e: float(e["ts"]))
        self.starts = {k: [float(e["ts"]) for e in v] for k, v in self.by.items()}

    def inside(self, outer: dict) -> list[dict]:
        """Events of ``outer``'s thread that lie within it (itself excluded)."""
        k = (outer.get("pid"), outer.get("tid"))
        evs, st = self.by.get(k, []), self.starts.get(k, [])
        lo, hi = bisect.bisect_left(st, float(outer["ts"])), bisect.bisect_right(st, end(outer))
        return [e for e in evs[lo:hi] if e is not outer and end(e) <= end(outer)]


def union(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def length(runs) -> float:
    return sum(b - a for a, b in runs)


def covered(runs, a: float, b: float) -> float:
    """Length of [a, b] covered by the disjoint runs."""
    return sum(max(0.0, min(b, e) - max(a, s)) for s, e in runs)


def gpu_work(path: Path) -> list[dict]:
    return [e for e in complete_events(path) if e.get("cat") in GPU_CATS]


def calls(path: Path) -> list[dict]:
    return [e for e in complete_events(path) if e.get("cat") in CALL_CATS]


def synced_scalar_ops(path: Path) -> list[dict]:
    """The outermost .item()/.cpu() ops that synchronised (the scalar_sync method, on raw events)."""
    evs = complete_events(path)
    cands = [e for e in evs if e.get("cat") == "cpu_op" and e.get("name") in ITEM_OPS | COPY_OPS]
    host = Threads([e for e in evs if e.get("cat") in CALL_CATS or e.get("cat") == "cpu_op"])
    memcpy_by_corr = {}
    for g in gpu_work(path):
        if g.get("cat") in ("gpu_memcpy", "Memcpy"):
            memcpy_by_corr.setdefault(corr(g), []).append(g)
    out = []
    for c in cands:
        cs = [i for i in host.inside(c) if i.get("cat") in CALL_CATS]
        has_sync = any(SYNC.search(i["name"]) for i in cs)
        copies = [m for i in cs for m in memcpy_by_corr.get(corr(i), [])]
        dtoh = [m for m in copies if "DtoH" in m["name"]]
        pageable = any("Pageable" in m["name"] for m in dtoh)
        if c["name"] in ITEM_OPS:
            ok = has_sync or bool(dtoh)
        else:
            ok = bool(dtoh) and (has_sync or pageable)
        out.append((c, ok))
    # the outermost candidates only (a candidate inside another one on its thread counts in that
    # one; of two with the same span, the one written first is the parent, as Kineto writes them)
    order = {id(e): i for i, e in enumerate(evs)}
    cand_threads = Threads([c for c, _ in out])
    nested = {id(i) for c, _ in out for i in cand_threads.inside(c)
              if (i["ts"], end(i)) != (c["ts"], end(c)) or order[id(i)] > order[id(c)]}
    return [c for c, ok in out if ok and id(c) not in nested]


def sync_calls(path: Path) -> list[dict]:
    return [e for e in calls(path) if SYNC.search(e.get("name", ""))]


def launched_devices(path: Path, host: dict) -> set:
    """The GPU pids the thread of ``host`` launched work to (by correlation)."""
    k = (host.get("pid"), host.get("tid"))
    mine = {corr(c) for c in calls(path) if (c.get("pid"), c.get("tid")) == k and corr(c) is not None}
    return {g.get("pid") for g in gpu_work(path) if corr(g) in mine}


def busy_runs(path: Path, devices: set) -> list[tuple[float, float]]:
    return union((float(g["ts"]), end(g)) for g in gpu_work(path) if g.get("pid") in devices)


def drain_gap(runs, host: dict, tolerance: float = 20.0) -> tuple[float, float] | None:
    """The scalar_sync/blocking_sync measure: the idle gap in which the GPU drained during
    ``host`` (its last busy run ending within ``host``, give or take ``tolerance`` µs), up to
    the next busy run; None when the GPU did not drain or nothing follows."""
    a, b = float(host["ts"]), end(host)
    best = None
    for k, (_, e) in enumerate(runs):
        if a - tolerance <= e <= b + tolerance and k + 1 < len(runs):
            best = k
    return None if best is None else (runs[best][1], runs[best + 1][0])
