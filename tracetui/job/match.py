"""The cross-rank join: one row per collective with every rank's part (the straggler ranking
built on it: :mod:`tracetui.job.stragglers`).

Matching key, per rank's collectives (:func:`tracetui.job.comms.rank_collectives`):
``(group, "seq", seq)`` when the trace gives the process group's sequence number, else
``(group, kind, n)`` where n counts that rank's earlier collectives of the same group and
kind (the NCCL rule: every rank of a group issues the group's collectives in the same
order).  ``group`` is "" when the trace names none (one default group).

Per collective (times in µs): ``start_skew_us`` = latest start - earliest start over the
ranks (how long the first rank waited for the last), ``end_skew_us`` the same for ends,
``min_dur_us``/``max_dur_us`` of the ranks' kernel spans, ``last_rank`` the rank that
started last, ``bytes`` the largest per-rank input, ``busbw_gbps`` NCCL's bus bandwidth
(:mod:`tracetui.job.nccl`) over ``min_dur_us``: the rank that arrives last waits least,
so its span is the closest to the transfer itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .nccl import algo_bytes, bus_bandwidth_gbps

#: per-rank fields kept in a matched collective's ``members`` (for jumps in the browser)
MEMBER_FIELDS = ("start_us", "end_us", "dur_us", "kernel", "op")


def _key(row: dict[str, Any], ordinal: Counter) -> tuple:
    group = row.get("group") or ""
    if row.get("seq") is not None:
        return (group, "seq", row["seq"])
    k = (group, row["kind"])
    n = ordinal[k]
    ordinal[k] += 1
    return (group, row["kind"], n)


def _most_common(values: list[Any]) -> Any:
    vals = [v for v in values if v not in (None, "")]
    return Counter(vals).most_common(1)[0][0] if vals else None


def match_collectives(per_rank: dict[int, list[dict[str, Any]]], world_size: int | None = None) -> list[dict[str, Any]]:
    """Matched collectives in order of their earliest start (see the module docstring).

    The n of the bus bandwidth is the group's size where the trace gives it, else
    ``world_size`` (a collective of the default group spans the job), else the ranks that
    took part.

    Each: ``name``, ``kind``, ``group``, ``seq``, ``index`` (n-th of its group and kind),
    ``ranks`` (how many took part), ``missing_ranks``, ``start_us`` (earliest, absolute),
    ``start_skew_us``, ``end_skew_us``, ``min_dur_us``, ``max_dur_us``, ``first_rank``,
    ``last_rank``, ``bytes``, ``algo_bytes`` (S of algbw), ``dtype``, ``algorithm``,
    ``protocol``, ``busbw_gbps``, ``members`` {rank: {start_us, end_us, dur_us, kernel, op}}.
    """
    buckets: dict[tuple, dict[int, dict[str, Any]]] = {}
    for rank in sorted(per_rank):
        ordinal: Counter = Counter()
        for row in per_rank[rank]:
            buckets.setdefault(_key(row, ordinal), {}).setdefault(rank, row)
    loaded = sorted(per_rank)
    out = []
    for key, members in buckets.items():
        rows = list(members.values())
        starts = {r: m["start_us"] for r, m in members.items()}
        ends = {r: m["end_us"] for r, m in members.items()}
        durs = [m["dur_us"] for m in rows]
        gsize = _most_common([m.get("group_size") for m in rows])
        n = gsize or world_size or len(members)
        kind = _most_common([m["kind"] for m in rows]) or ""
        in_b = max((m["in_bytes"] for m in rows if m.get("in_bytes")), default=None)
        out_b = max((m["out_bytes"] for m in rows if m.get("out_bytes")), default=None)
        size = algo_bytes(kind, in_b, out_b, n)
        expect_all = gsize is None or gsize == len(loaded)
        out.append({
            "name": _most_common([m["collective"] for m in rows]) or kind,
            "kind": kind,
            "group": key[0] or None,
            "seq": key[2] if key[1] == "seq" else None,
            "index": None if key[1] == "seq" else key[2],
            "ranks": len(members),
            "missing_ranks": [r for r in loaded if r not in members] if expect_all else [],
            "start_us": min(starts.values()),
            "start_skew_us": max(starts.values()) - min(starts.values()),
            "end_skew_us": max(ends.values()) - min(ends.values()),
            "min_dur_us": min(durs),
            "max_dur_us": max(durs),
            "first_rank": min(starts, key=lambda r: (starts[r], r)),
            "last_rank": max(starts, key=lambda r: (starts[r], -r)),
            "bytes": in_b if in_b is not None else out_b,
            "algo_bytes": size,
            "dtype": _most_common([m.get("dtype") for m in rows]),
            "algorithm": _most_common([m.get("algorithm") for m in rows]),
            "protocol": _most_common([m.get("protocol") for m in rows]),
            "busbw_gbps": bus_bandwidth_gbps(kind, size, min(durs), n),
            "members": {r: {f: m[f] for f in MEMBER_FIELDS} for r, m in sorted(members.items())},
        })
    out.sort(key=lambda c: (c["start_us"], c["group"] or "", c["kind"]))
    return out
