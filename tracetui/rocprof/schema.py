"""Every name of a rocprofv3 output tracetui reads, and every name it gives what it read,
declared once.

The JSON layout is the one ``rocprofv3 --output-format json`` writes (rocprofiler-sdk's
``generateJSON.cpp`` with the cereal ``save`` functions of ``cxx/serialization.hpp``): one
top-level key, :data:`TOOL_KEY`, holding one record per profiled process.  Times are
nanoseconds (Kineto's are microseconds).  The CSV layout is one file per record kind
(``<prefix>kernel_trace.csv``, ``<prefix>hip_api_trace.csv`` ...; rocprofiler-sdk's
``generateCSV.cpp``).
"""

from __future__ import annotations

# ---- the JSON document -------------------------------------------------------------------
#: the document's one top-level key: a list with one record per process
TOOL_KEY = "rocprofiler-sdk-tool"
#: a process record's sections
METADATA, AGENTS, STRINGS, KERNEL_SYMBOLS, BUFFER_RECORDS = (
    "metadata", "agents", "strings", "kernel_symbols", "buffer_records")
#: ``buffer_records`` lists read into events
KERNEL_DISPATCH, HIP_API, HSA_API, MARKER_API, RCCL_API = (
    "kernel_dispatch", "hip_api", "hsa_api", "marker_api", "rccl_api")
MEMORY_COPY, MEMORY_ALLOCATION, SCRATCH_MEMORY = "memory_copy", "memory_allocation", "scratch_memory"
#: every ``buffer_records`` list that becomes events, in the order they are read
READ_RECORDS = (KERNEL_DISPATCH, MEMORY_COPY, HIP_API, HSA_API, RCCL_API, MARKER_API, MEMORY_ALLOCATION,
                SCRATCH_MEMORY)
#: ``strings.buffer_records[kind]``: the record kind's name and its operation names, by index
KIND_NAME, OPERATIONS = "kind", "operations"
#: ``strings.marker_api``: the roctx messages, ``{"key": correlation id, "value": text}``
MARKER_KEY, MARKER_VALUE = "key", "value"
#: an agent's ``type``: 2 is a GPU (1 a CPU)
AGENT_GPU = 2

# ---- what each record kind becomes (Kineto's categories: kineto/kinds.py knows each) ------
CATEGORY = {
    KERNEL_DISPATCH: "kernel",
    MEMORY_COPY: "gpu_memcpy",
    HIP_API: "cuda_runtime",  # Kineto keeps this category for HIP calls on ROCm
    HSA_API: "cuda_driver",  # the runtime below HIP, as the driver API is below CUDA's runtime
    RCCL_API: "cuda_runtime",
    MARKER_API: "user_annotation",  # roctx ranges (marks are instants)
    MEMORY_ALLOCATION: "memory_allocation",
    SCRATCH_MEMORY: "scratch_memory",
}
#: categories of host spans that Kineto has no kind for: shown as plain spans on their thread
PLAIN_CATEGORIES = frozenset({CATEGORY[MEMORY_ALLOCATION], CATEGORY[SCRATCH_MEMORY]})
#: the marker operation that is a point in time, not a range
MARK_OPERATION = "roctxMarkA"

# ---- args tracetui writes (beside Kineto's device, stream, correlation, grid, block, bytes:
# kineto/schema.py) --------------------------------------------------------------------------
ARG_VGPRS = "VGPRs"  #: architected vector registers per work-item (kernel symbol's arch_vgpr_count)
ARG_AGPRS = "AGPRs"  #: accumulation registers per work-item (accum_vgpr_count)
ARG_SGPRS = "SGPRs"  #: scalar registers per wavefront (sgpr_count)
ARG_LDS = "LDS bytes"  #: local data share per workgroup (the dispatch's group_segment_size)
ARG_SCRATCH = "scratch bytes"  #: scratch per work-item (the dispatch's private_segment_size)
ARG_GRID_SIZE = "grid size (work-items)"  #: the dispatch packet's grid, in work-items
ARG_KERNEL_ID = "kernel id"
ARG_DISPATCH_ID = "dispatch id"
ARG_THREAD = "thread"  #: the host thread that dispatched the kernel or asked for the copy
ARG_AGENT = "agent"  #: the agent's name (gfx950 ...)
ARG_EXTERNAL = "external correlation id"  #: the tool's external correlation (when not 0)
ARG_SRC_AGENT, ARG_DST_AGENT = "source agent", "destination agent"
ARG_ADDRESS, ARG_SIZE = "address", "allocation size"
ARG_OPERATION = "operation"
#: the arg names of a kernel's AMD launch facts, in the order the detail pane lists them
KERNEL_EXTRAS = (ARG_VGPRS, ARG_AGPRS, ARG_SGPRS, ARG_LDS, ARG_SCRATCH, ARG_GRID_SIZE)

# ---- deviceProperties from an agent (Kineto's key names where they mean the same) ---------
#: the trace's metadata key holding what ``info`` shows of the run (command, hostname, pids)
META_ROCPROF = "rocprof"
#: the lane of a device's memory copies (they run on no queue): its stream column is this
COPY_STREAM = -1

# ---- the CSV layout ------------------------------------------------------------------------
#: the file name ending of each CSV file read (the prefix before it is the same for all)
CSV_KERNELS = "kernel_trace.csv"
CSV_FILES = {
    KERNEL_DISPATCH: CSV_KERNELS,
    HIP_API: "hip_api_trace.csv",
    HSA_API: "hsa_api_trace.csv",
    MARKER_API: "marker_api_trace.csv",
    RCCL_API: "rccl_api_trace.csv",
    MEMORY_COPY: "memory_copy_trace.csv",
    MEMORY_ALLOCATION: "memory_allocation_trace.csv",
    SCRATCH_MEMORY: "scratch_memory_trace.csv",
}
CSV_AGENTS = "agent_info.csv"
#: columns of ``kernel_trace.csv`` that recognition looks for in the header line
CSV_KERNEL_HEADER = (b'"Kernel_Name"', b'"Correlation_Id"', b'"Queue_Id"')
