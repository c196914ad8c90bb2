"""The one way the browser shows a notification (a toast).

Notification text often quotes trace data (op names, search strings, file paths), which
may contain ``[`` and ``]``.  Textual parses a toast's message as content markup unless
told otherwise, and its ``notify`` takes only ``str``: handing it a ``rich.text.Text``
fails inside the toast's render on Textual 8.2 (``Content.from_markup`` calls
``str.translate``).  :func:`show_note` therefore always passes a plain ``str`` with
``markup=False``, whatever it is given, so trace text is shown literally on every
supported Textual.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.dom import DOMNode

from ..errors import one_line

Severity = Literal["information", "warning", "error"]


def plain(message: str | Text) -> str:
    """The characters of ``message`` (a ``Text``'s styles are dropped), control characters
    escaped (:func:`tracetui.errors.one_line`: notes quote names and paths)."""
    return one_line(message.plain if isinstance(message, Text) else str(message))


def show_note(node: DOMNode, message: str | Text, *, title: str | Text = "",
              severity: Severity = "information", timeout: float | None = None) -> None:
    """Show ``message`` as a toast from ``node``'s app, literally (never as markup).

    Safe to call from the UI thread only; from a worker use ``app.call_from_thread``.
    """
    app = node.app
    text, head = plain(message), plain(title)
    if _on_screen(app, text, head, severity):
        return
    app.notify(text, title=head, severity=severity, timeout=timeout, markup=False)


def _on_screen(app, text: str, title: str, severity: Severity) -> bool:
    """Is the same note already shown?  A key held down (or pressed again before its toast
    expires) must not stack dozens of identical toasts over the screen.  Reads the app's
    live notifications (a private attribute of every supported Textual, 8.0-8.2); when it is
    missing, every note is shown."""
    shown = getattr(app, "_notifications", None)
    if shown is None:
        return False
    try:
        return any(n.message == text and n.title == title and n.severity == severity for n in shown)
    except (AttributeError, TypeError):
        return False
