"""Help (``?``) lists tracetui's own keys with their descriptions, never the scroll bindings
the panes inherit from Textual's ScrollableContainer/Widget ("Scroll Up", "Page Left", ...)."""

from __future__ import annotations

import pytest
from pilot import open_app, press
from shared_traces import kineto_path
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widget import Widget

from tracetui.ui.bindings import APP_BINDINGS, MAIN_BINDINGS
from tracetui.ui.browser.help_screen import HelpScreen, is_generic
from tracetui.ui.key_bar import applies
from tracetui.ui.timeline.trace_timeline import TraceTimeline
from tracetui.ui.tree.virtual_tree import VirtualTree


def _bindings(cls_bindings) -> list[Binding]:
    return list(Binding.make_bindings(cls_bindings))


def generic_descriptions() -> set[str]:
    """Descriptions of the bindings Textual's scrolling widgets define."""
    out = set()
    for cls in (ScrollableContainer, Widget):
        out |= {b.description for b in _bindings(cls.__dict__.get("BINDINGS", []))}
    return out


def tracetui_bindings() -> dict[str, str]:
    """Binding id -> description of every key of the browser screen and its panes."""
    return {ident: desc for ident, (_, desc) in tracetui_actions().items()}


def tracetui_actions() -> dict[str, tuple[str, str]]:
    """Binding id -> (action, description) of every key of the browser screen and its panes."""
    out = {}
    for group in (MAIN_BINDINGS, APP_BINDINGS, VirtualTree.BINDINGS, TraceTimeline.BINDINGS):
        for b in _bindings(group):
            assert b.id and b.description, b
            out[b.id] = (b.action, b.description)
    return out


def test_the_generic_set_is_what_textual_defines():
    generic = generic_descriptions()
    assert {"Scroll Up", "Scroll Home", "Page Left", "Page Right", "Page Up", "Page Down"} <= generic
    assert not generic & set(tracetui_bindings().values())  # no tracetui key reuses one ("Page up" differs)


@pytest.mark.slow
@pytest.mark.parametrize("focus", ["tree", "timeline"])
async def test_help_lists_tracetui_keys_and_no_textual_scroll_keys(focus):
    from tracetui.ui.app import TraceApp

    app = TraceApp(paths=[str(kineto_path("a100_cudagraph_nccl_rank0.json.gz"))], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        if focus == "timeline":
            await press(pilot, "t")
            assert screen.focused is screen.timeline
        else:
            assert screen.focused is screen.op_tree
        # the focused panes do inherit Textual's scroll keys (home, pgup, ctrl+pgup, ...)
        inherited = {b.description for bs in screen.focused._bindings.key_to_bindings.values() for b in bs}
        assert inherited & generic_descriptions() >= {"Page Left", "Page Right"}
        assert all(is_generic(screen.focused, b) for bs in screen.focused._bindings.key_to_bindings.values()
                   for b in bs if b.description in generic_descriptions())
        await press(pilot, "question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        # first the status line with every part (the line on screen leaves some out at 80 columns)
        assert help_screen.sections[0][0] == "Status line (every part)"
        rows = [row for _, section in help_screen.sections[1:] for row in section]
        # a row's description is "<binding description>" or "<description>: <tooltip>"
        shown = {desc.split(": ", 1)[0] for _, _, desc in rows}
        assert not shown & generic_descriptions(), sorted(shown & generic_descriptions())
        # every key that does something here is listed; the others (the rank keys on a single
        # trace, Filter without a search, ...) are not, as the key bar leaves them out (issue 45)
        missing = {ident for ident, (_, d) in tracetui_actions().items() if d not in shown}
        idle = {ident for ident, (action, _) in tracetui_actions().items() if not applies(screen, action)}
        assert missing == idle
        assert {"main.pick_rank", "main.collective_rank", "main.job_summary"} <= idle  # not a job
        text = help_screen.plain_text()
        for generic in generic_descriptions():
            assert generic not in text
        # each row has keys and a description
        assert all(keys and desc for _, keys, desc in rows)
        timeline_rows = [(keys, desc) for owner, keys, desc in rows if owner == "Timeline"]
        assert ("← / h", "Earlier: previous event on this lane (start-time order)") in timeline_rows
        assert ("↑ / k", "Lane up: the event of the lane above nearest in time") in timeline_rows
        await press(pilot, "escape")
        assert app.screen is screen
