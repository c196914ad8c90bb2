"""Compare two runs: steps paired, op trees aligned, per-op and summary deltas (docs/diff.md).

Headless (no Textual): the command line, the Python API and the browser use the same model.
"""

from .align import RowKind
from .compare import TraceDiff, diff_traces
from .kernels import KernelChange, kernel_changes
from .model import DiffSide, DiffTree, Match
from .views import by_abs_gpu_delta, regression_mask, sorted_preorder, with_ancestors

__all__ = ["DiffSide", "DiffTree", "KernelChange", "Match", "RowKind", "TraceDiff", "by_abs_gpu_delta", "diff_traces",
           "kernel_changes", "regression_mask", "sorted_preorder", "with_ancestors"]
