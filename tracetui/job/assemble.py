"""Join the per-rank stretches of a job's critical path (:mod:`tracetui.job.critical`)
into one :class:`~tracetui.critical.CriticalPath`, with times relative to the job's
earliest rank origin and one ``crossings`` entry per move to another rank."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..critical import KIND_NAMES, CriticalPath, Segments, Slack, Window

#: segments of the late rank, before it arrived, named in a crossing
BEFORE_ROWS = 3


def pick_keys(ok: dict[int, dict[str, Any]], every: bool, warnings: list[str]) -> list[Any]:
    """Window keys found on every loaded rank (a step number ...): all of them (``every``),
    or the one whose job span (latest path end - earliest start) is the longest."""
    sets = [{w["key"] for w in o["windows"]} for o in ok.values()]
    common = set.intersection(*sets) if sets else set()
    partial = set.union(*sets) - common if sets else set()
    if partial:
        warnings.append(f"{len(partial)} windows are not on every rank and are left out: "
                        + ", ".join(str(k) for k in sorted(partial, key=str)[:8]))
    if not common:
        raise _no_common()
    keys = sorted(common, key=lambda k: (k is None, k if k is not None else 0))
    if every:
        return keys

    def span(key: Any) -> float:
        wins = [w for o in ok.values() for w in o["windows"] if w["key"] == key]
        return max(w["sink_abs"] for w in wins) - min(w["start_abs"] for w in wins)

    return [max(keys, key=span)]


def _no_common():
    from ..errors import TraceError

    return TraceError(None, "no window (profiler step or annotation) is on every rank of this job")


def _segments(rows: list[dict[str, Any]], origin: float) -> Segments:
    n = len(rows)
    kinds = {k: i for i, k in enumerate(KIND_NAMES)}
    return Segments(
        np.array([kinds[r["kind"]] for r in rows], dtype=np.uint8), [r["name"] for r in rows],
        np.array([r["event"] for r in rows], dtype=np.int64),
        np.array([r["start_abs"] - origin for r in rows], dtype=np.float64),
        np.array([r["dur_us"] for r in rows], dtype=np.float64),
        np.array([-1 if r["rank"] is None else r["rank"] for r in rows], dtype=np.int64),
        np.array([r["from_event"] for r in rows], dtype=np.int64),
        np.array([r["to_event"] for r in rows], dtype=np.int64),
        np.array([r["inferred"] for r in rows], dtype=bool) if n else np.zeros(0, bool), [r["where"] for r in rows],
        np.array([r["carried"] for r in rows], dtype=bool) if n else np.zeros(0, bool))


def assemble(routes: dict[Any, Any], tasks: list[dict[str, Any]], results: list[dict[str, Any]],
             ok: dict[int, dict[str, Any]], matched: list[dict[str, Any]]) -> dict[Any, CriticalPath]:
    """One CriticalPath per routed window key."""
    origin = min(o["origin_us"] for o in ok.values())
    got: dict[tuple[int, Any], dict[str, Any]] = {}
    for task, res in zip(tasks, results):
        for req, ans in zip(task["requests"], res.get("requests", [])):
            got[(task["rank"], req["key"])] = ans
    out = {}
    for key, (wins, hops) in routes.items():
        taken: dict[int, int] = {}
        stretches: list[list[dict[str, Any]]] = []
        for h in hops:
            ans = got.get((h.rank, key))
            i = taken.get(h.rank, 0)
            taken[h.rank] = i + 1
            stretches.append(ans["hops"][i] if ans is not None and i < len(ans["hops"]) else [])
        rows = [r for stretch in reversed(stretches) for r in stretch]
        segs = _segments(rows, origin)
        crossings = []
        for i, h in enumerate(hops):
            if h.to_rank is None:
                continue
            c = h.collective
            before = list(reversed(stretches[i + 1][-BEFORE_ROWS:])) if i + 1 < len(stretches) else []
            crossings.append({
                "collective": c["name"], "group": c["group"], "seq": c["seq"], "index": c["index"],
                "from_rank": h.rank, "to_rank": h.to_rank, "at_us": h.cut_abs - origin,
                "waited_us": h.cut_abs - c["members"][h.rank]["start_us"],
                "before": [{"kind": b["kind"], "name": b["name"], "dur_us": b["dur_us"], "event": b["event"],
                            "start_us": b["start_abs"] - origin} for b in before]})
        crossings.reverse()
        start = float(segs.start_us[0]) if len(segs) else min(w["start_abs"] for w in wins.values()) - origin
        end = float((segs.start_us + segs.dur_us)[-1]) if len(segs) else start
        first_rank = hops[-1].rank
        w0 = wins[first_rank]
        window = Window("step" if str(w0["name"]).startswith("ProfilerStep#") else "annotation", w0["name"], start,
                        max(w["end_abs"] for w in wins.values()) - origin)
        path_events = {}
        slack_rows = []
        for r in sorted({h.rank for h in hops}):
            ans = got.get((r, key))
            if ans is not None:
                path_events[r] = np.asarray(ans["path_events"], dtype=np.int64)
                slack_rows += ans["slack"]
        stats = {"ranks": len(wins), "ranks_on_path": sorted({h.rank for h in hops}), "crossings": len(crossings),
                 "collectives_matched": len(matched)}
        out[key] = CriticalPath(window, origin, end - start, segs, Slack.from_rows(slack_rows, "start_abs", origin),
                                path_events, stats, crossings)
    return out
