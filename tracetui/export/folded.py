"""The folded-stack export (``tracetui export --format folded``): one line per call stack,
``frame;frame;frame value``, what flamegraph.pl, inferno (``inferno-flamegraph``) and
speedscope read.  Values are **integer nanoseconds**.

``--by cpu`` (the default): the host time of each stack's own frames (self time), python
function frames left out unless ``--python-frames``; the lines of a subtree add up to its
root's duration.  ``--by gpu``: the duration of each GPU event (kernel, memcpy, memset) as a
leaf under the innermost op above its launch; the lines add up to the subtree's GPU time
(the tree's ``GPU`` column).  The whole trace starts each stack with its thread (or, by GPU
time, the GPU stream of a GPU event whose launch is not in the trace).  See
:mod:`tracetui.analysis.stacks` for every rule."""

from __future__ import annotations

from ..analysis.stacks import CPU, GPU, PYTHON, call_tree, folded_lines
from ..errors import TraceError
from ..kineto.trace import KinetoTrace

#: the values ``--by`` takes
FOLDED_BY = (CPU, GPU)


def render_folded(kt: KinetoTrace, root: int | None, by: str = CPU, python_frames: bool = False) -> bytes:
    """The folded stacks of ``root``'s subtree (None: the whole trace) as UTF-8 text."""
    if by not in FOLDED_BY:
        raise TraceError(None, f"unknown --by {by!r} for the folded export (expected {' or '.join(FOLDED_BY)})")
    if root is not None and not 0 <= root < kt.n_nodes:
        raise TraceError(kt.path, f"node {root} does not exist (0..{kt.n_nodes - 1})")
    mode = PYTHON if by == CPU and python_frames else by
    text = "\n".join(folded_lines(call_tree(kt, root, mode)))
    return (text + "\n").encode("utf-8") if text else b""
