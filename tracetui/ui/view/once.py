"""What a screen needs, computed once per trace (and per job), on whichever thread asks first.

The browser screen starts a background worker once its tree is painted that asks for the
summaries' tables (and, in a job, the cross-rank tables); a key that opens the screen asks for
the same value: done, it opens at once; still being computed, it waits for that computation
(never a second one); not started (background work off: ``TRACETUI_BACKGROUND=0``), the
key's own worker computes it.  Textual-free: values are plain futures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class Once:
    """Futures by name: :meth:`future` computes a name's value the first time it is asked for
    (on the asking thread) and hands every later caller the same future."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}

    def future(self, name: str, compute: Callable[[], Any]) -> Future:
        """The future of ``name``; the first caller runs ``compute`` (an exception is kept in
        the future and raised by its ``result()``, for every caller)."""
        with self._lock:
            fut = self._futures.get(name)
            if fut is not None:
                return fut
            fut = self._futures[name] = Future()
        try:
            fut.set_result(compute())
        except BaseException as exc:  # noqa: BLE001 -- kept for the callers; KeyboardInterrupt too
            fut.set_exception(exc)
        return fut

    def ready(self, name: str) -> Any | None:
        """``name``'s value when it has been computed without error, else None (not asked yet,
        still being computed, or failed)."""
        fut = self._futures.get(name)
        if fut is None or not fut.done() or fut.exception() is not None:
            return None
        return fut.result()
