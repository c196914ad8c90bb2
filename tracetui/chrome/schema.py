"""Every name of a generic Chrome trace JSON tracetui gives a meaning, declared once.

The Trace Event Format's own names (``ph``, ``traceEvents``, the ``process_name`` metadata)
are the Kineto reader's (:mod:`tracetui.kineto`); here: what tells a PyTorch profiler trace
from any other Chrome trace, and the names of the TensorFlow/JAX profiler's device planes.
"""

from __future__ import annotations

import re

from ..io.jsonkind import KINETO_KEYS
from ..kineto.kinds import (
    CATEGORY_KIND,
    FWDBWD_FLOW_CATEGORIES,
    KNOWN_OTHER_CATEGORIES,
    LAUNCH_FLOW_CATEGORIES,
)

#: a Chrome trace format key that any writer may use (JAX, proton, Perfetto): no sign of Kineto
CHROME_KEYS = (b'"displayTimeUnit"',)
#: top-level keys only the PyTorch profiler writes: a file with one is a PyTorch trace
PYTORCH_KEYS = tuple(k for k in KINETO_KEYS if k not in CHROME_KEYS) + (b'"traceName"',)
#: categories only the PyTorch profiler (and tracetui's own exports of its model) writes: a file
#: whose first events use one is a PyTorch trace
PYTORCH_CATEGORIES = frozenset(c for c in (set(CATEGORY_KIND) | set(KNOWN_OTHER_CATEGORIES)
                                           | set(LAUNCH_FLOW_CATEGORIES) | set(FWDBWD_FLOW_CATEGORIES)) if c)
#: an event's category and phase as the head shows them (a string value of a ``"cat"`` key)
CAT_VALUE = re.compile(rb'"cat"\s*:\s*"((?:[^"\\]|\\.)*)"')
PH_KEY = re.compile(rb'"ph"\s*:\s*"')

# ---- the TensorFlow / JAX profiler's trace viewer JSON (xprof's Chrome trace of an XSpace) ---
#: a GPU's process: ``/device:GPU:0``; its number is the device
GPU_PROCESS = re.compile(r"^/device:GPU:(\d+)")
#: a GPU stream's thread: ``Stream #14(Compute)``; its number is the stream
STREAM_THREAD = re.compile(r"^Stream #(\d+)")
#: device events that are copies and sets by name (CUPTI's ``MemcpyH2D``, ``Memset``)
MEMCPY_PREFIX, MEMSET_PREFIX = "Memcpy", "Memset"
#: the categories such device events get (Kineto's: kineto/kinds.py knows each)
CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET = "kernel", "gpu_memcpy", "gpu_memset"
#: Kineto's metadata event names and arg read here, and the metadata phase
PROCESS_NAME, THREAD_NAME, META_NAME, META_PHASE = "process_name", "thread_name", "name", "M"
#: the phases of spans (complete events, begin/end pairs): what a GPU stream's work is written as
SPAN_PHASES = ("X", "B", "E")
