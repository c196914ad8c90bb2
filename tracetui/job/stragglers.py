"""Stragglers by arrival: who reaches each collective last, and how often (docs/jobs.md).

A collective cannot finish before its last rank arrives, so the question is *who arrives
last, how often, and by how much* -- not whose lateness adds up to the most: one noisy
all-reduce whose start skew is 300 ms would outweigh a rank that arrives 2 ms late at every
barrier of the run.  Definitions (times in µs; a rank *arrives* when its collective starts):

* per collective with two or more ranks: ``last_rank`` (latest start; ties: the lower
  rank), ``late_by_us`` = its start - the next-latest start (how long the others waited for
  it alone), ``skew_us`` = latest start - earliest start;
* a rank's *lateness* at a collective: its start - the earliest start there;
* per rank: ``collectives`` it took part in, ``times_last``, ``median_late_us`` (median of
  its lateness), ``late_us`` (the sum, for reference), ``wait_caused_us`` (summed skews
  of the collectives it arrived last at), and ``by_kind``: the same per collective kind,
  ``barrier`` a kind of its own (a barrier moves no data: arriving last at one is the
  purest straggler signal, never mixed into another kind's numbers);
* ranking: most ``times_last`` first, then the larger ``median_late_us``, then the rank;
* the verdict: the first rank of the ranking when it arrived last at least once, with its
  evidence (how often, at which kinds, median lateness) and the ranks tied with it.

:func:`arrivals` is headless and takes the matched collectives of
:func:`tracetui.job.match.match_collectives` (``kind``, ``name``, ``ranks``, ``start_us``,
``members`` {rank: {``start_us``}}).
"""

from __future__ import annotations

from statistics import median
from typing import Any

from .. import units

BARRIER = "barrier"


def collective_kind_of(c: dict[str, Any]) -> str:
    """The kind a collective is counted under: ``barrier`` for any barrier, else its kind."""
    kind = (c.get("kind") or c.get("name") or "").lower()
    return BARRIER if "barrier" in kind or "barrier" in (c.get("name") or "").lower() else (c.get("kind") or "")


def ranking_key(s: dict[str, Any]) -> tuple:
    """The straggler ranking's order of per-rank rows (``rank``, ``times_last``,
    ``median_late_us``; overall or of one kind): most ``times_last`` first, then the larger
    ``median_late_us``, then the rank."""
    return (-s["times_last"], -s["median_late_us"], s["rank"])


def arrivals(collectives: list[dict[str, Any]], ranks: list[int]) -> dict[str, Any]:
    """``per_collective`` (in the order given: ``index``, ``name``, ``kind``, ``last_rank``,
    ``late_by_us``, ``skew_us``), ``per_rank`` (ranked, see the module docstring) and
    ``verdict`` (None when no collective had two ranks or none arrived later than another)."""
    per_collective: list[dict[str, Any]] = []
    late: dict[int, list[float]] = {r: [] for r in ranks}
    late_kind: dict[int, dict[str, list[float]]] = {r: {} for r in ranks}
    last: dict[int, dict[str, int]] = {r: {} for r in ranks}
    waited: dict[int, float] = {r: 0.0 for r in ranks}
    for i, c in enumerate(collectives):
        starts = {int(r): float(m["start_us"]) for r, m in c["members"].items()}
        kind = collective_kind_of(c)
        first = min(starts.values())
        for r, s in starts.items():
            late.setdefault(r, []).append(s - first)
            late_kind.setdefault(r, {}).setdefault(kind, []).append(s - first)
            last.setdefault(r, {})
            waited.setdefault(r, 0.0)
        if len(starts) < 2:
            continue
        order = sorted(starts, key=lambda r: (-starts[r], r))
        lr = order[0]
        skew = starts[lr] - first
        per_collective.append({"index": i, "name": c.get("name"), "kind": kind, "last_rank": lr,
                               "late_by_us": starts[lr] - starts[order[1]], "skew_us": skew})
        if skew > 0:
            last[lr][kind] = last[lr].get(kind, 0) + 1
            waited[lr] += skew
    per_rank = []
    for r in sorted(late):
        by_kind = {k: {"collectives": len(v), "times_last": last[r].get(k, 0), "median_late_us": median(v)}
                   for k, v in sorted(late_kind[r].items())}
        per_rank.append({"rank": r, "collectives": len(late[r]), "times_last": sum(last[r].values()),
                         "median_late_us": median(late[r]) if late[r] else 0.0, "late_us": sum(late[r]),
                         "wait_caused_us": waited[r], "by_kind": by_kind})
    per_rank.sort(key=ranking_key)
    return {"per_collective": per_collective, "per_rank": per_rank, "verdict": _verdict(per_rank)}


def _verdict(per_rank: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not per_rank or per_rank[0]["times_last"] == 0:
        return None
    top = per_rank[0]
    kinds = "; ".join(f"{k}: last at {v['times_last']:,} of {v['collectives']:,}, median "
                      f"{units.us_text(v['median_late_us'], ',.1f')} late"
                      for k, v in top["by_kind"].items() if v["times_last"])
    tied = [s["rank"] for s in per_rank[1:] if s["times_last"] == top["times_last"]]
    evidence = (f"rank {top['rank']} arrived last at {top['times_last']:,} of {top['collectives']:,} collectives "
                f"({kinds}); median lateness {top['median_late_us']:,.1f} {units.US} after the first arrival")
    if tied:
        evidence += (f"; as often as rank{'s' if len(tied) > 1 else ''} {', '.join(map(str, tied))}, "
                     "ranked by median lateness")
    return {"rank": top["rank"], "times_last": top["times_last"], "collectives": top["collectives"],
            "median_late_us": top["median_late_us"], "tied_with": tied, "evidence": evidence}


def lateness_matrix(collectives: list[dict[str, Any]], ranks: list[int]) -> tuple[Any, list[int | None]]:
    """Each rank's lateness at each collective (the plot of arrivals): a float64 array of
    shape (collectives, ranks) in µs, NaN where the rank took no part, and per collective
    its ``last_rank`` (as :func:`arrivals` ranks them; None below two ranks).  The largest
    lateness of a collective is its ``start_skew_us``."""
    import numpy as np

    col = {r: k for k, r in enumerate(ranks)}
    late = np.full((len(collectives), len(ranks)), np.nan)
    last: list[int | None] = []
    for i, c in enumerate(collectives):
        starts = {int(r): float(m["start_us"]) for r, m in c["members"].items()}
        first = min(starts.values()) if starts else 0.0
        for r, s in starts.items():
            if r in col:
                late[i, col[r]] = s - first
        last.append(min(starts, key=lambda r: (-starts[r], r)) if len(starts) >= 2 else None)
    return late, last
