"""Compare two runs: steps paired, op trees aligned, per-op and summary deltas (docs/diff.md).

Headless (no Textual): the command line, the Python API and the browser use the same model.
"""

from .align import RowKind
from .compare import TraceDiff, diff_traces
from .model import DiffSide, DiffTree, Match

__all__ = ["DiffSide", "DiffTree", "Match", "RowKind", "TraceDiff", "diff_traces"]
