"""PyTorch Execution Trace ("CPU trace") loading: columns, tree and on-demand node details.

Public API: :func:`load_et`, :func:`is_execution_trace`, :class:`ETTrace`, and the per-node
objects :class:`ETNode`, :class:`ETArg`, :class:`ETTensor`.

The names load when first asked for, each from its module: the cache (``store.traces``) needs
``ETTrace`` and ``persist`` on every start of the browser, the reader (``loader``, with its
JSON recovery) only when an ET file is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

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

__getattr__ = lazy_names(__name__, {
    "ETArg": ".model", "ETNode": ".model", "ETTensor": ".model", "ETTrace": ".trace",
    "is_execution_trace": ".loader", "is_thread_root_name": ".trace", "load_et": ".loader"})
