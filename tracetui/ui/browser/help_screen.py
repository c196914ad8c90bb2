"""The help screen, generated from the live key bindings (never a hand-kept list).

Bindings a pane inherits from Textual's widgets (``ScrollableContainer``'s "Scroll Up",
"Page Left", ...) are left out: the panes define their own keys, and a generic scroll
binding that is still reachable says nothing about the trace.  Textual's screen and
application keys (tab focus, copy, ctrl+q, the command palette) stay: they work here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Static

#: Friendly names of the binding owners shown in help (class name -> title).
HELP_GROUPS = {
    "VirtualTree": "Op tree",
    "TraceTree": "Op tree",
    "TraceTimeline": "Timeline",
    "DetailPane": "Detail pane",
    "MainScreen": "Browser",
    "TraceApp": "Application",
    "SearchBar": "Search input",
}


#: Help lists the browser's own keys first, the application's last.
HELP_ORDER = ("Browser", "Op tree", "Timeline", "Detail pane", "Search input", "Application")


def _owner_title(node: DOMNode) -> str:
    for cls in type(node).__mro__:
        if cls.__name__ in HELP_GROUPS:
            return HELP_GROUPS[cls.__name__]
    return type(node).__name__


@lru_cache(maxsize=None)
def _inherited_widget_bindings(cls: type) -> frozenset[tuple[str, str, str]]:
    """(key, action, description) of the bindings ``cls`` (a widget, not a screen) gets
    from Textual's own classes and does not define again itself."""
    if not issubclass(cls, Widget) or issubclass(cls, Screen):
        return frozenset()
    textual, own = set(), set()
    for base in cls.__mro__:
        if "BINDINGS" not in base.__dict__:
            continue
        keys = {(b.key, b.action, b.description) for b in Binding.make_bindings(base.__dict__["BINDINGS"])}
        (textual if base.__module__.split(".")[0] == "textual" else own).update(keys)
    return frozenset(textual - own)


def is_generic(node: DOMNode, binding: Binding) -> bool:
    """True for a binding ``node`` (a widget) inherits from a Textual widget class."""
    return (binding.key, binding.action, binding.description) in _inherited_widget_bindings(type(node))


def live_bindings(screen: Screen) -> list[tuple[str, str, str]]:
    """(owner, keys, description) for every binding active on ``screen`` right now: the
    focused widget, its ancestors, the screen and the app (``Screen.active_bindings``),
    keys of one action joined (``down / j``), in binding order; no generic Textual widget
    bindings (:func:`is_generic`)."""
    app = screen.app
    grouped: dict[tuple[int, str, str], list[str]] = {}
    owners: dict[tuple[int, str, str], str] = {}
    tips: dict[tuple[int, str, str], str] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if is_generic(active.node, binding):
            continue
        desc = binding.description or binding.action
        ident = (id(active.node), binding.action, desc)
        display = app.get_key_display(binding)
        keys = grouped.setdefault(ident, [])
        if display not in keys:
            keys.append(display)
        owners[ident] = _owner_title(active.node)
        tips[ident] = binding.tooltip or active.tooltip
    rows = [(owners[i], " / ".join(keys), _describe(i[2], tips.get(i, ""))) for i, keys in grouped.items()]
    order = {title: n for n, title in enumerate(HELP_ORDER)}
    return sorted(rows, key=lambda r: order.get(r[0], len(order)))


def widget_bindings(node: DOMNode) -> list[tuple[str, str, str]]:
    """(owner, keys, description) for the bindings a widget defines itself (used for the
    panes that are not focused: they are live once focused); no generic Textual widget
    bindings (:func:`is_generic`)."""
    app = node.app
    out: dict[tuple[str, str], list[str]] = {}
    for bindings in node._bindings.key_to_bindings.values():
        for binding in bindings:
            if is_generic(node, binding):
                continue
            desc = _describe(binding.description or binding.action, binding.tooltip)
            display = app.get_key_display(binding)
            keys = out.setdefault((binding.action, desc), [])
            if display not in keys:
                keys.append(display)
    return [(_owner_title(node), " / ".join(keys), desc) for (action, desc), keys in out.items()]


def _describe(description: str, tooltip: str) -> str:
    return f"{description}: {tooltip}" if tooltip and tooltip != description else description


class HelpScreen(ModalScreen[None]):
    """Every key binding, from the live bindings at the moment help was opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close help", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: 90%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: list[tuple[str, list[tuple[str, str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("Keys  (Esc closes; ctrl+p opens the command palette)", style="bold"))
            for title, rows in self.sections:
                table = Table(box=None, padding=(0, 1), show_header=False, expand=True, title=Text(title, style="bold"),
                              title_justify="left")
                table.add_column("where", style="dim", no_wrap=True, width=12)
                table.add_column("keys", style="bold", no_wrap=True)
                table.add_column("does", ratio=1)
                for owner, keys, desc in rows:
                    table.add_row(Text(owner), Text(keys), Text(desc))
                yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)

    def plain_text(self) -> str:
        return "\n".join(f"{o} {k} {d}" for _, rows in self.sections for o, k, d in rows)
