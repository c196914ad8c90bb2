"""Open a screen with a value computed once (:class:`~tracetui.ui.view.once.Once`): at once
when it is ready, else when the worker computing it (the background one, or this key's own)
is done, and only if the screen that asked is still the one shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen
from textual.worker import get_current_worker

from .view.once import Once


def when_ready(screen: Screen, once: Once, name: str, compute: Callable[[], Any], show: Callable[[Any], None],
               *, group: str) -> None:
    """Call ``show(value)`` on the UI thread with ``name``'s value: now if it was computed,
    else from a worker thread of ``screen`` (group ``group``: a second key press replaces the
    first's wait) once ``compute`` has run here or elsewhere.  Nothing happens when the app
    has moved to another screen meanwhile."""
    app = screen.app

    def shown(value: Any) -> None:
        if app.screen is screen:
            show(value)

    value = once.ready(name)
    if value is not None:
        shown(value)
        return

    def wait() -> None:
        value = once.future(name, compute).result()
        if get_current_worker().is_cancelled:  # the app is closing, or the key was pressed again
            return
        try:
            app.call_from_thread(shown, value)
        except RuntimeError:  # the app stopped meanwhile
            pass

    screen.run_worker(wait, thread=True, exclusive=True, group=group, name=group)
