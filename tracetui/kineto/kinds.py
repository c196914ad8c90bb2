"""Event kinds: what an event *is*, derived from its Kineto category (and phase).

Kineto categories changed over the years (``Kernel``/``Runtime`` in the oldest traces,
``kernel``/``cuda_runtime`` now; AMD traces keep ``cuda_runtime`` with ``hip*`` names),
so everything downstream works on :class:`Kind` instead of raw category strings.
"""

from __future__ import annotations

import re
from enum import IntEnum

from ..names import head


class Kind(IntEnum):
    """What an event is.  Values are stored in a uint8 column."""

    OTHER = 0
    PYTHON = 1  #: python_function
    ANNOTATION = 2  #: user_annotation (record_function, ProfilerStep#N)
    CPU_OP = 3  #: cpu_op (aten::..., autograd nodes)
    RUNTIME = 4  #: cuda_runtime / Runtime (cudaLaunchKernel, hipLaunchKernel, cudaMemcpyAsync ...)
    DRIVER = 5  #: cuda_driver (cuLaunchKernel, cuLaunchKernelEx)
    SYNC = 6  #: cuda_sync (event/stream waits recorded by CUPTI)
    KERNEL = 7  #: kernel / Kernel
    MEMCPY = 8  #: gpu_memcpy / Memcpy
    MEMSET = 9  #: gpu_memset / Memset
    GPU_ANNOTATION = 10  #: gpu_user_annotation (ProfilerStep on the GPU timeline)
    INSTANT = 11  #: ph "i" events ([memory], cpu_instant_event, markers)
    TRACE_SPAN = 12  #: cat "Trace": the profiler's own span
    OVERHEAD = 13  #: profiler overhead spans
    # ---- driver-call traces (tracetui/driver/): kinds of their own, so that the Kineto
    # analyses of a trace opened with one (launch statistics, ET links) never count them
    TRACED_CALL = 14  #: an API call seen by an eBPF or LD_PRELOAD tracer (cuLaunchKernel ...)
    IOCTL = 15  #: a kernel-space driver call (nvidia_ioctl)
    RECORD = 16  #: a tracer's record: memory alloc, transfer, kernel launch parameters ...
    PHASE = 17  #: a pipeline phase (initialisation, weight loading ...) derived by tracetui


#: Kinds that run on a GPU stream (pid = device, tid = stream).
GPU_WORK_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET})
GPU_KINDS = GPU_WORK_KINDS | {Kind.GPU_ANNOTATION}
#: Kinds whose ``correlation`` can launch GPU work.
LAUNCH_KINDS = frozenset({Kind.RUNTIME, Kind.DRIVER})
#: Host-side kinds that form the op tree (nesting by ts/dur on one pid/tid).
HOST_KINDS = frozenset(
    {Kind.PYTHON, Kind.ANNOTATION, Kind.CPU_OP, Kind.RUNTIME, Kind.DRIVER, Kind.SYNC,
     Kind.TRACE_SPAN, Kind.OVERHEAD, Kind.OTHER, Kind.TRACED_CALL, Kind.IOCTL, Kind.RECORD, Kind.PHASE}
)

CATEGORY_KIND: dict[str, Kind] = {
    "python_function": Kind.PYTHON,
    "user_annotation": Kind.ANNOTATION,
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "Operator": Kind.CPU_OP,
    "cuda_runtime": Kind.RUNTIME,
    "Runtime": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "cuda_sync": Kind.SYNC,
    "kernel": Kind.KERNEL,
    "Kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "Memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "Memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cpu_instant_event": Kind.INSTANT,
    "Trace": Kind.TRACE_SPAN,
    "overhead": Kind.OVERHEAD,
    # ---- other accelerators (the profiler's writer, libkineto ActivityType names)
    # MTIA: launches are mtia_runtime calls, device work mtia_ccp_events (linked by
    # correlation, confirmed by ac2g flows); see DEVICE_NAME_KINDS for its DMA transfers
    "mtia_runtime": Kind.RUNTIME,
    "mtia_ccp_events": Kind.KERNEL,
    # Intel XPU and out-of-tree (PrivateUse1) backends write their device work as
    # kernel / gpu_memcpy / gpu_memset and their API calls under these categories
    "xpu_runtime": Kind.RUNTIME,
    "xpu_driver": Kind.DRIVER,
    "xpu_sync": Kind.SYNC,
    "privateuse1_runtime": Kind.RUNTIME,
    "privateuse1_driver": Kind.DRIVER,
    "glow_runtime": Kind.RUNTIME,
    # Habana Gaudi: device ops
    "hpu_op": Kind.KERNEL,
    # driver-call traces (tracetui/driver/): API calls, kernel-space ioctls, the tracers'
    # records and the pipeline phases tracetui derives
    "driver_call": Kind.TRACED_CALL,
    "kernel_ioctl": Kind.IOCTL,
    "driver_record": Kind.RECORD,
    "driver_phase": Kind.PHASE,
}

#: (category, event name) -> kind, where one accelerator category holds several kinds of
#: device work: MTIA's DMA requests are its host<->device copies (launched by
#: ``enqueueCommand memcpyHtoDAsync``/``memcpyDtoHAsync``)
DEVICE_NAME_KINDS: dict[tuple[str, str], Kind] = {
    ("mtia_ccp_events", "dma_request"): Kind.MEMCPY,
}

