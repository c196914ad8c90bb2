"""The navigation behind ``>``, ``<`` and search, pure (a
:class:`~tracetui.ui.view.trace_row_source.TraceRowSource` and a node in, a target node out) so it can be
tested without a terminal:

* :func:`gpu_jump` (``>``): the selected op's first GPU event, then, from that event, the
  op's next one in start order (wrapping), remembered in a :class:`JumpCycle`;
* :func:`launching_op` (``<``): from a kernel/memcpy/memset (or runtime call) to the
  innermost cpu_op that launched it (the launch call when no op encloses it);
* :func:`match_index`: which search match ``Enter``/``n``/``N`` go to, in tree order;
* across the link to a driver-call trace (``tracetui KINETO --driver FILE``):
  :func:`driver_hop` (``>`` from a runtime call to the driver call linked to it, before its
  GPU events) and :func:`driver_back` (``<`` from a driver call, or its ioctl or record, to
  the runtime call); from a driver node ``>`` reaches the GPU events of the linked runtime
  calls (``TraceRowSource.gpu_events``).  A driver-call trace opened alone has neither GPU
  events nor ops: the keys say so (:data:`NO_GPU_IN_DRIVER_TRACE`, :data:`NO_OPS_IN_DRIVER_TRACE`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...driver.facts import (
    driver_of,
    is_driver_event,
    is_standalone,
    linked_driver,
    linked_kineto,
    owning_call,
    what_of,
)
from ...driver.schema import What
from ...kineto.kinds import Kind
from ...names import shown
from .trace_row_source import TraceRowSource

NO_GPU_IN_DRIVER_TRACE = ("a driver-call trace has no GPU events: it records the host's calls into libcuda "
                          "(open it with its Kineto trace: tracetui KINETO --driver FILE)")
NO_OPS_IN_DRIVER_TRACE = ("a driver-call trace alone has no runtime calls or ops to go back to (open it with its "
                          "Kineto trace: tracetui KINETO --driver FILE)")


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


def gpu_jump(src: TraceRowSource, node: int, cycle: JumpCycle | None) -> JumpCycle:
    """Where ``>`` goes from ``node``: continue ``cycle`` when ``node`` is its current event,
    else start at the first GPU event under ``node`` (from a GPU event: its launching op's
    next one).  Raises :class:`JumpError` when there is nowhere to go."""
    kt = src.kt
    if kt is None:
        raise JumpError("no Kineto trace loaded: no GPU events")
    if is_standalone(kt):
        raise JumpError(NO_GPU_IN_DRIVER_TRACE)
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
        if src.driver_nodes is not None and 0 <= k < src.n_k and src.driver_nodes[k]:
            raise JumpError(_no_linked_gpu(src, k))
        raise JumpError(f"no GPU work under {src.row_label(node).plain}")
    return JumpCycle(node, events, 0)


def _no_linked_gpu(src: TraceRowSource, node: int) -> str:
    """Why a node of a linked driver-call trace reaches no GPU event."""
    kt = src.kt
    name = shown(kt.name(node))
    if not is_driver_event(kt, node) or what_of(kt, node) == What.PHASE:
        return f"no linked runtime call under {name} launched GPU work"
    if owning_call(kt, node) < 0:
        return f"this {name} record belongs to no call: no GPU events to go to"
    k = linked_kineto(kt, node)
    if k < 0:
        call = shown(kt.name(owning_call(kt, node)))
        return f"{call} is not linked to a Kineto call (the link is heuristic, by call order): no GPU events to go to"
    call = shown(kt.name(owning_call(kt, node)))
    return f"{call} is linked to {shown(kt.name(k))}, which launched no GPU work (< goes to it)"


def driver_hop(src: TraceRowSource, node: int, cycle: JumpCycle | None) -> int | None:
    """Where ``>`` goes first from a Kineto runtime (or driver) call that has a linked driver
    call: that driver call (its ioctls and records are its children).  None when ``>``
    goes to GPU events as usual (no link, another kind of row, or ``node`` is the current
    event of a ``>`` cycle)."""
    kt = src.kt
    if kt is None or driver_of(kt) is None or kt.link is None:
        return None
    if cycle is not None and node == cycle.target:
        return None
    k = src.kineto_of(node)
    if not 0 <= k < kt.first or Kind(int(kt.kind[k])) not in (Kind.RUNTIME, Kind.DRIVER):
        return None
    d = linked_driver(kt, k)
    return d if d >= 0 else None


def driver_back(src: TraceRowSource, node: int) -> tuple[int, int] | None:
    """(runtime call, driver call) for ``<`` from a driver call, or its ioctl or record, of a
    linked trace.  None when ``node`` is no driver row (``<`` works as usual); raises
    :class:`JumpError` when it is one that has nowhere to go (no link, unlinked, a phase)."""
    kt = src.kt
    if kt is None or driver_of(kt) is None:
        return None
    if is_standalone(kt):
        raise JumpError(NO_OPS_IN_DRIVER_TRACE)
    k = src.kineto_of(node)
    if not (src.driver_nodes is not None and 0 <= k < src.n_k and src.driver_nodes[k]):
        return None
    if not is_driver_event(kt, k) or what_of(kt, k) == What.PHASE:
        raise JumpError("< works on driver calls, their ioctls and records, and on kernels, memcpys and memsets")
    call = owning_call(kt, k)
    if call < 0:
        raise JumpError(f"this {shown(kt.name(k))} record belongs to no call: no runtime call to go back to")
    runtime = linked_kineto(kt, k)
    if runtime < 0:
        raise JumpError(f"{shown(kt.name(call))} is not linked to a Kineto runtime call (the link is heuristic, "
                        "by call order)")
    return runtime, call


def launching_op(src: TraceRowSource, node: int) -> tuple[int, int, int]:
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


def match_index(positions: np.ndarray, position: float, direction: int, *, inclusive: bool = False) -> int:
    """Index into sorted match ``positions`` of the match to visit from a cursor at ``position``:
    the first at or after it (``inclusive``, Enter), the next after it (``n``) or the last
    before it (``N``), wrapping around.  ``positions`` must not be empty."""
    n = positions.size
    if direction >= 0:
        return int(np.searchsorted(positions, position, side="left" if inclusive else "right")) % n
    return (int(np.searchsorted(positions, position, side="left")) - 1) % n
