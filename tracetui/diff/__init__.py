"""Compare two runs: steps paired, op trees aligned, per-op and summary deltas (docs/diff.md).

Headless (no Textual): the command line, the Python API and the browser use the same model.
Names are imported on first use, so ``tracetui.diff.numbers`` (the text of the numbers) and the
command line's parser load without pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "RowKind": "align", "TraceDiff": "compare", "diff_traces": "compare", "KernelChange": "kernels",
    "kernel_changes": "kernels", "DiffSide": "model", "DiffTree": "model", "Match": "model",
    "by_abs_gpu_delta": "views", "regression_mask": "views", "sorted_preorder": "views", "with_ancestors": "views",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
