"""What the app does differently while it follows a run (``tracetui follow DIR``) or a growing
driver-call trace (``tracetui FILE.jsonl --follow``): the app's load paths stay the same, these
hooks (a mixin of :class:`~tracetui.ui.app.TraceApp`) change where they end.

Following a run, the follow screen is the base screen; a cycle (Enter) and two cycles (``d``) go
through the app's load and diff paths, shown with ``browser_class`` / ``diff_class`` (Esc back to
the cycles); a load's outcome is shown only while its loading screen is (Esc cancels it back to
the cycles), and a failed load is a toast, never the error dialog that quits.  Following a file,
each load that shows it starts (once) or feeds the :class:`~.live_reload.LiveReload`.
"""

from __future__ import annotations

from typing import Any

from ..browser.loading_screen import LoadingScreen
from ..notify import show_note
from ..shown import top_screen


class FollowHooks:
    """The app's state and hooks for following (module docstring)."""

    def init_follow(self, follow: Any, live: float | None) -> None:
        #: the run followed (a FollowRequest), or None
        self.follow_request = follow
        #: the screen classes the load and diff paths show (None: the main screen, the diff browser)
        self.browser_class: type | None = None
        self.diff_class: type | None = None
        #: a growing file: the seconds between two looks, then its LiveReload
        self.live_interval = live
        self.live: Any = None

    def start_following(self) -> bool:
        """On mount: the follow screen, when following a run (True)."""
        if self.follow_request is None:
            return False
        from .follow_screen import FollowScreen

        self.push_screen(FollowScreen(self.follow_request))  # type: ignore[attr-defined]
        return True

    def follow_loading(self) -> bool:
        """May a load's outcome be shown?  Following a run: only while its loading screen is."""
        return self.follow_request is None or isinstance(top_screen(self), LoadingScreen)  # type: ignore[arg-type]

    def follow_cancel_load(self) -> bool:
        """Esc on the loading screen, following a run: the load stops, the cycles show (True)."""
        if self.follow_request is None:
            return False
        self.workers.cancel_group(self, "load")  # type: ignore[attr-defined]
        self.pop_screen()  # type: ignore[attr-defined]
        return True

    def follow_load_failed(self, message: str) -> bool:
        """A load failed while following (a run, or a file shown already): a toast over the cycles
        or the trace as last read (True)."""
        if self.follow_request is None and (self.live is None or getattr(self, "linked", None) is None):
            return False
        if isinstance(top_screen(self), LoadingScreen):  # type: ignore[arg-type]
            self.pop_screen()  # type: ignore[attr-defined]
        show_note(self, message, severity="error", timeout=10)  # type: ignore[arg-type]
        return True

    def follow_loaded(self) -> None:
        """A trace is shown: a growing file is followed from now on (or its reload is said)."""
        if self.live_interval is not None:
            from .live_reload import LiveReload

            LiveReload.loaded(self, self.live_interval)

    def stop_following(self) -> None:
        if self.live is not None:
            self.live.stop()
