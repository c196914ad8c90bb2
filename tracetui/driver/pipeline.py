"""The inference pipeline seen through its driver calls: what each call does, iterations
and phases.  Rules are documented in ``docs/driver.md``; times are µs.

* **What a call does** comes from its name (:func:`call_class`): the launch classes of
  ``kineto/kinds.py`` (kernel launch, graph launch, copy, memset, synchronize, allocate,
  free), plus set-up calls (``cuInit``, ``cuDeviceGet*``, ``cuCtxCreate*``, ``cuModuleLoad*``
  ...) and tear-down calls (``cuCtxDestroy*``, ``cuModuleUnload``, ``cuMemFree*`` ...).
* **An iteration** is the kernel launches between two synchronize calls of the process
  (``cuStreamSynchronize``, ``cuCtxSynchronize``, ``cuEventSynchronize`` and their runtime
  names): each synchronize that follows at least one launch closes one iteration.
* **Phases**, in time order, each named only when it holds calls:
  initialisation (from the first call to the first allocation), weight loading (from the
  first allocation to the first kernel launch), warm-up (the first iteration, when there
  are two or more), inference (the other iterations, up to the end of the synchronize that
  closes the last one), output (what follows, up to the first free or destroy call after
  the last launch), clean-up (from there to the end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..kineto.kinds import BLOCKING_SYNC_RE, LaunchClass, launch_class_of_name
from ..names import head


class CallClass(IntEnum):
    """What an API call does (a uint8 column)."""

    OTHER = 0
    LAUNCH = 1  #: a kernel launch (cuLaunchKernel, cuLaunchKernelEx, cudaLaunchKernel ...)
    GRAPH_LAUNCH = 2
    COPY = 3
    MEMSET = 4
    SYNC = 5  #: a blocking synchronize (device, context, stream, event)
    ALLOC = 6
    FREE = 7
    SETUP = 8  #: context, device and module set-up
    TEARDOWN = 9  #: context, stream, event and module tear-down


_SETUP_RE = re.compile(r"^cu(Init|DriverGetVersion|DeviceGet|DeviceTotalMem|DeviceComputeCapability|"
                       r"DevicePrimaryCtx(Retain|SetFlags)|CtxCreate|CtxSetCurrent|CtxGetCurrent|ModuleLoad|"
                       r"ModuleGetFunction|ModuleGetGlobal|LibraryLoad|LibraryGetKernel|GetProcAddress|"
                       r"GetExportTable|StreamCreate|EventCreate)|^cuda(SetDevice|GetDevice|DeviceGet|StreamCreate|"
                       r"EventCreate|GetDeviceProperties)")
_TEARDOWN_RE = re.compile(r"^cu(CtxDestroy|DevicePrimaryCtxRelease|DevicePrimaryCtxReset|ModuleUnload|"
                          r"LibraryUnload|StreamDestroy|EventDestroy)|^cuda(StreamDestroy|EventDestroy|DeviceReset)")
_FROM_LAUNCH_CLASS = {
    LaunchClass.KERNEL_LAUNCH: CallClass.LAUNCH, LaunchClass.GRAPH_LAUNCH: CallClass.GRAPH_LAUNCH,
    LaunchClass.MEMCPY: CallClass.COPY, LaunchClass.MEMSET: CallClass.MEMSET, LaunchClass.MALLOC: CallClass.ALLOC,
    LaunchClass.FREE: CallClass.FREE,
}
#: copy direction from a copy call's name (cuMemcpyHtoD_v2, cuMemcpyDtoHAsync ...), when the
#: trace has no transfer record for it
_DIRECTION_RE = re.compile(r"(HtoD|DtoH|DtoD|HostToDevice|DeviceToHost|DeviceToDevice)")
_DIRECTION_OF = {"HtoD": "H2D", "HostToDevice": "H2D", "DtoH": "D2H", "DeviceToHost": "D2H",
                 "DtoD": "D2D", "DeviceToDevice": "D2D"}

PHASE_NAMES = ("initialisation", "weight loading", "warm-up", "inference", "output", "clean-up")


def call_class(name: str) -> CallClass:
    """What the API call ``name`` does (see the module docstring), by its head."""
    name = head(name)
    if BLOCKING_SYNC_RE.search(name):
        return CallClass.SYNC
    lc = launch_class_of_name(name)
    if lc in _FROM_LAUNCH_CLASS:
        return _FROM_LAUNCH_CLASS[lc]
    if _TEARDOWN_RE.search(name):
        return CallClass.TEARDOWN
    if _SETUP_RE.search(name):
        return CallClass.SETUP
    return CallClass.OTHER


def copy_direction(name: str) -> str | None:
    """``cuMemcpyHtoD_v2`` -> ``"H2D"``; None when the name's head does not say."""
    m = _DIRECTION_RE.search(head(name))
    return _DIRECTION_OF[m.group(1)] if m else None


