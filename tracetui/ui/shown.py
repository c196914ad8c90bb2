"""Whether a screen is still the one shown, and a decorator for the steps that need it.

Keys typed ahead can close a screen before its ``on_mount`` (or a step deferred with
``call_after_refresh``) runs: ``s`` then ``Esc``, ``a`` then ``Esc`` on a busy machine.
By then its widgets are being removed, so a ``query_one`` for them raises ``NoMatches``
and the error ends the app.  A closed screen has nothing left to fill or focus, so those
steps return instead (tests/ui/test_ui_screen_closed_at_once.py closes every screen the
moment it is pushed).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any, TypeVar

from textual.app import App, ScreenStackError, UnknownModeError
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.worker import get_current_worker

from .view.once import Once

Step = TypeVar("Step", bound=Callable[..., Any])
Value = TypeVar("Value")


def top_screen(app: App) -> Screen | None:
    """The screen on top of ``app``'s stack; None once the stack is empty (the app exiting: a
    worker's result or a message can still arrive then, and ``app.screen`` raises
    ScreenStackError)."""
    try:
        return app.screen
    except (ScreenStackError, UnknownModeError):
        return None


def is_shown(screen: Screen) -> bool:
    """True while ``screen`` is mounted and on top of the app's screen stack."""
    return screen.is_attached and top_screen(screen.app) is screen


def winding_down(app: App) -> bool:
    """True once ``app`` is quitting: ``TraceApp.exit`` was called (its ``exiting``), or
    Textual shuts the app down without it (``App._shutdown`` clears ``_running`` before it
    removes the screens: the end of ``run_test``, after the monkey walk's last key).  A screen
    pushed just before then mounts while its widgets are being removed."""
    return bool(getattr(app, "exiting", False)) or not getattr(app, "_running", True)


def only_while_shown(step: Step) -> Step:
    """Run the screen method ``step`` only while its screen is shown; else return None."""

    @wraps(step)
    def run(self: Screen, *args: Any, **kwargs: Any) -> Any:
        if not is_shown(self):
            return None
        try:
            return step(self, *args, **kwargs)
        except NoMatches:
            # still on top but its widgets already gone (the app quitting under a burst of keys:
            # the Textual 8.0 monkey walk on a CPU trace, or ending right after a key opened a
            # screen); a missing widget of a live screen is a bug
            if self.children and not winding_down(self.app):
                raise
            return None

    return run  # type: ignore[return-value]


def show_when_computed(screen: Screen, compute: Callable[[], Value], show: Callable[[Value], None],
                       group: str, *, once: Once | None = None, name: str = "") -> None:
    """Run ``compute`` in a worker thread (``group``: a second start cancels the first), then
    ``show(value)`` on the UI thread, only while ``screen`` is still the one shown (the user
    may have left it meanwhile, or the app may be closing).  With ``once``
    (:class:`~tracetui.ui.view.once.Once`) the value is computed once under ``name``: shown at
    once when it is ready, else when the computation already running (the background one)
    or this call's ends."""
    app = screen.app

    def done(value: Value) -> None:
        if top_screen(app) is screen:
            show(value)

    if once is not None:
        ready = once.ready(name)
        if ready is not None:
            done(ready)
            return
        compute = partial(lambda run: once.future(name, run).result(), compute)

    def work() -> None:
        value = compute()
        if get_current_worker().is_cancelled:  # the app is closing, or the key was pressed again
            return
        try:
            app.call_from_thread(done, value)
        except RuntimeError:  # the app stopped meanwhile
            pass

    screen.run_worker(work, thread=True, exclusive=True, group=group, name=group)
