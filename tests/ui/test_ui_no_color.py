"""``NO_COLOR=1`` (https://no-color.org): Textual then draws every line through its monochrome
filter, which failed on segments without a style (the tree's first frame: exit 3, "internal
error").  The browser opens and every screen a walk reaches draws, without colour."""

from __future__ import annotations

import pytest
from pilot import BERT, open_app, press, screen_text

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen

#: keys that reach the browser's screens (each closed again)
WALK = ("j", "j", "enter", "enter", "greater_than_sign", "less_than_sign", "s", "escape", "t", "t",
        "P", "escape", "i", "escape", "b", "escape", "F", "escape", "question_mark", "escape", "a", "escape")


@pytest.mark.slow
async def test_the_browser_draws_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")  # read (and removed) by Textual when the app is made
    app = TraceApp([BERT], use_cache=False)
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        main = await open_app(app, pilot)
        assert "2,298 events" in screen_text(app)  # the status line: the raw file's traceEvents
        for key in WALK:
            await press(pilot, key)
        assert app.screen is main and isinstance(main, MainScreen)
        assert "h100_bert_inference.json.gz" in screen_text(app)