@dataclass
class Iterations:
    """Sync-delimited iterations of one process: ``launches[i]`` kernel launches closed by
    the synchronize call ``sync[i]`` (an index into the calls given)."""

    sync: np.ndarray  #: int64 call index of the closing synchronize
    launches: np.ndarray  #: int64 launches in each iteration
    first_launch: np.ndarray  #: int64 call index of each iteration's first launch


def iterations(start: np.ndarray, cls: np.ndarray) -> Iterations:
    """Iterations of the calls of one process (``start`` µs, ``cls`` CallClass per call)."""
    order = np.argsort(start, kind="stable")
    c = cls[order]
    is_launch = (c == CallClass.LAUNCH) | (c == CallClass.GRAPH_LAUNCH)
    is_sync = c == CallClass.SYNC
    # launches seen before each position (exclusive), and at each sync the launches since the last sync
    before = np.concatenate(([0], np.cumsum(is_launch)))[:-1]
    sync_pos = np.flatnonzero(is_sync)
    at_sync = before[sync_pos]
    prev = np.concatenate(([0], at_sync[:-1]))
    closes = at_sync > prev
    sync_pos = sync_pos[closes]
    counts = (at_sync - prev)[closes]
    launch_pos = np.flatnonzero(is_launch)
    first = launch_pos[prev[closes]] if launch_pos.size else np.zeros(0, np.int64)
    return Iterations(sync=order[sync_pos].astype(np.int64), launches=counts.astype(np.int64),
                      first_launch=order[first].astype(np.int64))


@dataclass
class Phase:
    """One pipeline phase of a process: ``[start, end]`` in µs."""

    name: str
    start: float
    end: float


def phases(start: np.ndarray, end: np.ndarray, cls: np.ndarray) -> list[Phase]:
    """The phases of one process's calls (see the module docstring); empty ones left out."""
    if not start.size:
        return []
    t0, t_end = float(start.min()), float(end.max())
    launch = (cls == CallClass.LAUNCH) | (cls == CallClass.GRAPH_LAUNCH)
    alloc = cls == CallClass.ALLOC
    t_launch = float(start[launch].min()) if launch.any() else None
    t_alloc = float(start[alloc].min()) if alloc.any() else None
    bounds: list[tuple[str, float]] = [("initialisation", t0)]
    if t_alloc is not None and (t_launch is None or t_alloc < t_launch):
        bounds.append(("weight loading", t_alloc))
    if t_launch is not None:
        its = iterations(start, cls)
        t_last_launch = float(start[launch].max())
        if its.sync.size >= 2:
            bounds.append(("warm-up", t_launch))
            bounds.append(("inference", _after(float(end[its.sync[0]]), start)))
        else:
            bounds.append(("inference", t_launch))
        after_last = float(end[its.sync[-1]]) if its.sync.size and float(end[its.sync[-1]]) >= t_last_launch \
            else t_last_launch
        later = start > after_last
        t_out = _after(after_last, start)
        if later.any():
            bounds.append(("output", t_out))
        done = later & ((cls == CallClass.FREE) | (cls == CallClass.TEARDOWN))
        if done.any():
            bounds.append(("clean-up", float(start[done].min())))
    out: list[Phase] = []
    for k, (name, t) in enumerate(bounds):
        nxt = bounds[k + 1][1] if k + 1 < len(bounds) else None
        sel = (start >= t) & (start < nxt) if nxt is not None else start >= t
        if not sel.any():
            continue
        if out and out[-1].name == name:
            continue
        out.append(Phase(name, float(start[sel].min()), float(end[sel].max())))
    if out:
        out[0].start = min(out[0].start, t0)
        out[-1].end = max(out[-1].end, t_end)
    return out


def _after(t: float, start: np.ndarray) -> float:
    """The first call start after ``t`` (``t`` itself plus a hair when none)."""
    later = start[start > t]
    return float(later.min()) if later.size else np.nextafter(t, np.inf)


def phase_of(start: np.ndarray, phase_list: list[Phase]) -> np.ndarray:
    """Index into ``phase_list`` of the phase each call start falls in (-1: none)."""
    out = np.full(start.size, -1, dtype=np.int64)
    if not phase_list:
        return out
    bounds = np.array([p.start for p in phase_list])
    pos = np.searchsorted(bounds, start, side="right") - 1
    ok = pos >= 0
    out[ok] = pos[ok]
    return out