#: Categories of device work that does not run on a GPU: MTIA's CCP events (its compute,
#: DMA requests and event waits) and Gaudi's ops.  A trace holding them calls its device
#: work "device events", never "GPU events" or "kernels" (:meth:`KinetoTrace.device_word`).
NON_GPU_DEVICE_CATEGORIES = frozenset({"mtia_ccp_events", "hpu_op"})


def device_word_of(categories) -> str:
    """``"device"`` when the categories hold non-GPU device work (MTIA, Gaudi), else ``"GPU"``."""
    return "device" if any(c in NON_GPU_DEVICE_CATEGORIES for c in categories) else "GPU"

#: Categories the profiler writes that are understood without a kind of their own: host
#: spans shown on their thread (Kind.OTHER), and counters read by ``kineto/counters.py``.
#: Any other category is named in the load warnings with its count.
KNOWN_OTHER_CATEGORIES = frozenset({
    "", "external_correlation", "cuda_event", "collective_comm", "mtia_insight", "xpu_scope_profiler",
    "cuda_profiler_range", "mtia_counters", "hardware_counters",
})
#: Categories whose events carry counter values as args (read by ``kineto/counters.py``)
COUNTER_CATEGORIES = frozenset({"cuda_profiler_range", "hardware_counters", "mtia_counters"})

#: Phases (``ph``) the loader understands: complete (X), begin/end (B/E, merged), instants
#: (i/I/n), flows (s/f/t), metadata (M), counters (C, read by ``kineto/counters.py``)
KNOWN_PHASES = frozenset("XBEiInsftMC")

#: Flow categories: launch -> GPU work, and forward -> backward.
LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g", "async_cpu_to_gpu", "async_gpu"})
FWDBWD_FLOW_CATEGORIES = frozenset({"fwdbwd"})


class LaunchClass(IntEnum):
    """What a runtime/driver call does, from its name (CUDA and HIP)."""

    OTHER = 0
    KERNEL_LAUNCH = 1
    GRAPH_LAUNCH = 2
    MEMCPY = 3
    MEMSET = 4
    SYNC = 5
    MALLOC = 6
    FREE = 7


#: the synchronising calls that block the calling CPU thread until the GPU catches up:
#: device/context, stream and event synchronize (not waits or queries)
_BLOCKING_SYNC = r"^(cuda|hip)(DeviceSynchronize|StreamSynchronize|EventSynchronize)|^cu(Ctx|Stream|Event)Synchronize"
BLOCKING_SYNC_RE = re.compile(_BLOCKING_SYNC)

#: synchronous copies: the calling thread returns when the copy is done (``cudaMemcpy``,
#: ``cudaMemcpy2D``, ``hipMemcpyDtoH``, ``hipMemcpyWithStream``, ``cuMemcpyDtoH_v2``; not ``*Async``)
SYNC_COPY_RE = re.compile(r"^(cuda|hip|cu)Memcpy(?!\w*Async)")

#: names of the CUPTI synchronisation records (category ``cuda_sync``), written beside the API
#: call with the same correlation: what a sync call or a stream wait waited on
CUPTI_STREAM_SYNC = "Stream Sync"  #: cudaStreamSynchronize; ``stream`` is the stream
CUPTI_CONTEXT_SYNC = "Context Sync"  #: cudaDeviceSynchronize / cuCtxSynchronize
CUPTI_EVENT_SYNC = "Event Sync"  #: cudaEventSynchronize (and cudaEventQuery); waits on a recorded event
CUPTI_STREAM_WAIT = "Stream Wait Event"  #: cudaStreamWaitEvent; ``stream`` waits on a recorded event
#: the API call that records an event on a stream (what an event sync or a stream wait waits for)
EVENT_RECORD_RE = re.compile(r"^(cuda|hip)EventRecord|^cuEventRecord")

_LAUNCH_PATTERNS: list[tuple[LaunchClass, re.Pattern[str]]] = [
    (LaunchClass.GRAPH_LAUNCH, re.compile(r"^(cuda|hip|cu)GraphLaunch")),
    # a host function enqueued on a stream (cudaLaunchHostFunc) launches no kernel
    (LaunchClass.KERNEL_LAUNCH, re.compile(
        r"^(cudaLaunch|cuLaunch|hipLaunch|hipExtLaunch|hipModuleLaunch|hipExtModuleLaunch|cudaLaunchCooperative|"
        r"hipLaunchCooperative)(?!HostFunc)")),
    (LaunchClass.MEMCPY, re.compile(r"^(cuda|hip|cu)Memcpy")),
    (LaunchClass.MEMSET, re.compile(r"^(cuda|hip|cu)Memset")),
    # blocking synchronize calls, and the waits and queries that order streams
    (LaunchClass.SYNC, re.compile(_BLOCKING_SYNC + r"|^(cuda|hip)(StreamWaitEvent|EventQuery|StreamQuery)")),
    (LaunchClass.MALLOC,
     re.compile(r"^(cuda|hip)(Malloc|HostAlloc|MallocAsync|MallocHost|ExtMallocWithFlags)|^cuMemAlloc")),
    (LaunchClass.FREE, re.compile(r"^(cuda|hip)(Free|FreeHost|FreeAsync)|^cuMemFree")),
]


def launch_class_of_name(name: str) -> LaunchClass:
    """Classify a runtime/driver API name (``cudaLaunchKernel`` -> KERNEL_LAUNCH ...) by its
    head (:func:`tracetui.names.head`: bounded work per name)."""
    name = head(name)
    for cls, pat in _LAUNCH_PATTERNS:
        if pat.search(name):
            return cls
    return LaunchClass.OTHER


