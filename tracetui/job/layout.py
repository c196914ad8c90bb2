"""Group identified files (:func:`tracetui.job.discover.identify_file`) into the ranks of one job.

- Kineto traces are grouped by rank (``distributedInfo.rank``, the file name when the
  trace has none).  Two Kineto traces of one rank: the first (by path) is used, the other
  reported.  A trace whose ``world_size`` or ``backend`` differs from the job's (the most
  common among the traces) is from another run: reported and left out.
- An Execution Trace is paired with the Kineto trace of the same process (its ``pid``
  among the Kineto trace's CPU pids), else of the rank its ``record_param_comms`` nodes
  record, else of the rank in its file name.  An ET that pairs with nothing, or with a
  rank that already has one, is reported and left out.
- Ranks missing from ``0 .. world_size-1`` are reported; files that are neither kind, or
  unreadable, are reported.

Every problem becomes one warning string; nothing here raises for a bad file.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..io.formats import FileRole


@dataclass
class RankFiles:
    """The files of one rank: its Kineto trace and, when paired, its Execution Trace."""

    rank: int
    kineto: str
    et: str | None = None
    rank_from: str = "content"  #: "content" (distributedInfo) or "name" (the file name)


@dataclass
class JobLayout:
    """Ranks (sorted), the job's world size (None when no trace says) and the warnings."""

    ranks: list[RankFiles]
    world_size: int | None
    backend: str | None
    warnings: list[str] = field(default_factory=list)


def _short(path: str) -> str:
    return os.path.basename(path)


def _ranges(nums: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def group_ranks(infos: list[dict[str, Any]]) -> JobLayout:
    """Build the :class:`JobLayout` of identified files (see the module docstring)."""
    warnings: list[str] = []
    kin = [i for i in infos if i["kind"] == FileRole.TRACE.value and not i["error"]]
    ets = [i for i in infos if i["kind"] == FileRole.ET.value and not i["error"]]
    for i in infos:
        if i["error"]:
            warnings.append(i["error"])
        elif i["kind"] not in (FileRole.TRACE.value, FileRole.ET.value):
            warnings.append(f"{_short(i['path'])}: not a Kineto trace or an Execution Trace; skipped")
    sizes = Counter(i["world_size"] for i in kin if i["world_size"] is not None)
    world = sizes.most_common(1)[0][0] if sizes else None
    backends = Counter(i["backend"] for i in kin if i["backend"])
    backend = backends.most_common(1)[0][0] if backends else None
    by_rank: dict[int, dict[str, Any]] = {}
    for i in sorted(kin, key=lambda x: x["path"]):
        name = _short(i["path"])
        if world is not None and i["world_size"] is not None and i["world_size"] != world:
            warnings.append(f"{name}: from another run (world_size {i['world_size']}, the job's is {world}); skipped")
            continue
        if backend is not None and i["backend"] and i["backend"] != backend:
            warnings.append(f"{name}: from another run (backend {i['backend']}, the job's is {backend}); skipped")
            continue
        if i["rank"] is None:
            warnings.append(f"{name}: no rank (no distributedInfo, none in the file name); skipped")
            continue
        if world is not None and not 0 <= i["rank"] < world:
            warnings.append(f"{name}: rank {i['rank']} is outside world_size {world}; skipped")
            continue
        have = by_rank.get(i["rank"])
        if have is not None:
            warnings.append(f"rank {i['rank']}: two Kineto traces ({_short(have['path'])}, {name}); "
                            f"using {_short(have['path'])}")
            continue
        by_rank[i["rank"]] = i
    ranks = {r: RankFiles(r, i["path"], rank_from=i["rank_from"] or "name") for r, i in by_rank.items()}
    for e in sorted(ets, key=lambda x: x["path"]):
        name = _short(e["path"])
        pid_match = [r for r, i in by_rank.items() if e["pids"] and e["pids"][0] in i["pids"]]
        if len(pid_match) == 1:
            rank = pid_match[0]
        elif e["rank"] is not None and e["rank"] in ranks:
            rank = e["rank"]
        else:
            warnings.append(f"{name}: Execution Trace of no rank in the job (rank {e['rank']}); skipped")
            continue
        rf = ranks[rank]
        if rf.et is not None:
            warnings.append(f"rank {rank}: two Execution Traces ({_short(rf.et)}, {name}); using {_short(rf.et)}")
            continue
        rf.et = e["path"]
    if world is not None:
        missing = [r for r in range(world) if r not in ranks]
        if missing:
            warnings.append(f"ranks {_ranges(missing)} missing (world_size {world}, {len(ranks)} ranks found)"
                            if len(missing) > 1 else f"rank {missing[0]} missing (world_size {world})")
    return JobLayout(sorted(ranks.values(), key=lambda r: r.rank), world, backend, warnings)
