"""Where the icicle and bottom-up screens get their call trees: one trace's
:func:`~tracetui.analysis.stacks.call_tree` per (root, mode), the last few kept (a screen's
``v`` and Backspace come back to them), and what is above a root (Backspace at the top of an
icicle climbs to the root's parent, then to its thread, then to the whole trace).  Without
Textual; thread-safe (the trees are computed in worker threads)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ...analysis.stacks import WHOLE_TRACE, CallTree, call_tree
from ...errors import one_line
from ...kineto.trace import KinetoTrace

#: trees kept (the last used)
KEEP = 8


class StackSource:
    """The call trees of ``kt`` (module docstring)."""

    def __init__(self, kt: KinetoTrace) -> None:
        self.kt = kt
        self._lock = threading.Lock()
        self._trees: OrderedDict[tuple[int | None, str], CallTree] = OrderedDict()

    def tree(self, root: int | None, mode: str) -> CallTree:
        """The call tree of ``root`` (None: the whole trace) in ``mode``, computed once."""
        key = (root, mode)
        with self._lock:
            t = self._trees.get(key)
            if t is not None:
                self._trees.move_to_end(key)
                return t
        t = call_tree(self.kt, root, mode)
        with self._lock:
            self._trees[key] = t
            while len(self._trees) > KEEP:
                self._trees.popitem(last=False)
        return t

    def ready(self, root: int | None, mode: str) -> CallTree | None:
        with self._lock:
            return self._trees.get((root, mode))

    def above(self, root: int | None) -> tuple[bool, int | None]:
        """(True, the root above ``root``: its parent, or None for the whole trace), or
        (False, None) when ``root`` is the whole trace already."""
        if root is None:
            return False, None
        p = int(self.kt.parent[root])
        return True, (p if p >= 0 else None)

    def root_name(self, root: int | None) -> str:
        return WHOLE_TRACE if root is None else one_line(self.kt.name(root))
