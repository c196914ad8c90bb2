"""The guards against Textual defects (tracetui/ui/textual_guards.py) on the installed Textual."""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.widgets import OptionList

from tracetui.ui import textual_guards
from tracetui.ui.textual_guards import install_guards

install_guards()


async def test_a_timer_with_a_negative_delay_fires_instead_of_spinning():
    fired = []

    class Probe(App[None]):
        def on_mount(self) -> None:
            self.set_timer(-0.1, lambda: fired.append(True))

    app = Probe()
    before = len(textual_guards.clamped_timers)
    async with app.run_test() as pilot:
        for _ in range(50):
            if fired:
                break
            await asyncio.sleep(0.01)
        await pilot.pause()
    assert fired == [True]
    assert len(textual_guards.clamped_timers) == before + 1
    assert textual_guards.clamped_timers[-1][0] == -0.1


async def test_page_down_in_an_option_list_before_layout_does_nothing():
    class Probe(App[None]):
        CSS = "OptionList { display: none; }"  # never laid out: an empty line map

        def compose(self):
            yield OptionList("a", "b", "c", id="options")

    app = Probe()
    async with app.run_test() as pilot:
        options = app.query_one(OptionList)
        await pilot.pause()
        options.highlighted = 1
        options.action_page_down()  # raised KeyError in OptionList._move_page before the guard
        options.action_page_up()
        assert options.highlighted == 1


async def test_a_second_dismissal_result_is_ignored():
    from textual.screen import ResultCallback

    got = []
    future = asyncio.get_running_loop().create_future()
    callback = ResultCallback(None, got.append, future)
    callback("first")
    callback("second")  # the palette dismissed twice: Textual would raise InvalidStateError
    assert future.result() == "first" and got == []  # no requester: the callback is not scheduled


async def test_the_search_of_a_closed_command_palette_ends_quietly():
    from textual.command import CommandList, CommandPalette

    app = App()
    async with app.run_test() as pilot:
        app.action_command_palette()
        await pilot.pause()
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        search = CommandPalette._gather_commands.__wrapped__  # the worker's body, guarded
        await palette.query_one(CommandList).remove()
        # still the active screen but emptied (it is closing: seen in the Textual 8.0 monkey walk)
        await search(palette, "x")
        assert not palette.query(CommandList) and app.return_code is None
        app.pop_screen()
        await pilot.pause()
        await search(palette, "x")  # closed (esc typed ahead): the search ends, the app lives
