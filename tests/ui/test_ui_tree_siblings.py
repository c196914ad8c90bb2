"""J / K (next / previous sibling) in the real browser: they move between siblings and,
at the end of the sibling list, say so in a toast instead of silently doing nothing.

cpu_only_small (read from the trace): four lanes are the roots, thread 1074 first and
"PyTorch Profiler" last; thread 1074 holds ProfilerStep#551 then four aten::empty ops.
"""

from __future__ import annotations

import pytest
from pilot import open_app, press
from shared_traces import kineto_path, load_shared_kineto

from tracetui.ui.app import TraceApp

SMALL = str(kineto_path("cpu_only_small.json.gz"))


def toasts(app) -> list[str]:
    from textual.widgets._toast import Toast

    return [str(toast.render()) for toast in app.screen.query(Toast)]


@pytest.mark.slow
async def test_sibling_keys_move_and_say_when_there_is_no_sibling():
    kt = load_shared_kineto("cpu_only_small.json.gz")
    lanes = [lane.node for lane in kt.lanes]
    assert len(lanes) == 4 and kt.name(lanes[0]).startswith("thread 1074")
    kids = [int(k) for k in kt.nopy_children(lanes[0])]
    assert [kt.name(k) for k in kids] == ["ProfilerStep#551"] + ["aten::empty"] * 4
    app = TraceApp(paths=[SMALL], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tree = screen.op_tree
        tree.focus()
        assert tree.cursor_node == lanes[0]
        await press(pilot, "K")
        assert tree.cursor_node == lanes[0]
        assert any("first sibling" in t for t in toasts(app)), toasts(app)
        await press(pilot, "J")
        assert tree.cursor_node == lanes[1]
        await press(pilot, "G")
        assert tree.cursor_node == lanes[-1]
        app.clear_notifications()
        await pilot.pause()
        await press(pilot, "J")
        assert tree.cursor_node == lanes[-1]
        assert any("last sibling" in t for t in toasts(app)), toasts(app)
        # inside a lane: the first child has no previous sibling, J walks the children
        tree.select_node(kids[0])
        await pilot.pause()
        assert tree.cursor_node == kids[0]
        app.clear_notifications()
        await pilot.pause()
        await press(pilot, "K")
        assert tree.cursor_node == kids[0]
        assert any("first sibling" in t for t in toasts(app)), toasts(app)
        await press(pilot, "J", "J", "J", "J")
        assert tree.cursor_node == kids[-1]
        await press(pilot, "J")
        assert tree.cursor_node == kids[-1]
        assert any("last sibling" in t for t in toasts(app)), toasts(app)
