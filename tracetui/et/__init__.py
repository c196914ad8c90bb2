"""PyTorch Execution Trace ("CPU trace") loading: columns, tree and on-demand node details.

Public API: :func:`load_et`, :func:`is_execution_trace`, :class:`ETTrace`, and the per-node
objects :class:`ETNode`, :class:`ETArg`, :class:`ETTensor`.

The names load when first asked for, each from its module: the cache (``store.traces``) needs
``ETTrace`` and ``persist`` on every start of the browser, the reader (``loader``, with its
JSON recovery) only when an ET file is opened.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loader import is_execution_trace, load_et
    from .model import ETArg, ETNode, ETTensor
    from .trace import ETTrace, is_thread_root_name

__all__ = [
    "ETArg",
    "ETNode",
    "ETTensor",
    "ETTrace",
    "is_execution_trace",
    "is_thread_root_name",
    "load_et",
]

_HOME = {"ETArg": ".model", "ETNode": ".model", "ETTensor": ".model", "ETTrace": ".trace",
         "is_execution_trace": ".loader", "is_thread_root_name": ".trace", "load_et": ".loader"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
