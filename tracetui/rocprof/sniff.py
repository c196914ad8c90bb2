"""Is this file a rocprofv3 output?  Light: no numpy, no reader.

A rocprofv3 JSON document is one object whose first key is ``"rocprofiler-sdk-tool"``
(:data:`~.schema.TOOL_KEY`).
"""

from __future__ import annotations

from ..io.formats import Head, Recognition
from .schema import TOOL_KEY

#: the format's name (``tracetui.formats``); a trace read from a rocprofv3 file says so
FORMAT_NAME = "rocprof"
#: file names a folder of rocprofv3 outputs is listed by
SUFFIXES = ("results.json", "results.json.gz")
_TOOL = f'"{TOOL_KEY}"'.encode()


def recognise(head: Head) -> Recognition:
    """YES for a JSON object whose first key is the tool's."""
    text = head.text
    if text[:1] == b"{" and text[1:].lstrip()[:len(_TOOL)] == _TOOL:
        return Recognition.YES
    return Recognition.NO

