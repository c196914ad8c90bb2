"""GPU timeline breakdown: where the GPU span went (TraceLens's ``gpu_timeline`` definitions).

For a set of GPU work events (kernels, memcpys, memsets; per trace or per device):

- **total**: from the start of the first GPU event to the end of the last one (the GPU
  span; gpu_user_annotation spans are not GPU work and are not counted);
- **computation**: length of the union of every kernel and memset interval that is not
  communication (memset counts as computation, as in TraceLens);
- **communication** (``total_comm``): union of the communication kernels, i.e. events
  whose ``kernel_category`` is ``communication`` (nccl/rccl names);
- **memcpy** (``total_memcpy``): union of the memcpy events (kind gpu_memcpy);
- **exposed communication**: communication time not overlapped by computation;
- **exposed memcpy**: memcpy time overlapped by neither computation nor communication;
- **busy**: union of all GPU events; **idle** = total - busy.

Unions are across every stream (and, for the per-trace row, every device), so
computation + exposed comm + exposed memcpy = busy, and busy + idle = total.
All inputs and outputs are **microseconds**; :func:`timeline_ms` converts to ms.
Interval arithmetic is vectorised (sort + cumulative max): a million intervals take a
fraction of a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .intervals import union_length

if TYPE_CHECKING:  # pandas loads when a table is first built (the browser starts without it)
    import pandas as pd

COMMUNICATION = "communication"

#: Keys of :func:`gpu_timeline` (µs), in display order.
TIMELINE_KEYS = ("total", "computation", "exposed_comm", "exposed_memcpy", "busy", "idle", "total_comm",
                 "total_memcpy")


def timeline_from_arrays(ts: np.ndarray, end: np.ndarray, is_comp: np.ndarray, is_comm: np.ndarray,
                         is_memcpy: np.ndarray, window: tuple[float, float] | None = None) -> dict[str, float]:
    """The breakdown (µs, keys :data:`TIMELINE_KEYS`) of intervals with boolean classes.

    With ``window`` = (lo, hi) every interval is clipped to it and ``total`` is hi - lo
    (the window's length), so idle counts the parts of the window with no GPU work.
    """
    ts = np.asarray(ts, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    if window is not None:
        lo, hi = window
        s = np.maximum(ts, lo)
        e = np.minimum(end, hi)
        keep = e > s
        ts, end = s[keep], e[keep]
        is_comp, is_comm, is_memcpy = is_comp[keep], is_comm[keep], is_memcpy[keep]
        total = max(hi - lo, 0.0)
    else:
        total = float(end.max() - ts.min()) if ts.size else 0.0
    comp = union_length(ts[is_comp], end[is_comp])
    comm = union_length(ts[is_comm], end[is_comm])
    memcpy = union_length(ts[is_memcpy], end[is_memcpy])
    cc = is_comp | is_comm
    comp_comm = union_length(ts[cc], end[cc])
    busy = union_length(ts, end)
    # |A \ B| = |A u B| - |B|
    exposed_comm = comp_comm - comp
    ccm = cc | is_memcpy
    exposed_memcpy = union_length(ts[ccm], end[ccm]) - comp_comm
    return {
        "total": total,
        "computation": comp,
        "exposed_comm": max(exposed_comm, 0.0),
        "exposed_memcpy": max(exposed_memcpy, 0.0),
        "busy": busy,
        "idle": max(total - busy, 0.0),
        "total_comm": comm,
        "total_memcpy": memcpy,
    }


def _classes(gpu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    kind = gpu["kind"].astype(str).to_numpy()
    is_memcpy = kind == "memcpy"
    is_comm = (gpu["kernel_category"].to_numpy() == COMMUNICATION) & ~is_memcpy
    is_comp = ~is_memcpy & ~is_comm
    return is_comp, is_comm, is_memcpy


def gpu_timeline(gpu: pd.DataFrame, window: tuple[float, float] | None = None) -> dict[str, float]:
    """Breakdown (µs) of a :func:`~tracetui.analysis.frames.gpu_events_frame` (or a slice of it).

    Pass ``gpu[gpu.device == d]`` for one device.  See the module docstring for the
    definitions; ``window`` clips to a time range (used for a subtree's report).
    """
    is_comp, is_comm, is_memcpy = _classes(gpu)
    return timeline_from_arrays(gpu["ts"].to_numpy(), gpu["end"].to_numpy(), is_comp, is_comm, is_memcpy, window)


def timeline_ms(tl: dict[str, float]) -> dict[str, float]:
    """``{"total": µs, ...}`` -> ``{"total_ms": ms, ...}`` (the summary's JSON form)."""
    return {f"{k}_ms": v / 1000.0 for k, v in tl.items()}


def timeline_frame(gpu: pd.DataFrame) -> pd.DataFrame:
    """Rows: ``scope`` ("all" then "device N"), each :data:`TIMELINE_KEYS` in ms plus
    ``busy_pct``/``idle_pct`` (percent of that scope's total)."""
    import pandas as pd

    rows = []
    scopes: list[tuple[str, pd.DataFrame]] = [("all", gpu)]
    devices = gpu["device"].dropna().unique().tolist()
    if len(devices) > 1:
        for d in sorted(devices, key=lambda x: (not isinstance(x, int), str(x))):
            scopes.append((f"device {d}", gpu[gpu["device"] == d]))
    elif len(devices) == 1:
        scopes = [("all", gpu)]
    for scope, sub in scopes:
        tl = gpu_timeline(sub)
        row: dict[str, object] = {"scope": scope}
        row.update(timeline_ms(tl))
        tot = tl["total"] or 1.0
        row["busy_pct"] = 100.0 * tl["busy"] / tot
        row["idle_pct"] = 100.0 * tl["idle"] / tot
        rows.append(row)
    return pd.DataFrame(rows)


def per_device_timelines(gpu: pd.DataFrame) -> list[dict[str, object]]:
    """One breakdown per device: ``{"device": d, "total_ms": ..., ...}`` (ms)."""
    out = []
    for d in sorted(gpu["device"].dropna().unique().tolist(), key=lambda x: (not isinstance(x, int), str(x))):
        row: dict[str, object] = {"device": d}
        row.update(timeline_ms(gpu_timeline(gpu[gpu["device"] == d])))
        out.append(row)
    return out
