"""Every fact of the XPlane format tracetui uses, declared once: the field numbers of
``xplane.proto`` (../shared/FORMATS.md, "XPlane"), the plane, line and stat names the JAX/XLA
profiler writes, and the names tracetui reads them by.  docs/formats.md ("JAX/XLA XPlane")
says what each becomes.

Stat names are the profiler's (``tsl/profiler/utils/xplane_schema``): labels from the file,
compared as data, never shown as markup.
"""

from __future__ import annotations

import re

# ---- wire types ------------------------------------------------------------------------------
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
#: the wire types a message of XPlane may hold (3 and 4, groups, are not used by proto3)
WIRE_TYPES = frozenset({VARINT, FIXED64, LEN, FIXED32})
WIRE_NAMES = {VARINT: "varint", FIXED64: "64-bit", LEN: "length-delimited", FIXED32: "32-bit", 3: "group start",
              4: "group end", 6: "unknown (6)", 7: "unknown (7)"}
#: the longest varint: 10 bytes hold 64 bits
VARINT_MAX = 10

# ---- field numbers (number -> (name, wire type)) ---------------------------------------------
SPACE_PLANES, SPACE_ERRORS, SPACE_WARNINGS, SPACE_HOSTNAMES = 1, 2, 3, 4
PLANE_ID, PLANE_NAME, PLANE_LINES, PLANE_EVENT_METADATA, PLANE_STAT_METADATA, PLANE_STATS = 1, 2, 3, 4, 5, 6
LINE_ID, LINE_NAME, LINE_TIMESTAMP_NS, LINE_EVENTS, LINE_DURATION_PS = 1, 2, 3, 4, 9
LINE_DISPLAY_ID, LINE_DISPLAY_NAME = 10, 11
EVENT_METADATA_ID, EVENT_OFFSET_PS, EVENT_DURATION_PS, EVENT_STATS, EVENT_NUM_OCCURRENCES = 1, 2, 3, 4, 5
EMETA_ID, EMETA_NAME, EMETA_METADATA, EMETA_DISPLAY_NAME, EMETA_STATS, EMETA_CHILD_ID = 1, 2, 3, 4, 5, 6
STAT_METADATA_ID, STAT_DOUBLE, STAT_UINT64, STAT_INT64, STAT_STR, STAT_BYTES, STAT_REF = 1, 2, 3, 4, 5, 6, 7
SMETA_ID, SMETA_NAME = 1, 2
MAP_KEY, MAP_VALUE = 1, 2

#: message -> {field number: (name, wire type)}: the fields tracetui reads and the wire type each
#: must have (a known field of another wire type is corrupt input); other numbers are skipped
FIELDS: dict[str, dict[int, tuple[str, int]]] = {
    "XSpace": {SPACE_PLANES: ("planes", LEN), SPACE_ERRORS: ("errors", LEN), SPACE_WARNINGS: ("warnings", LEN),
               SPACE_HOSTNAMES: ("hostnames", LEN)},
    "XPlane": {PLANE_ID: ("id", VARINT), PLANE_NAME: ("name", LEN), PLANE_LINES: ("lines", LEN),
               PLANE_EVENT_METADATA: ("event_metadata", LEN), PLANE_STAT_METADATA: ("stat_metadata", LEN),
               PLANE_STATS: ("stats", LEN)},
    "XLine": {LINE_ID: ("id", VARINT), LINE_NAME: ("name", LEN), LINE_TIMESTAMP_NS: ("timestamp_ns", VARINT),
              LINE_EVENTS: ("events", LEN), LINE_DURATION_PS: ("duration_ps", VARINT),
              LINE_DISPLAY_ID: ("display_id", VARINT), LINE_DISPLAY_NAME: ("display_name", LEN)},
    "XEvent": {EVENT_METADATA_ID: ("metadata_id", VARINT), EVENT_OFFSET_PS: ("offset_ps", VARINT),
               EVENT_DURATION_PS: ("duration_ps", VARINT), EVENT_STATS: ("stats", LEN),
               EVENT_NUM_OCCURRENCES: ("num_occurrences", VARINT)},
    "XEventMetadata": {EMETA_ID: ("id", VARINT), EMETA_NAME: ("name", LEN), EMETA_METADATA: ("metadata", LEN),
                       EMETA_DISPLAY_NAME: ("display_name", LEN), EMETA_STATS: ("stats", LEN),
                       EMETA_CHILD_ID: ("child_id", VARINT)},
    "XStatMetadata": {SMETA_ID: ("id", VARINT), SMETA_NAME: ("name", LEN)},
    "XStat": {STAT_METADATA_ID: ("metadata_id", VARINT), STAT_DOUBLE: ("double_value", FIXED64),
              STAT_UINT64: ("uint64_value", VARINT), STAT_INT64: ("int64_value", VARINT),
              STAT_STR: ("str_value", LEN), STAT_BYTES: ("bytes_value", LEN), STAT_REF: ("ref_value", VARINT)},
    "map entry": {MAP_KEY: ("key", VARINT), MAP_VALUE: ("value", LEN)},
}

