"""Loading runs in a worker that posts messages (progress, failure, done) and can be
cancelled: Esc on the loading screen stops the loader at its next progress report and
quits with status 130."""

from __future__ import annotations

import asyncio
import threading

from pilot import BERT, open_app
from shared_traces import kineto_path

from tracetui.errors import LoadCancelled
from tracetui.store import traces as cache
from tracetui.ui import app as app_module
from tracetui.ui.app import TraceApp
from tracetui.ui.browser.loading_screen import EXIT_LOAD_CANCELLED, LoadingScreen


async def _wait_for(predicate, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_escape_on_the_loading_screen_cancels_the_load(monkeypatch):
    reports, stopped = [], threading.Event()

    def slow_load(paths, *, use_cache=True, progress=None, deferred_writes=None):
        """A load that reports progress forever, as a huge trace would, until stopped."""
        try:
            for i in range(10_000):
                progress(f"decoding {i}", i / 10_000)
                reports.append(i)
                threading.Event().wait(0.005)
        except LoadCancelled:
            stopped.set()
            raise
        raise AssertionError("the load was never cancelled")

    monkeypatch.setattr(cache, "load_cached", slow_load)
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _wait_for(lambda: len(reports) > 20)
        assert isinstance(app.screen, LoadingScreen)
        step = str(app.screen.query_one("#loading-step").render())
        assert step.startswith("decoding ")  # progress messages reached the screen
        await pilot.press("escape")
        await _wait_for(stopped.is_set)
    assert app.load_cancelled
    assert app.return_code == EXIT_LOAD_CANCELLED
    assert len(reports) < 10_000


async def test_a_real_load_cancelled_from_the_loading_screen_stops(monkeypatch):
    """The biggest shared trace (216k events): Esc while it loads; the app ends without
    showing the browser and the worker ends cancelled."""
    from textual import events

    app = TraceApp(paths=[str(kineto_path("v100x2_nccl_216k.json.gz"))], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True):
        # Pilot's pause and press wait until the process is idle, i.e. until the load is
        # over: wait for the worker, then send Esc the way a terminal does
        await _wait_for(lambda: any(w.group == "load" for w in app.workers))
        await asyncio.sleep(0.2)
        assert isinstance(app.screen, LoadingScreen)
        key = events.Key("escape", None)
        key.set_sender(app)
        app._driver.send_message(key)
        worker = next(w for w in app.workers if w.group == "load")
        await _wait_for(lambda: worker.is_finished, timeout=60)
        assert worker.is_cancelled
    assert app.linked is None and app.return_code == EXIT_LOAD_CANCELLED


def test_run_app_returns_130_after_a_cancel(monkeypatch):
    def fake_run(self):
        self.load_cancelled = True

    monkeypatch.setattr(TraceApp, "run", fake_run)
    assert app_module.run_app([BERT]) == EXIT_LOAD_CANCELLED


async def test_progress_messages_then_the_browser(monkeypatch):
    app = TraceApp(paths=[BERT], use_cache=False)
    seen = []
    original = TraceApp.on_load_progress

    def spy(self, message):
        seen.append((message.message, message.fraction))
        original(self, message)

    monkeypatch.setattr(TraceApp, "on_load_progress", spy)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
    assert seen and seen[-1] == ("showing the browser", 1.0)
    assert all(0.0 <= f <= 1.0 for _, f in seen)
