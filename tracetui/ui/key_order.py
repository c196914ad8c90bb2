"""Keys typed in one burst reach the widget that the keys before them left focused.

Textual routes a key to the focused widget when the app receives it (``App.on_event``),
not once the keys before it have been handled.  Keys that arrive together (typed ahead
while the app is busy, pasted, or bunched by an SSH link) all went to the widget focused
before the first of them: ``/linear`` and Enter typed at once sent "linear" to the tree as
commands (``e`` opened the export dialog, Enter exported) instead of into the search field
that ``/`` opens (tests/ui/test_ui_typed_ahead.py).

A key's effects travel through several message queues (the focused widget, the ancestors
it bubbles through, the app, the widgets an action posts to), so :class:`KeyRouter` holds a
key while any queue of the app or of the screen's widgets has messages waiting, and routes
the held keys one at a time, in order, once they have all been empty for
:data:`IDLE_ROUNDS` rounds in a row.  A screen that is never idle (a timer firing
constantly) delays a key by at most :data:`MAX_ROUNDS` rounds, so the keyboard cannot
stall.  Keys that arrive while the app is idle (typing at a human pace) are routed at once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from textual import events
from textual.app import App

#: rounds of the app's queue a held key waits at most
MAX_ROUNDS = 50
#: idle rounds in a row before a held key is routed (a widget may be inside a handler,
#: with its queue empty, when one round looks)
IDLE_ROUNDS = 2


class KeyRouter:
    """Routes keys in order through ``route`` (the app's own routing of one key)."""

    def __init__(self, app: App, route: Callable[[events.Key], Awaitable[None]]) -> None:
        self.app = app
        self.route = route
        self.held: deque[events.Key] = deque()
        self.rounds = 0
        self.idle = 0
        self.scheduled = False

    def _idle(self) -> bool:
        """No message waits in the app's queue or in any queue of the shown screen."""
        app = self.app
        if app.message_queue_size or not app.screen_stack:
            return not app.screen_stack
        return not any(node.message_queue_size for node in app.screen.walk_children(with_self=True))

    async def key(self, event: events.Key) -> None:
        """A key as the app receives it from the terminal."""
        if self.held or not self._idle():
            self.held.append(event)
            self._schedule()
            return
        await self.route(event)

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.app.call_later(self._release)

    async def _release(self) -> None:
        self.scheduled = False
        if not self.held:
            return
        # yield: a callback re-posting itself would keep the app's queue busy, and the app's
        # task would never give the widgets' tasks a turn to handle their messages
        await asyncio.sleep(0)
        self.rounds += 1
        self.idle = self.idle + 1 if self._idle() else 0
        if self.idle < IDLE_ROUNDS and self.rounds < MAX_ROUNDS:
            self._schedule()
            return
        self.rounds = self.idle = 0
        await self.route(self.held.popleft())
        if self.held:
            self._schedule()
