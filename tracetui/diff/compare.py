"""Compare two loaded traces: pick and pair the steps, build the merged tree, keep the frames.

:func:`diff_traces` is the one entry point: two :class:`~tracetui.session.LinkedTrace`\\ s
in, a :class:`TraceDiff` out (the merged tree, and each side's GPU event frame and the
events of its compared steps, from which :mod:`tracetui.diff.deltas` computes the summary
deltas and the HTA-compatible tables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis.categories import KernelCategorizer
from ..analysis.frames import gpu_events_frame, resolve_categorizer
from ..analysis.launches import launch_frame, step_table
from ..analysis.steps import Steps, find_steps, gpu_events_by_step, host_events_by_step
from ..errors import TraceError, WrongTraceKindError
from ..session import LinkedTrace
from .forest import op_forest
from .model import DiffSide, DiffTree, build_tree, template_of


@dataclass
class SideData:
    """What the summary deltas of one side are computed from: its :class:`DiffSide`, its GPU
    event frame (every GPU event of the trace; without the columns read from the args), and the
    events of its compared steps with the position (in ``side.used``) of the step each is in."""

    side: DiffSide
    gpu: pd.DataFrame
    gpu_events: np.ndarray
    gpu_step: np.ndarray
    host_events: np.ndarray
    host_step: np.ndarray


@dataclass
class TraceDiff:
    """A diff of two traces: ``tree`` (the merged tree) and the data of each side."""

    tree: DiffTree
    a: SideData
    b: SideData


def _step_list(steps: Steps) -> str:
    nums = [s.number for s in steps.steps]
    if len(nums) > 6:
        return f"{nums[0]}..{nums[-1]} ({len(nums)} steps)"
    return ", ".join(str(n) for n in nums)


def select_steps(steps: Steps, number: int | None, path: str | None) -> tuple[int, ...]:
    """Indices of the compared steps: every step, or the first whose number is ``number``."""
    if number is None:
        return tuple(range(len(steps.steps)))
    if steps.whole_trace:
        raise TraceError(path, "has no steps (no ProfilerStep#N and no repeated annotation): "
                               f"cannot pick step {number}")
    for k, s in enumerate(steps.steps):
        if s.number == number:
            return (k,)
    raise TraceError(path, f"has no step {number} (its steps: {_step_list(steps)})")


def _events_in(ev: np.ndarray, k: np.ndarray, used: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The events whose step is one of ``used``, with the step's position in ``used``."""
    pos = np.full(int(k.max(initial=-1)) + 1, -1, dtype=np.int64)
    inside = [u for u in used if u < pos.size]
    pos[inside] = [used.index(u) for u in inside]
    p = pos[k] if k.size else k
    return ev[p >= 0], p[p >= 0]


def make_side(label: str, linked: LinkedTrace, step: int | None, categorizer: KernelCategorizer) -> SideData:
    """One side: its steps (all, or the one numbered ``step``), frames and step numbers."""
    kt = linked.kineto
    if kt is None:
        raise WrongTraceKindError(linked.et.path if linked.et else None,
                                  "`diff` needs a Kineto or driver-call trace (this is an Execution Trace only)")
    steps = find_steps(kt)
    used = select_steps(steps, step, kt.path)
    gpu = gpu_events_frame(kt, categorizer, with_args=False)  # no table of the diff reads the args
    g_ev, g_step = _events_in(*gpu_events_by_step(kt, steps), used)
    h_ev, h_step = _events_in(*host_events_by_step(kt, steps), used)
    if steps.whole_trace:
        only = steps.steps[0]
        host = np.array([only.dur])
        gpu_us = np.array([float(gpu["dur"].sum())])
        gpu_n = np.array([float(len(gpu))])
    else:
        table = step_table(kt, launch_frame(kt, gpu), np.array([steps.steps[k].event for k in used], dtype=np.int64))
        host = table["dur"].to_numpy(dtype=np.float64)
        gpu_us = table["gpu_us"].to_numpy(dtype=np.float64)
        gpu_n = table["gpu_events"].to_numpy(dtype=np.float64)
    side = DiffSide(label, linked, op_forest(linked), steps, used, template_of(steps, used), host, gpu_us, gpu_n)
    return SideData(side, gpu, g_ev, g_step, h_ev, h_step)


def diff_traces(a: LinkedTrace, b: LinkedTrace, *, step_a: int | None = None, step_b: int | None = None,
                categorizer: KernelCategorizer | None = None, labels: tuple[str, str] = ("A", "B")) -> TraceDiff:
    """Compare ``a`` with ``b``.

    ``step_a``/``step_b``: compare the step with that number (``ProfilerStep#N``'s N, or the
    occurrence of the repeated annotation, from 1) instead of every step; one of them alone
    picks the same number on both sides.  Raises :class:`~tracetui.errors.TraceError` for a
    step a side does not have.
    """
    if step_b is None:
        step_b = step_a
    elif step_a is None:
        step_a = step_b
    cat = resolve_categorizer(categorizer)
    sa = make_side(labels[0], a, step_a, cat)
    sb = make_side(labels[1], b, step_b, cat)
    return TraceDiff(build_tree(sa.side, sb.side), sa, sb)
