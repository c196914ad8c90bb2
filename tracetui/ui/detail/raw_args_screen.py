"""Every arg of the selected event, as Perfetto's "Arguments" panel: ``a`` on the browser
opens it for the selected row.

A collapsible tree (:class:`RawArgsTree`): the event's own fields (category, phase, pid, tid,
start and duration in µs), then every key of its ``args`` exactly as the file has it (nested
objects and long lists fold; counter values, NCCL collective args, hardware counters of a
``cuda_profiler_range`` included), and for GPU work the args of its launch call.  ``c`` copies
the highlighted value and ``C`` its name (the arg's key, e.g. ``Input Dims``) to the
clipboard with Textual's ``App.copy_to_clipboard`` (OSC 52: works over SSH in terminals that
allow it).  Enter or space folds a node; Esc closes.  A value is drawn cut at
:data:`LABEL_CHARS` characters and a key, a title at :data:`tracetui.names.NAME_WORK_CHARS`
(``… (+10 MB)``); what ``c``/``C`` copy is always whole.

Labels are trace data: built as :class:`rich.text.Text`, never parsed as markup.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, Tree
from textual.widgets.tree import TreeNode

from ...errors import one_line
from ...names import cut_mark, shown, shown_text
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import only_while_shown

#: a list longer than this, or holding objects/lists, folds into one child per item
INLINE_LIST = 8
#: a value text longer than this is cut in its label, with what was left out (``… (+1.2 kB)``;
#: copying gives the whole value)
LABEL_CHARS = 200


def value_text(v: Any) -> str:
    """A value as JSON text (strings unquoted), as copied to the clipboard."""
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(v)


def _inline(v: Any) -> bool:
    if isinstance(v, dict):
        return not v
    if isinstance(v, list):
        return len(v) <= INLINE_LIST and not any(isinstance(x, (dict, list)) for x in v)
    return True


class RawArgsTree(Tree[tuple[str, str, Any]]):
    """The args tree; each node's data is (dotted path, name, value)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_value", "Copy value", id="raw_args.copy_value"),
        Binding("C", "copy_name", "Copy name", id="raw_args.copy_name"),
    ]

    def add_value(self, parent: TreeNode, key: str, value: Any, path: str) -> None:
        """Add ``key: value`` under ``parent``; objects and long lists get folded children."""
        label = Text()
        label.append(one_line(shown(str(key))), style="bold")
        if _inline(value):
            text = value_text(value)
            label.append("  ")
            # cut before escaping: a 10 MB value costs what its first LABEL_CHARS characters cost
            label.append(one_line(text) if len(text) <= LABEL_CHARS else
                         one_line(text[:LABEL_CHARS - 1]) + cut_mark(text, LABEL_CHARS - 1))
            parent.add_leaf(label, data=(path, str(key), value))
            return
        size = f"  {{{len(value)} keys}}" if isinstance(value, dict) else f"  [{len(value)} items]"
        label.append(size, style="dim")
        node = parent.add(label, data=(path, str(key), value), expand=len(value) <= 32)
        items = value.items() if isinstance(value, dict) else ((f"[{i}]", x) for i, x in enumerate(value))
        for k, x in items:
            sub = f"{path}{k}" if isinstance(value, list) else f"{path}.{k}"
            self.add_value(node, k, x, sub)

    def _current(self) -> tuple[str, str, Any] | None:
        node = self.cursor_node
        return node.data if node is not None and node.data is not None else None

    def action_copy_value(self) -> None:
        cur = self._current()
        if cur is None:
            return
        text = value_text(cur[2])
        self.app.copy_to_clipboard(text)
        show_note(self.screen, f"copied the value of {shown(cur[0])} ({len(text):,} characters)")

    def action_copy_name(self) -> None:
        cur = self._current()
        if cur is None:
            return
        self.app.copy_to_clipboard(cur[1])
        show_note(self.screen, f"copied the name {shown(cur[1])!r} ({shown(cur[0])})")


class RawArgsScreen(ModalScreen[None]):
    """The raw-args panel of one event: title, the tree, the keys."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,a", "close", "Close", id="raw_args.close")]
    DEFAULT_CSS = """
    RawArgsScreen { align: center middle; }
    RawArgsScreen > #raw-args-box { width: 96%; height: 90%; border: round $accent; background: $panel; }
    RawArgsScreen RawArgsTree { height: 1fr; }
    RawArgsScreen #raw-args-title { height: 1; text-style: bold; }
    """

    def __init__(self, title: str, sections: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__()
        self.title_text = title
        self.sections = sections

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="raw-args-box"):
            yield Label(Text(one_line(shown_text(self.title_text))), id="raw-args-title")
            yield RawArgsTree(Text("arguments"), id="raw-args-tree")
        yield KeyBar()

    @only_while_shown  # keys typed ahead may have closed it already
    def on_mount(self) -> None:
        tree = self.query_one(RawArgsTree)
        tree.show_root = False
        tree.root.expand()
        for title, values in self.sections:
            label = Text(one_line(shown_text(title)), style="bold underline")
            section = tree.root.add(label, data=(title, title, values), expand=True)
            if not values:
                section.add_leaf(Text("(none)", style="dim"))
            for k, v in values.items():
                tree.add_value(section, k, v, f"{title.split(' ')[0]}.{k}")
        tree.focus()

    def action_close(self) -> None:
        self.dismiss(None)
