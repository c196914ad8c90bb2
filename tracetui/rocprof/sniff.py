"""Is this file a rocprofv3 output?  Light: no numpy, no reader.

A rocprofv3 JSON document is one object whose first key is ``"rocprofiler-sdk-tool"``
(:data:`~.schema.TOOL_KEY`); a rocprofv3 CSV kernel trace (``kernel_trace.csv``, read with the
CSV files beside it) starts with a header line naming ``"Kernel_Name"``, ``"Correlation_Id"``
and ``"Queue_Id"``.
"""

from __future__ import annotations

from ..io.formats import Head, Recognition
from .schema import CSV_KERNEL_HEADER, CSV_KERNELS, TOOL_KEY

#: the format's name (``tracetui.formats``); a trace read from a rocprofv3 file says so
FORMAT_NAME = "rocprof"
#: file names a folder of rocprofv3 outputs is listed by
SUFFIXES = ("results.json", "results.json.gz", CSV_KERNELS)
_TOOL = f'"{TOOL_KEY}"'.encode()


def recognise(head: Head) -> Recognition:
    """YES for a JSON object whose first key is the tool's, or a CSV kernel trace's header."""
    text = head.text
    if text[:1] == b"{" and text[1:].lstrip()[:len(_TOOL)] == _TOOL:
        return Recognition.YES
    if is_csv(head):
        return Recognition.YES
    return Recognition.NO


def is_csv(head: Head) -> bool:
    """Is the file a rocprofv3 CSV kernel trace (its header line names the kernel trace's columns)?"""
    first = head.text.split(b"\n", 1)[0]
    return all(col in first for col in CSV_KERNEL_HEADER)