# ---- what a stat's value is (uint8 codes of the reader's stat columns) -----------------------
V_NONE, V_DOUBLE, V_UINT, V_INT, V_STR, V_BYTES, V_REF = 0, 1, 2, 3, 4, 5, 6
#: field number of an XStat's value -> its code
VALUE_OF_FIELD = {STAT_DOUBLE: V_DOUBLE, STAT_UINT64: V_UINT, STAT_INT64: V_INT, STAT_STR: V_STR,
                  STAT_BYTES: V_BYTES, STAT_REF: V_REF}

# ---- planes ----------------------------------------------------------------------------------
#: a GPU's plane: ``/device:GPU:<n>``; its lines are streams, ``n`` is the device
GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")
#: planes of the host: their lines are threads
HOST_PLANE_PREFIX = "/host:"
#: what the first plane of an XSpace may be called (recognition): device, host, the environment
PLANE_NAME_PREFIXES = (b"/device:", b"/host:", b"Task Environment", b"/custom:")

# ---- lines -----------------------------------------------------------------------------------
#: a stream line's name, ``Stream #14(Compute)``: lines so named are labelled ``GPU n stream s``
STREAM_LINE = re.compile(r"^Stream #(\d+)(\(.*\))?$")
#: lines the profiler's tools derive from the streams' events (the same kernels again, grouped):
#: not read, counted in a warning (``tsl/profiler/utils/xplane_schema.h``)
DERIVED_LINES = frozenset({
    "Steps", "XLA Modules", "XLA Ops", "XLA TraceMe", "Framework Ops", "Framework Name Scope", "TensorFlow Ops",
    "TensorFlow Name Scope", "Launch Stats", "Source code", "Host Offload Op Line", "SparseCore Modules",
    "SparseCore Ops", "SparseCore Steps", "Async XLA Ops",
})

# ---- stats the reader gives a meaning (every other stat is kept in the event's args) ---------
STAT_CORRELATION_ID = "correlation_id"  #: an API call and the device work it launched share it
STAT_KERNEL_DETAILS = "kernel_details"  #: ``regs:90 static_shared:0 dynamic_shared:16384 grid:256,1,1 ...``
STAT_MEMCPY_DETAILS = "memcpy_details"  #: ``kind:... size:N ...`` of a copy (its call or its device event)
STAT_MEMSET_DETAILS = "memset_details"
STAT_HLO_OP = "hlo_op"  #: the XLA op (HLO instruction) a kernel or launch belongs to
STAT_HLO_MODULE = "hlo_module"  #: the XLA module (the jitted computation) of that op
STAT_STEP_NUM = "step_num"  #: on a step annotation (``jax.profiler.StepTraceAnnotation``)
STAT_PROCESS_ID = "process_id"  #: a host plane's process
PLANE_DEVICE_NAME = "gpu_device_name"  #: a GPU plane's stats, read as Kineto's deviceProperties
PLANE_VENDOR = "device_vendor"
PLANE_CORES = "core_count"
PLANE_MEMORY = "memory_size"
PLANE_CC_MAJOR = "compute_cap_major"
PLANE_CC_MINOR = "compute_cap_minor"

