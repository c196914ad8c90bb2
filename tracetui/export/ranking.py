"""The ops of a subtree ranked by the GPU time they launched: what a report leads with.

Each GPU event of the subtree (kernel, memcpy, memset) counts once, for the op that launched
it: the innermost cpu_op above its launch call (the op ``<`` goes to in the browser).  A GPU
event launched outside any cpu_op counts for its launch call itself (a ``cudaGraphLaunch``
called from Python), and GPU events whose launch is not in the trace share one row.  So the
rows' GPU times add up to the subtree's summed GPU time, and each row's share is of that sum.

Columns (:data:`RANKING_COLUMNS`): ``rank`` (1 = most GPU time), ``node``, ``name``, ``kind``
("cpu_op", "runtime", "driver"; "none" for the row of GPU events without a launch),
``input_dims``/``input_types`` (the op's ``Input Dims``/``Input type`` text, "" without shapes),
``gpu_us`` (summed durations of its GPU events, µs), ``percent`` (of the subtree's summed GPU
time), ``n_gpu`` (its GPU events), ``gpu_names`` (one dict per distinct GPU event name:
``name``, ``count``, ``total_us``; most time first), ``host_us`` (the op's own host duration) and
``caller`` (the nearest cpu_op above it, "" when none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.frames import cpu_ops_frame
from ..analysis.tables import name_codes
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace

if TYPE_CHECKING:
    import pandas as pd

RANKING_COLUMNS = ("rank", "node", "name", "kind", "input_dims", "input_types", "gpu_us", "percent", "n_gpu",
                   "gpu_names", "host_us", "caller")
#: the name of the row that gathers GPU events whose launch is not in the trace ({word}: the
#: trace's device word, "GPU" or "device" on MTIA: :meth:`KinetoTrace.device_word`)
NO_LAUNCH = "({word} events without a launch in the trace)"


def ops_by_gpu_time(trace: KinetoTrace, kernels: pd.DataFrame) -> pd.DataFrame:
    """The ranking of the GPU events in ``kernels`` (a
    :func:`~tracetui.analysis.frames.gpu_events_frame`) by the op that launched them."""
    import pandas as pd

    if kernels.empty:
        return pd.DataFrame(columns=list(RANKING_COLUMNS))
    op = kernels["op"].to_numpy(dtype=np.int64)
    launch = kernels["launch"].to_numpy(dtype=np.int64)
    owner = np.where(op >= 0, op, launch)
    dur = kernels["dur"].to_numpy(dtype=np.float64)
    total = float(dur.sum())
    codes, uniq = name_codes(kernels["name"])  # grouped by interned code: exact, one hash per name
    frame = pd.DataFrame({"owner": owner, "name_code": codes, "dur": dur})
    per_name = frame.groupby(["owner", "name_code"], sort=False)["dur"].agg(["size", "sum"]).reset_index()
    per_name = (per_name.assign(name_code=uniq[per_name["name_code"].to_numpy()])
                .sort_values(["owner", "sum", "name_code"], ascending=[True, False, True], kind="stable"))
    names: dict[int, list[dict[str, Any]]] = {}
    for o, nm, n, us in per_name.itertuples(index=False, name=None):
        names.setdefault(int(o), []).append({"name": nm, "count": int(n), "total_us": float(us)})
    per_owner = frame.groupby("owner", sort=False)["dur"].agg(["size", "sum"])
    owners = per_owner.index.to_numpy(dtype=np.int64)
    ok = owners >= 0
    cpu = cpu_ops_frame(trace, owners[ok]).set_index("event")
    name_arr = np.asarray(trace.names, dtype=object)
    safe = np.maximum(owners, 0)
    parent_op = cpu["parent_op"].reindex(owners).fillna(-1).to_numpy(dtype=np.int64)
    out = pd.DataFrame({
        "node": owners,
        "name": np.where(ok, name_arr[trace.name_id[safe]], NO_LAUNCH.format(word=trace.device_word())),
        "kind": np.where(ok, [Kind(int(k)).name.lower() for k in trace.kind[safe]], "none"),
        "input_dims": cpu["input_dims"].astype(object).reindex(owners).fillna("").to_numpy(),
        "input_types": cpu["input_types"].astype(object).reindex(owners).fillna("").to_numpy(),
        "gpu_us": per_owner["sum"].to_numpy(dtype=np.float64),
        "percent": per_owner["sum"].to_numpy(dtype=np.float64) * (100.0 / total) if total > 0 else 0.0,
        "n_gpu": per_owner["size"].to_numpy(dtype=np.int64),
        "gpu_names": [names[int(o)] for o in owners],
        "host_us": np.where(ok, trace.dur[safe], np.nan),
        "caller": np.where(parent_op >= 0, name_arr[trace.name_id[np.maximum(parent_op, 0)]], ""),
    })
    out = out.sort_values(["gpu_us", "node"], ascending=[False, True], kind="stable").reset_index(drop=True)
    out.insert(0, "rank", np.arange(1, len(out) + 1, dtype=np.int64))
    return out[list(RANKING_COLUMNS)]


def names_text(names: list[dict[str, Any]], shown: int = 3) -> str:
    """``name ×count`` of the first ``shown`` names (most time first), then ``+N more``."""
    parts = [f"{d['name']} ×{d['count']}" if d["count"] > 1 else d["name"] for d in names[:shown]]
    if len(names) > shown:
        parts.append(f"+{len(names) - shown} more")
    return "; ".join(parts)
