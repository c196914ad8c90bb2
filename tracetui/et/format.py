"""The Execution Trace format's entry in the list of formats (:mod:`tracetui.formats`), and
which rank wrote an ET (it needs the nodes: :func:`identify` loads the ET)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..io.formats import CacheSpec, FileRole, Format, Head, Progress
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_et

    return load_et(path)


def identify(path: str, head: Head) -> dict[str, Any]:
    """``rank``: the rank the ET's ``record_param_comms`` nodes record (the ``rank`` attribute
    in the nested layout; in the flat layout, the integer input just before the collective's
    name); ``pids``: the ET's ``pid`` (the OS process id, which the Kineto trace of the same
    process repeats as the pid of its CPU events).  An ET records no world size or backend."""
    from .loader import load_et

    et = load_et(path)
    out: dict[str, Any] = {"rank": None, "world_size": None, "backend": None,
                           "pids": [et.pid] if isinstance(et.pid, int) else []}
    try:
        rpc = et.names.index("record_param_comms")
    except ValueError:
        return out
    import numpy as np

    ranks: Counter[int] = Counter()
    for pos in np.flatnonzero(et.name_ids == rpc)[:16].tolist():
        node = et.node(pos)
        r = node.attrs.get("rank")
        if not isinstance(r, int):
            vals = list(node.inputs)
            first_str = next((i for i, a in enumerate(vals) if a.type == "String"), -1)
            r = vals[first_str - 1].value if first_str >= 1 else None
        if isinstance(r, int) and not isinstance(r, bool) and r >= 0:
            ranks[r] += 1
    out["rank"] = ranks.most_common(1)[0][0] if ranks else None
    return out


def _codec():
    from . import persist

    return persist


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="Execution Trace", role=FileRole.ET,
    suffixes=(".json", ".json.gz", ".gz", ".json.zst", ".zst"),
    recognise=sniff.recognise, load=_load, looks_for="'nodes'", cache=CacheSpec(kind=sniff.FORMAT_NAME, codec=_codec),
    beside=frozenset({FileRole.TRACE}), identify=identify)
