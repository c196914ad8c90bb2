"""Lanes: the rows of a trace.  A host lane is one (pid, tid) thread; a GPU lane is one
(device, stream).  Every lane is also a synthetic root node of the op tree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lane:
    """One thread or GPU stream.

    ``node`` is the lane's node id in the tree (event count + lane index).
    For GPU lanes ``pid`` is the device and ``tid`` the stream, as Kineto writes them.
    """

    index: int
    node: int
    is_gpu: bool
    pid: object
    tid: object
    label: str
    sort_key: tuple

    @property
    def device(self) -> object:
        return self.pid if self.is_gpu else None

    @property
    def stream(self) -> object:
        return self.tid if self.is_gpu else None


def _num(v: object) -> tuple[int, object]:
    return (0, v) if isinstance(v, int) else (1, str(v))


def host_lane_label(pid: object, tid: object, process_names: dict, thread_names: dict) -> str:
    tname = thread_names.get((pid, tid))
    pname = process_names.get(pid)
    base = tname if tname else f"thread {tid}"
    if pname and pname not in base:
        base = f"{base} ({pname}, pid {pid})" if tname else f"{base} (pid {pid}, {pname})"
    elif not tname:
        base = f"{base} (pid {pid})"
    return base


def gpu_lane_label(device: object, stream: object) -> str:
    return f"GPU {device} stream {stream}"


def lane_sort_key(is_gpu: bool, pid: object, tid: object, process_sort: dict, thread_sort: dict) -> tuple:
    if is_gpu:
        return (1, _num(pid), _num(tid))
    return (0, process_sort.get(pid, 0) if isinstance(process_sort.get(pid, 0), int) else 0, _num(pid),
            thread_sort.get((pid, tid), 0) if isinstance(thread_sort.get((pid, tid), 0), int) else 0, _num(tid))
