"""tracetui: a keyboard-driven terminal browser for PyTorch profiler traces.

Python API (imported lazily, so ``import tracetui`` stays cheap)::

    from tracetui import load_trace, load_pair
    from tracetui import (operation_metadata_scrape, op_to_kernel_tracing, get_gpu_op_identifier,
                          kernel_metadata_scrape, kernel_to_op_tracing)
    from tracetui import find_node, print_subtree, print_parent_chain
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_trace": "tracetui.session",
    "load_pair": "tracetui.session",
    "open_traces": "tracetui.session",
    "LinkedTrace": "tracetui.session",
    "KinetoTrace": "tracetui.kineto",
    "load_kineto": "tracetui.kineto",
    "Kind": "tracetui.kineto",
    "ETTrace": "tracetui.et",
    "load_et": "tracetui.et",
    "operation_metadata_scrape": "tracetui.api",
    "op_to_kernel_tracing": "tracetui.api",
    "get_gpu_op_identifier": "tracetui.api",
    "kernel_metadata_scrape": "tracetui.api",
    "kernel_to_op_tracing": "tracetui.api",
    "find_node": "tracetui.export.tree_text",
    "format_subtree": "tracetui.export.tree_text",
    "format_parent_chain": "tracetui.export.tree_text",
    "print_subtree": "tracetui.export.tree_text",
    "print_parent_chain": "tracetui.export.tree_text",
    "TraceError": "tracetui.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'tracetui' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value
