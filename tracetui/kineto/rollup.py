"""Per-node totals over subtrees, computed bottom-up for every node at once.

``gpu_time_us[node]``: summed duration (µs) of the kernels, memcpys and memsets in the
node's subtree (launched by it or its descendants; a sum, not a union: overlapping
kernels on two streams both count).  ``gpu_count[node]``: how many there are.
"""

from __future__ import annotations

import numpy as np

from .kinds import GPU_WORK_KINDS
from .trace import KinetoTrace


def subtree_gpu_totals(kt: KinetoTrace) -> tuple[np.ndarray, np.ndarray]:
    """(GPU time in µs, GPU event count) of every node's subtree: the kernels, memcpys and
    memsets under it, itself included; summed bottom-up, one numpy step per depth level."""
    n_nodes = kt.n_nodes
    time = np.zeros(n_nodes, dtype=np.float64)
    count = np.zeros(n_nodes, dtype=np.int64)
    gpu = np.flatnonzero(np.isin(kt.kind, [int(k) for k in GPU_WORK_KINDS]))
    time[gpu] = kt.dur[gpu]
    count[gpu] = 1
    in_tree = np.flatnonzero(kt.parent >= 0)
    if not in_tree.size:
        return time, count
    d = kt.depth[in_tree]
    order = np.argsort(-d.astype(np.int32), kind="stable")
    nodes = in_tree[order]
    ds = d[order]
    bounds = np.flatnonzero(np.diff(ds)) + 1
    for grp in np.split(nodes, bounds):
        par = kt.parent[grp]
        np.add.at(time, par, time[grp])
        np.add.at(count, par, count[grp])
    return time, count
