"""Compare two runs: steps paired, op trees aligned, per-op and summary deltas (docs/diff.md).

Headless (no Textual): the command line, the Python API and the browser use the same model.
Names are imported on first use, so ``tracetui.diff.numbers`` (the text of the numbers) and the
command line's parser load without pandas.
"""

from __future__ import annotations

from ..lazy import lazy_names

_WHERE = {
    "RowKind": "align", "TraceDiff": "compare", "diff_traces": "compare", "KernelChange": "kernels",
    "kernel_changes": "kernels", "DiffSide": "model", "DiffTree": "model", "Match": "model",
    "by_abs_gpu_delta": "views", "regression_mask": "views", "sorted_preorder": "views", "with_ancestors": "views",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_names(__name__, {name: f".{home}" for name, home in _WHERE.items()})
