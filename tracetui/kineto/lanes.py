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
    #: the label the narrow timeline column shows: the beginning of ``label`` where it is a
    #: name (``Stream 108``), else ``GPU0 s7`` / ``T 19392`` (see :func:`lane_labels`)
    short: str = ""

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
    elif tname == pname:  # a thread named as its process (Linux's default; Nsight Systems' ThreadNames)
        base = f"{base} (pid {pid})" if pid == tid else f"{base} (pid {pid}, tid {tid})"
    return base


def gpu_lane_label(device: object, stream: object) -> str:
    return f"GPU {device} stream {stream}"


def _is_generic_thread_name(name: str, tid: object) -> bool:
    """Names the profiler makes up from the ids alone (``stream 7``, ``thread 12 (python)``)."""
    low = name.strip().lower()
    return low == f"stream {tid}" or low.startswith(f"thread {tid}")


def lane_labels(is_gpu: bool, pid: object, tid: object, process_names: dict, thread_names: dict) -> tuple[str, str]:
    """(tree label, timeline label) of a lane; the timeline's is the start of the tree's.

    A device lane whose thread is named by the trace other than ``stream <tid>`` (MTIA's
    ``Stream 108`` on tid 3774) is labelled like a thread, ``Stream 108 (MTIA 17, pid 17)``,
    and its timeline label is that name; CUDA/ROCm streams stay ``GPU 0 stream 7`` /
    ``GPU0 s7``.  A host thread's timeline label is its name when the trace gives one that
    is not made of the ids (followed by its tid when it is its process's name, as Linux names
    threads: two processes' ``python3`` threads stay apart), else ``T <tid>``."""
    tname = thread_names.get((pid, tid)) or ""
    if is_gpu and (not tname or _is_generic_thread_name(tname, tid)):
        return gpu_lane_label(pid, tid), f"GPU{pid} s{tid}"
    label = host_lane_label(pid, tid, process_names, thread_names)
    if tname and tname == process_names.get(pid):  # threads named as their process: tell them apart
        return label, f"{tname} {tid}"
    if tname and not _is_generic_thread_name(tname, tid):
        return label, tname
    return label, f"T {tid}"


def lane_sort_key(is_gpu: bool, pid: object, tid: object, process_sort: dict, thread_sort: dict) -> tuple:
    if is_gpu:
        return (1, _num(pid), _num(tid))
    return (0, process_sort.get(pid, 0) if isinstance(process_sort.get(pid, 0), int) else 0, _num(pid),
            thread_sort.get((pid, tid), 0) if isinstance(thread_sort.get((pid, tid), 0), int) else 0, _num(tid))
