"""The help screen, generated from the live key bindings (never a hand-kept list): only the
keys that do something on the screen shown (:func:`~tracetui.ui.key_bar.applies`, as the key
bar asks; the rank keys only in a job, Enter on a query result only with an event column).

Bindings a pane inherits from Textual's widgets (``ScrollableContainer``'s "Scroll Up",
"Page Left", ...) are left out: the panes define their own keys, and a generic scroll
binding that is still reachable says nothing about the trace.  Textual's screen and
application keys (tab focus, copy, ctrl+q, the command palette) stay: they work here.
"""

from __future__ import annotations

import textwrap
from functools import lru_cache
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.geometry import Size
from textual.screen import ModalScreen, Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from ..key_bar import applies
from ..view.status_parts import status_whole

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
        if is_generic(active.node, binding) or not applies(screen, binding.action):
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
            if is_generic(node, binding) or not applies(node.screen, binding.action):
                continue
            desc = _describe(binding.description or binding.action, binding.tooltip)
            display = app.get_key_display(binding)
            keys = out.setdefault((binding.action, desc), [])
            if display not in keys:
                keys.append(display)
    return [(_owner_title(node), " / ".join(keys), desc) for (action, desc), keys in out.items()]


def status_help(screen: Screen) -> tuple[str, list[tuple[str, str, str]]] | None:
    """Help's first section on a browser screen: its status line with every part at full length
    (``+2 more (?)`` on the line says some are left out at this width); None elsewhere."""
    parts = getattr(screen, "status_parts", None)
    if parts is None:
        return None
    try:
        whole = status_whole(parts()).plain
    except Exception:  # noqa: BLE001 -- a screen being torn down: help without it
        return None
    return ("Status line (every part)", [("Status", "", whole)])


def _describe(description: str, tooltip: str) -> str:
    return f"{description}: {tooltip}" if tooltip and tooltip != description else description


class HelpLines(ScrollView, can_focus=True):
    """The help text as lines, laid out for the width shown (the description column wraps
    under itself) and drawn only where visible: a table of every binding costs what one
    screenful costs.  Scrolls with the arrows, PgUp/PgDn, Home/End (Textual's own keys)."""

    def __init__(self, sections: list[tuple[str, list[tuple[str, str, str]]]]) -> None:
        super().__init__()
        self.sections = sections
        self._lines: list[Text] = []
        self._width = -1

    def lines_for(self, width: int) -> list[Text]:
        """Every line of the help at ``width`` cells: a title per section, then per binding
        ``where  keys  does``, ``does`` wrapped under itself."""
        if width == self._width:
            return self._lines
        where_w = 12
        keys_w = min(max([len(k) for _, rows in self.sections for _, k, _ in rows] or [4]), 24)
        does_w = max(width - where_w - keys_w - 4, 20)
        out = [Text("Keys  (Esc closes; ctrl+p opens the command palette)", style="bold")]
        for title, rows in self.sections:
            out += [Text(""), Text(title, style="bold")]
            for owner, keys, desc in rows:
                wrapped = textwrap.wrap(desc, does_w) or [""]
                head = Text(" ")
                head.append(owner[:where_w].ljust(where_w), style="dim")
                head.append(" ")
                head.append(keys.ljust(keys_w), style="bold")
                head.append(" ")
                head.append(wrapped[0])
                out.append(head)
                out += [Text(" " * (where_w + keys_w + 3) + more) for more in wrapped[1:]]
        self._lines, self._width = out, width
        self.virtual_size = Size(width, len(out))
        return out

    def on_resize(self, event: events.Resize) -> None:
        self.lines_for(self.scrollable_content_region.width)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        lines = self.lines_for(width)
        i = y + self.scroll_offset.y
        if not 0 <= i < len(lines):
            return Strip.blank(width, self.rich_style)
        segments = list(lines[i].render(self.app.console))
        return Strip(segments).crop_extend(0, width, self.rich_style).apply_style(self.rich_style)

    def plain_text(self) -> str:
        return "\n".join(line.plain for line in self.lines_for(max(self._width, 80)))


class HelpScreen(ModalScreen[None]):
    """Every key binding, from the live bindings at the moment help was opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close help", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > HelpLines { width: 90; max-width: 100%; height: 90%; border: round $primary;
                             background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: list[tuple[str, list[tuple[str, str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        yield HelpLines(self.sections)

    def action_close(self) -> None:
        self.dismiss(None)

    def plain_text(self) -> str:
        return "\n".join(f"{o} {k} {d}" for _, rows in self.sections for o, k, d in rows)
