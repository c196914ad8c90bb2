"""The key bar at the bottom of a screen: the keys that work now, drawn as one line.

It replaces Textual's ``Footer``, which mounts one widget per key and mounts them all again
whenever the bindings change (each focus change, each screen shown): on the browser screen
that was most of the cost of ``t`` (70-120 ms of CPU on a 2-core machine).  This bar is one
widget that draws one line of text from the screen's active bindings (focused widget, its
ancestors, the screen, the app), in binding order, keys of one action joined.

A screen may say which keys apply to what it shows with ``key_applies(action) -> bool``:
the browser screen leaves out ``>``/``<`` on a trace without GPU events and ``.`` on one
without python rows (the keys stay bound: pressed, they say why they do nothing).  Help asks
the same (:func:`applies`), so the key bar and help never offer a key that does nothing there.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget


def applies(screen: object, action: str) -> bool:
    """Does the key of ``action`` do something on ``screen`` now (its ``key_applies``; a screen
    without one: every key)?  The one test of the key bar and of help."""
    key_applies = getattr(screen, "key_applies", None)
    return key_applies is None or bool(key_applies(action))


class KeyBar(Widget):
    """One line of ``key description`` pairs for the screen's active, shown bindings."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-bar--key", "key-bar--description"}
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; width: 1fr; background: $footer-background; color: $footer-foreground; }
    KeyBar > .key-bar--key { color: $footer-key-foreground; background: $footer-key-background; text-style: bold; }
    KeyBar > .key-bar--description { color: $footer-description-foreground;
                                     background: $footer-description-background; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: object) -> None:
        self.refresh()

    def entries(self) -> list[tuple[str, str, bool]]:
        """(keys, description, enabled) of each action shown, in binding order."""
        screen = self.screen
        out: dict[str, tuple[list[str], str, bool]] = {}
        for active in screen.active_bindings.values():
            b = active.binding
            if not b.show or not applies(screen, b.action):
                continue
            keys, desc, enabled = out.setdefault(b.action, ([], b.description, active.enabled))
            display = self.app.get_key_display(b)
            if display not in keys:
                keys.append(display)
        return [(keys[0], desc, enabled) for keys, desc, enabled in out.values()]

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        desc_style = self.get_component_rich_style("key-bar--description")
        dim = Style(dim=True)
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        for keys, desc, enabled in self.entries():
            line.append(f" {keys} ", style=key_style if enabled else key_style + dim)
            line.append(f"{desc} ", style=desc_style if enabled else desc_style + dim)
        palette = self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING
        if palette:  # the palette's key at the right end, as Textual's footer shows it, when there is room
            tail = Text.assemble((f" {self.app.get_key_display(Binding(palette, ''))} ", key_style),
                                 ("palette ", desc_style))
            gap = self.size.width - line.cell_len - tail.cell_len
            if gap >= 0:
                line.append(" " * gap)
                line.append_text(tail)
        return line
