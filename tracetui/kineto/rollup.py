"""Per-node totals over subtrees, computed bottom-up for every node at once.

``gpu_time_us[node]``: summed duration (µs) of the kernels, memcpys and memsets in the
node's subtree (launched by it or its descendants; a sum, not a union: overlapping
kernels on two streams both count).  ``gpu_count[node]``: how many there are.
"""

from __future__ import annotations

import numpy as np

from ..tree.propagate import sum_up
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
    sum_up(kt.parent, kt.depth, time, count)
    return time, count
