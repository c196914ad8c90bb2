"""Finding a matched collective from a row of one rank's op tree (for the browser's jump
to the same collective on another rank)."""

from __future__ import annotations

from typing import Any

from ..kineto import KinetoTrace


def collective_at(collectives: list[dict[str, Any]], rank: int, kt: KinetoTrace, node: int) -> int | None:
    """Index in ``collectives`` of the collective that Kineto event ``node`` of ``rank``
    belongs to: its NCCL kernel, its collective op (``record_param_comms``, ``nccl:*``,
    ``c10d::*``) or any op above the kernel's launch, nearest first; None when none."""
    if node < 0 or node >= kt.n_events:
        return None
    best: tuple[int, int] | None = None  # (distance up from the launch, index)
    for i, c in enumerate(collectives):
        m = c["members"].get(rank)
        if m is None:
            continue
        if node in (m["kernel"], m["op"]):
            return i
        launch = int(kt.launch_of[m["kernel"]])
        if launch < 0:
            continue
        chain = [launch] + kt.ancestors(launch)
        if node in chain:
            d = chain.index(node)
            if best is None or d < best[0]:
                best = (d, i)
    return best[1] if best is not None else None


def member_offsets(collective: dict[str, Any]) -> list[tuple[int, float, float]]:
    """(rank, start - the earliest start in µs, duration in µs) of each rank taking part."""
    first = collective["start_us"]
    return [(r, m["start_us"] - first, m["dur_us"]) for r, m in collective["members"].items()]
