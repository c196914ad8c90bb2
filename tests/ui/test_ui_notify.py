"""A key held down does not stack toasts: the same note shown twice at once is one toast.

Found by the monkey walk on a driver-call trace: 60 presses of ``x`` (a collective on
another rank, which a single trace has not) stacked 60 identical toasts over the screen."""

from __future__ import annotations

from pilot import BERT, open_app, press, toasts

from tracetui.ui.app import TraceApp


async def test_the_same_note_twice_is_one_toast():
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, *"xxxxxxxx")
        await pilot.pause()
        shown = toasts(app)
        assert len(shown) == 1, shown
        assert "rank" in shown[0].lower(), shown
        app.clear_notifications()
        await pilot.pause()
        await press(pilot, "x")  # once the toast is gone, the note shows again
        await pilot.pause()
        assert len(toasts(app)) == 1
