"""load_chrome(path): a Chrome trace JSON that is not a PyTorch profiler trace, read by the
Kineto loader (the same decode, recovery of files cut short, and build) with the generic
reading of :mod:`.devices`: events keep their own categories as plain spans, GPU work of the
TensorFlow/JAX profiler's device processes becomes kernels, copies and sets."""

from __future__ import annotations

import os

from ..io.files import trace_path
from ..io.formats import Progress
from ..kineto.loader import load_kineto
from ..kineto.trace import KinetoTrace
from .devices import adapt
from .sniff import FORMAT_NAME


def load_chrome(path: str | os.PathLike[str], progress: Progress | None = None) -> KinetoTrace:
    """The trace of a generic Chrome trace JSON file (plain or gzip, object or bare array)."""
    trace = load_kineto(trace_path(path), progress=progress, adapt=adapt)
    trace.source_format = FORMAT_NAME
    return trace
