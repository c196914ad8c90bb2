"""PyTorch Execution Trace ("CPU trace") loading: columns, tree and on-demand node details.

Public API: :func:`load_et`, :func:`is_execution_trace`, :class:`ETTrace`, and the per-node
objects :class:`ETNode`, :class:`ETArg`, :class:`ETTensor`.
"""

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
