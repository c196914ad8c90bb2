"""A screen closed before it has mounted leaves the app running: the key that opens it is
followed at once by Esc (as a user typing ahead on a busy machine does).  Found by the
monkey walk on Textual 8.0 under load: ``s`` then ``escape`` made the summaries screen's
tabs validate a tab that was already gone (``ValueError: No Tab with id``), and its
on_mount queried tables that were being removed (``NoMatches`` on 8.2).

Each opener runs with ``push_screen`` wrapped so the new screen is popped right after it
is pushed, then again after 1, 2 and 5 turns of the event loop."""

from __future__ import annotations

import asyncio
import os

import pytest
from pilot import BERT, open_app, press
from shared_traces import SHARED

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen

JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
#: (key, what it opens) on the browser screen of a single trace
BROWSER_OPENERS = [("s", "summaries"), ("a", "every arg"), ("w", "warnings"), ("e", "export dialog"),
                   ("question_mark", "help"), ("ctrl+p", "command palette"), ("M", "memory"),
                   ("P", "critical path"), ("F", "findings")]
#: on a job: the rank picker and the cross-rank screen
JOB_OPENERS = [("r", "rank picker"), ("X", "cross-rank summary")]


def close_each_pushed_screen_after(app, turns: int, closed: list[str]) -> None:
    """Wrap ``app.push_screen``: the screen pushed is popped ``turns`` event-loop turns later
    (0: in the same call, before its first message)."""
    push = app.push_screen

    def push_then_pop(screen, *args, **kwargs):
        result = push(screen, *args, **kwargs)

        def pop() -> None:
            if app.screen is screen:
                app.pop_screen()
                closed.append(type(screen).__name__)

        if turns == 0:
            pop()
        else:
            async def later() -> None:
                for _ in range(turns):
                    await asyncio.sleep(0)
                pop()
            asyncio.get_running_loop().create_task(later())
        return result

    app.push_screen = push_then_pop


async def _open_and_close_each(app, pilot, openers) -> list[str]:
    screen = await open_app(app, pilot)
    await press(pilot, "j", "j")  # a CPU op, so every opener has something to show
    closed: list[str] = []
    for turns in (0, 1, 2, 5):
        close_each_pushed_screen_after(app, turns, closed)
        for key, what in openers:
            await press(pilot, key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app._exception is None, (key, what, turns, app._exception)
            assert app.screen is screen, (key, what, turns, app.screen)
        del app.push_screen  # the class's method again
    return closed


@pytest.mark.slow
async def test_browser_screens_closed_at_once():
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        closed = await _open_and_close_each(app, pilot, BROWSER_OPENERS)
        assert isinstance(app.screen, MainScreen)
        # every opener did push its screen, at each delay
        for name in ("SummariesScreen", "RawArgsScreen", "WarningsScreen", "ExportDialog", "HelpScreen",
                     "CommandPalette", "MemoryScreen", "CriticalPathScreen", "FindingsScreen"):
            assert closed.count(name) == 4, (name, closed)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_job_screens_closed_at_once():
    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        closed = await _open_and_close_each(app, pilot, JOB_OPENERS)
        for name in ("RankPicker", "JobSummaryScreen"):
            assert closed.count(name) == 4, (name, closed)


@pytest.mark.slow
@pytest.mark.parametrize("key, what", BROWSER_OPENERS, ids=[w for _, w in BROWSER_OPENERS])
async def test_a_screen_opened_as_the_app_ends(key, what):
    """A key that opens a screen, then the app's end without ``exit()``: Textual's shutdown
    (here ``run_test``'s end, as after the monkey walk's last key) removes the widgets of the
    screen just pushed while it mounts.  Its ``on_mount`` then found them gone: ``s`` raised
    ``ValueError: No Tab with id 'p-kernels'`` (the Textual 8.0 walk over the AMD hipGraph
    trace in a CI run), ``a``, ``M`` and ``P`` raised ``NoMatches`` (after 5 or 8 event-loop
    turns, Textual 8.0.0 and 8.2.8 alike).  Each delay is a fresh app; none may end in an error."""
    import asyncio

    for turns in (0, 5, 8):  # the delays that failed before the fix (5, 8), and none
        app = TraceApp(paths=[BERT], use_cache=False)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await open_app(app, pilot)
            await press(pilot, "j", "j")  # a CPU op, so every opener has something to show
            if key == "s":  # the tables computed and ready: the screen is pushed by the key itself
                await press(pilot, "s")
                await app.workers.wait_for_complete()
                await pilot.pause()
                await press(pilot, "escape")
            app.simulate_key(key)
            for _ in range(turns):
                await asyncio.sleep(0)
        assert app._exception is None, (key, what, turns, app._exception)


async def test_a_result_arriving_after_the_app_exited_is_dropped():
    """A worker's result or a message can reach a screen after the app has popped every
    screen (quitting): ``app.screen`` then raises ScreenStackError ("No screens on stack",
    seen twice in the diff monkey walk under load).  The guards answer "not shown" instead."""
    from textual.app import ScreenStackError

    from tracetui.ui.shown import is_shown, show_when_computed, top_screen
    from tracetui.ui.view.once import Once

    app = TraceApp([BERT])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_app(app, pilot)
        assert top_screen(app) is screen and is_shown(screen)
        # the stack as the app leaves it while quitting (Textual pops every screen before the
        # loop ends; a worker's call_from_thread can still run then)
        stack = app._screen_stack
        saved = stack[:]
        stack.clear()
        try:
            with pytest.raises(ScreenStackError):
                app.screen  # noqa: B018 -- what the guards must not do
            assert top_screen(app) is None and not is_shown(screen)
            # a value computed once and ready is shown at once, only while its screen is shown
            once = Once()
            once.future("sum", lambda: 1).result()
            shown: list[int] = []
            show_when_computed(screen, lambda: 1, shown.append, "test", once=once, name="sum")
            assert shown == []
        finally:
            stack[:] = saved
        assert top_screen(app) is screen