#: a kernel_details text: ``key:value`` words (NVIDIA: regs, static_shared, dynamic_shared, grid,
#: block; AMD: grid, block, private_mem, group_mem)
DETAIL_WORD = re.compile(r"([A-Za-z_]+):(\S*)")
#: kernel_details keys -> what they are
DETAIL_REGISTERS = "regs"
DETAIL_SHARED = ("static_shared", "dynamic_shared", "group_mem")  #: bytes of shared memory (LDS on AMD), summed
DETAIL_GRID, DETAIL_BLOCK = "grid", "block"
#: a memcpy_details word giving the bytes copied
DETAIL_SIZE = "size"

# ---- names of host events ----------------------------------------------------------------------
#: the Python tracer's events: ``$profiler.py:307 trace``, ``$builtins isinstance``
PYTHON_PREFIX = "$"
#: the span around an XLA module's execution on the host: ``jit_train_step:XLA GPU module``
MODULE_SUFFIX = ":XLA GPU module"
#: a jitted function's call on the Python thread (JAX's pjit dispatch): ``PjitFunction(train_step)``
JIT_CALL = re.compile(r"^PjitFunction\(.*\)$")
#: CUDA driver API names (``cuLaunchKernel``, ``cuGraphLaunch``); ``cuda*``/``hip*`` are runtime calls
DRIVER_API = re.compile(r"^cu[A-Z]")

# ---- what tracetui calls things in the Kineto model ------------------------------------------
#: the arg naming the line a host event was read from when it is shown on another line's lane
ARG_LINE = "xplane line"
#: the arg prefix of a stat whose name is an arg name the Kineto model reads (kept, renamed)
RENAMED_STAT = "xplane "
#: the plane of the profile's start and stop times (``profile_start_time`` ...), kept in the metadata
ENV_PLANE = "Task Environment"
#: XLA's names of device copies (CUPTI's copy kinds) -> Kineto's direction words
COPY_DIRECTIONS = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH", "MemcpyD2D": "DtoD", "MemcpyP2P": "PtoP",
                   "MemcpyH2H": "HtoH"}
#: ``memcpy_details`` memory kinds -> Kineto's words (``Memcpy HtoD (Pinned -> Device)``)
COPY_MEMORY = {"pageable": "Pageable", "pinned": "Pinned", "device": "Device", "array": "Array",
               "managed": "Managed", "device_static": "Device Static", "managed_static": "Managed Static"}
DETAIL_SRC, DETAIL_DST = "kind_src", "kind_dst"
#: the arg keeping XLA's own name of a device copy renamed as Kineto names copies
ARG_NAME = "xplane name"
#: device events that are copies and sets by name (CUPTI's ``MemcpyH2D``, ``Memset``), besides
#: those with a ``memcpy_details`` / ``memset_details`` stat
MEMCPY_PREFIX, MEMSET_PREFIX = "Memcpy", "Memset"

# ---- the Kineto categories events get (kineto/kinds.py knows each) ---------------------------
CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET = "kernel", "gpu_memcpy", "gpu_memset"
CAT_RUNTIME, CAT_DRIVER = "cuda_runtime", "cuda_driver"
CAT_OP, CAT_ANNOTATION, CAT_PYTHON = "cpu_op", "user_annotation", "python_function"
#: a host span that is none of those (Kineto's plain spans: shown on their thread)
CAT_OTHER = ""
#: the category table of a trace read from an XPlane (event columns hold indexes into it)
CATEGORIES = (CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET, CAT_RUNTIME, CAT_DRIVER, CAT_OP, CAT_ANNOTATION, CAT_PYTHON,
              CAT_OTHER)
#: the trace's metadata key holding what the space says of itself (hostnames, planes, times)
META_XPLANE = "xplane"
