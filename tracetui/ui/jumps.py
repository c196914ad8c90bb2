"""The navigation behind ``>``, ``<`` and search, pure (a
:class:`~tracetui.ui.widgets.tree_source.TraceTreeSource` and a node in, a target node out) so it can be
tested without a terminal:

* :func:`gpu_jump` (``>``): the selected op's first GPU event, then, from that event, the
  op's next one in start order (wrapping), remembered in a :class:`JumpCycle`;
* :func:`launching_op` (``<``): from a kernel/memcpy/memset (or runtime call) to the
  innermost cpu_op that launched it (the launch call when no op encloses it);
* :func:`match_index`: which search match ``Enter``/``n``/``N`` go to, in tree order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import Kind
from .widgets.tree_source import TraceTreeSource


class JumpError(Exception):
    """A jump key does not apply to the selection; the message says why (one line)."""


@dataclass
class JumpCycle:
    """State of ``>``: the op it started from and that op's GPU events (start order)."""

    origin: int
    events: np.ndarray
    index: int

    @property
    def target(self) -> int:
        return int(self.events[self.index])


def gpu_jump(src: TraceTreeSource, node: int, cycle: JumpCycle | None) -> JumpCycle:
    """Where ``>`` goes from ``node``: continue ``cycle`` when ``node`` is its current event,
    else start at the first GPU event under ``node`` (from a GPU event: its launching op's
    next one).  Raises :class:`JumpError` when there is nowhere to go."""
    kt = src.kt
    if kt is None:
        raise JumpError("no Kineto trace loaded: no GPU events")
    if cycle is not None and node == cycle.target:
        return JumpCycle(cycle.origin, cycle.events, (cycle.index + 1) % cycle.events.size)
    k = src.kineto_of(node)
    if 0 <= k < kt.n_events and src.gpu_work[k]:
        origin = int(kt.cpu_op_of[k])
        if origin < 0:
            origin = int(kt.launch_of[k])
        if origin < 0:
            raise JumpError("this GPU event has no launch in the trace")
        events = src.gpu_events(origin)
        where = np.flatnonzero(events == k)
        return JumpCycle(origin, events, int(where[0] + 1) % events.size if where.size else 0)
    events = src.gpu_events(node)
    if not events.size:
        raise JumpError(f"no GPU work under {src.row_label(node).plain}")
    return JumpCycle(node, events, 0)


def launching_op(src: TraceTreeSource, node: int) -> tuple[int, int, int]:
    """(op, GPU event, launch call) for ``<`` from ``node``: the innermost cpu_op above the
    launch (the launch call itself when no op encloses it; launch is -1 for a runtime
    call).  Raises :class:`JumpError` when ``node`` is not GPU work or a runtime call."""
    kt = src.kt
    k = src.kineto_of(node)
    if kt is None or not 0 <= k < kt.n_events:
        raise JumpError("< works on kernels, memcpys and memsets")
    kind = Kind(int(kt.kind[k]))
    if not (src.gpu_work[k] or kind in (Kind.RUNTIME, Kind.DRIVER)):
        raise JumpError("< works on kernels, memcpys and memsets (> goes down)")
    via = int(kt.launch_of[k]) if src.gpu_work[k] else -1
    op = int(kt.cpu_op_of[k])
    if op < 0:
        op = via
    if op < 0:
        raise JumpError("no launching op in the trace (GPU-only event)")
    return op, k, via


def match_index(ranks: np.ndarray, rank: float, direction: int, *, inclusive: bool = False) -> int:
    """Index into sorted match ``ranks`` of the match to visit from a cursor at ``rank``:
    the first at or after it (``inclusive``, Enter), the next after it (``n``) or the last
    before it (``N``), wrapping around.  ``ranks`` must not be empty."""
    n = ranks.size
    if direction >= 0:
        return int(np.searchsorted(ranks, rank, side="left" if inclusive else "right")) % n
    return (int(np.searchsorted(ranks, rank, side="left")) - 1) % n
