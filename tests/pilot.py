"""What the browser tests share: driving the app through Textual's Pilot and reading the screen.

Every UI test imports these from here (never from another test file): open the app and wait
for the browser (:func:`open_app`) or the error dialog, press keys, search, read the screen
as text, read the toasts, and the snapshot sizes.  See CONTRIBUTING.md ("How to add a screen").
"""

from __future__ import annotations

import re

import pytest
from shared_traces import ET_DIR, kineto_path

from tracetui.ui.app import MainScreen
from tracetui.ui.browser.error_dialog import ErrorDialog

#: the trace most UI tests open: an H100 BERT inference step (61 GPU events)
BERT = str(kineto_path("h100_bert_inference.json.gz"))
#: an ET without its Kineto trace: the first ResNet conv input is 19,267,584 B (read from the file)
RESNET_ET = str(ET_DIR / "et_only" / "resnet_1gpu_schema_1.0.3.json.gz")
#: the snapshot sizes: the smallest terminal tracetui supports, and a common one
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def screen_text(app) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


def findings_shown(app) -> bool:
    """The browser screen shows its findings (the worker that computes them after the first
    paint is done and the status line counts them), or there is nothing to check."""
    screen = app.screen
    return not isinstance(screen, MainScreen) or screen.findings_shown


async def open_app(app, pilot, timeout: float = 120.0) -> MainScreen:
    """Wait until the load worker has shown the browser, with a pane focused, and its findings
    are counted (or the load failed), at most ``timeout`` s.

    The worker starts after the loading screen's first frame, so waiting for workers alone
    can return before it exists; the browser focuses its tree in on_mount, which Textual
    applies a few messages later (on a loaded machine after the first pause).  The findings
    worker starts after the browser's first paint; waiting for it keeps the status line
    (and so every screen text and snapshot) the same from run to run."""
    return await _shown(app, pilot, MainScreen, timeout)


async def open_diff(app, pilot, timeout: float = 120.0):
    """Wait until the diff browser (``TraceApp(..., diff=request)``) is shown with its tree
    focused, at most ``timeout`` s (as :func:`open_app` for the single-trace browser)."""
    from tracetui.ui.app import DiffScreen

    return await _shown(app, pilot, DiffScreen, timeout)


async def _shown(app, pilot, screen_class, timeout: float):
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if (isinstance(app.screen, screen_class) and app.screen.focused is not None and findings_shown(app)) \
                or app.load_failed:
            break
        await asyncio.sleep(0.05)
    assert isinstance(app.screen, screen_class), screen_text(app)
    return app.screen


def dialog_words(app) -> str:
    """The screen's words in reading order, one space between them: a dialog's message read
    across the lines it wraps on (frame and border characters dropped)."""
    words = re.findall(r"[\w./:'(),-]+", screen_text(app))
    return " ".join(words)


async def error_dialog_shown(app, pilot, timeout: float = 120.0, last_words: str = "Open another file") -> ErrorDialog:
    """Wait until the load worker has failed and its error dialog is painted (the worker starts
    after the loading screen's first frame: on a busy machine waiting for workers alone
    can return before it exists).  ``last_words``: the dialog's last line (the diff
    browser's dialog offers no other file: ``Quit (Esc)``)."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # shown and laid out: its last line of text is on screen (on a loaded machine the first
    # frames after the push can still show the loading screen under a dialog not yet laid out)
    while loop.time() < deadline and not (isinstance(app.screen, ErrorDialog)
                                          and last_words in screen_text(app)):
        await app.workers.wait_for_complete()
        await pilot.pause()
        await asyncio.sleep(0.02)
    assert isinstance(app.screen, ErrorDialog), screen_text(app)
    return app.screen


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
    await pilot.pause()


async def search(pilot, text: str) -> None:
    await press(pilot, "slash", *list(text), "enter")


async def loaded(pilot, timeout: float = 120.0) -> None:
    """Wait until the load worker finished and a browser (the main or the diff screen) is on
    screen, the main screen with its findings counted (snapshot tests)."""
    import asyncio

    from tracetui.ui.browser.panes_screen import PanesScreen

    app = pilot.app
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if (isinstance(app.screen, PanesScreen) and findings_shown(app)) or app.load_failed \
                or loop.time() > deadline:
            break
        await asyncio.sleep(0.02)


def toasts(app) -> list[str]:
    """The toasts on screen, rendered the way Textual paints them."""
    from textual.widgets._toast import Toast

    return [str(toast.render()) for toast in app.screen.query(Toast)]


async def open_by_key(app, pilot, key: str, screen_type: type):
    """Open the browser, press ``key`` and wait for the ``screen_type`` it opens (computed in
    a worker first: the summaries, the memory screen)."""
    await open_app(app, pilot)
    await press(pilot, key)
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, screen_type), screen_text(app)
    return app.screen


async def toasts_saying(app, pilot, *needles: str, timeout: float = 60.0) -> str:
    """The toasts' text once every one of ``needles`` shows in it (at most ``timeout`` s): a toast
    posted after the first paint (``call_after_refresh``) can come a few frames after the browser
    is ready on a loaded machine."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        text = " ".join(toasts(app))
        if all(n in text for n in needles) or loop.time() > deadline:
            return text
        await pilot.pause(0.05)


async def open_summaries(app, pilot):
    """Open the browser, press ``s`` and wait for the summaries screen."""
    from tracetui.ui.summaries.summaries_screen import SummariesScreen

    return await open_by_key(app, pilot, "s", SummariesScreen)


#: ET node 1450 of RESNET_ET: ``aten::_convolution``, input 0 float32 [32, 3, 224, 224]
CONV_ET_ID = 1450
CONV_BYTES = f"{32 * 3 * 224 * 224 * 4:,} B"  # float32 [32, 3, 224, 224]


def pane_lines(app, pane) -> list[str]:
    """The pane's rows as on screen (cropped to its region)."""
    r = pane.region
    rows = screen_text(app).split("\n")[r.y:r.y + r.height]
    return [row[r.x:r.x + r.width] for row in rows]


async def show_conv(app, pilot):
    screen = await open_app(app, pilot)
    et = screen.source.et
    pos = next(i for i in range(len(et.ids)) if int(et.ids[i]) == CONV_ET_ID)
    assert et.name(pos) == "aten::_convolution"
    screen.select(screen.source.et_base + pos)
    await pilot.pause()
    return screen


async def scroll_to_bytes(pilot, pane) -> None:
    row = next(i for i, s in enumerate(pane._lines) if CONV_BYTES in s.text)
    pane.scroll_to(y=max(0, row - 1), animate=False)
    await pilot.pause()
