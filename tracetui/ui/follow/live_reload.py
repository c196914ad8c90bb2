"""A growing driver-call trace read again as it grows (``tracetui FILE.jsonl --follow``;
docs/follow.md): a worker looks at the file every ``interval`` seconds
(:class:`~tracetui.follow.growth.Growth`: changed, then still, ending with a whole line) and has
the app load it again (its load path, without the cache), which shows a new browser screen over
the longer trace: new calls in the tree, the phases of the timeline read again.  Only while the
browser screen itself is on top (a screen opened over it is not replaced); else at a later look.
"""

from __future__ import annotations

import threading
from typing import Any

from ... import units
from ...follow.growth import Growth
from ..notify import show_note
from ..shown import top_screen


class LiveReload:
    """Reads ``path`` again as it grows, for the app ``app`` (module docstring)."""

    def __init__(self, app: Any, path: str, interval: float) -> None:
        self.app = app
        self.growth = Growth(path)
        self.interval = interval
        self.reloads = 0  #: how many times the file was read again
        self._stop = threading.Event()
        self._said: str | None = None

    @classmethod
    def loaded(cls, app: Any, interval: float) -> None:
        """The app showed its trace: start following it (the first time), or say what the
        reload added."""
        live = app.live
        if live is None:
            live = app.live = cls(app, app.paths[0], interval)
            live.growth.read_at(None)
            # a daemon thread, not a Textual worker: it runs as long as the app (follow_screen.py says why)
            threading.Thread(target=live._watch, name="tracetui-live-reload", daemon=True).start()
        elif live._said:
            show_note(app, live._said, timeout=4)
            live._said = None

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            st, note = self.growth.poll()
            try:
                if note is not None:
                    self.app.call_from_thread(show_note, self.app, f"{self.growth.path}: {note}", severity="warning")
                if st is not None:
                    self.app.call_from_thread(self._reload, st)
            except RuntimeError:  # the app is no longer running
                return

    def _reload(self, st: tuple[int, int, int]) -> None:
        """On the UI thread: load the file again if the browser screen is on top (else a later look)."""
        from ..browser.main_screen import MainScreen

        if type(top_screen(self.app)) is not MainScreen:
            return
        grew = self.growth.grew(st)
        self.growth.read_at(st)
        self.reloads += 1
        self._said = (f"read again: {units.bytes_short(grew)} more" if grew >= 0
                      else "read again: the file was replaced")
        self.app.load(self.app.paths)
