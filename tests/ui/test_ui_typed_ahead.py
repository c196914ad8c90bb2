"""Keys typed ahead reach the widget the previous key focused: ``/linear`` and Enter typed in
one burst search for "linear", and an ``n`` typed right after goes to the tree.

Found in tmux on an idle machine: ``/aten::linear`` typed quickly after a search was
cancelled sent the first letters to the tree (as commands) and the rest into the search
field: Textual routes each key to the widget focused when the app receives it, before the
keys ahead of it have been handled (tracetui/ui/key_order.py).  Keys are posted here all at once
to the app's driver, as a terminal delivers a burst, without waiting between them as
``pilot.press`` does."""

from __future__ import annotations

import pytest
from pilot import BERT, open_app
from textual import events
from textual.keys import _character_to_key

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.search_bar import SearchBar


def _event(key: str) -> events.Key:
    if key in ("enter", "escape", "tab"):
        return events.Key(key, "\r" if key == "enter" else None)
    return events.Key(_character_to_key(key) if not key.isalnum() else key, key)


async def type_ahead(app, pilot, *keys: str) -> None:
    """Post ``keys`` to the app in one burst, then wait until they are handled."""
    for key in keys:
        event = _event(key)
        event.set_sender(app)
        app._driver.send_message(event)
    for _ in range(5):
        await pilot.pause()


@pytest.mark.slow
async def test_a_search_typed_in_one_burst_reaches_the_search_field(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # keys that reach the tree instead (e, Enter) export into the cwd
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        bar = screen.query_one(SearchBar)
        # a first search, cancelled, then the next one typed at once (the tmux walk)
        await type_ahead(app, pilot, "/", "x", "escape", "/", *"linear", "enter")
        assert screen.query_text == "linear", (screen.query_text, bar.value)
        assert not bar.display and screen.focused is screen.op_tree
        first = screen.current
        await type_ahead(app, pilot, "/", *"linear", "enter", "n")  # n: the next match, in the tree
        assert screen.query_text == "linear" and bar.value != "linearn"
        assert screen.current != first and screen.current in set(screen.matches.tolist())


async def test_keys_typed_after_t_go_to_the_timeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await type_ahead(app, pilot, "t")
        assert screen.focused is screen.timeline
        await type_ahead(app, pilot, "t", "/", *"gemm")  # back to the tree, then a search
        assert screen.focused is screen.query_one(SearchBar) and screen.query_one(SearchBar).value == "gemm"
