"""The crash paths found by walking the browser on real traces with the released Textual:
each used to end in a traceback (a ``rich.text.Text`` handed to ``notify``, which Textual 8.2
renders with ``Content.from_markup``).  Every test drives real keys and lets the toast render."""

from __future__ import annotations

import os

import pytest
from pilot import BERT, open_app, press, search, toasts
from shared_traces import ET_DIR

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.export_dialog import ExportDialog

LINEAR = ET_DIR / "param_linear_cuda_pair"


@pytest.mark.slow
async def test_back_from_a_kernel_of_an_et_pair_names_the_et_op():
    app = TraceApp(use_cache=False, paths=[str(LINEAR / "kineto.json.gz"), str(LINEAR / "et.json.gz")])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::mm")
        op = screen.current
        await press(pilot, "greater_than_sign", "less_than_sign")
        await pilot.pause(0.1)
        assert screen.current == op
        assert any("launching op: aten::mm" in m and "ET" in m for m in toasts(app)), toasts(app)


@pytest.mark.slow
async def test_search_without_match_and_invalid_regex_warn():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        # each toast is read right after its search: a toast lasts 5 s, and typing the next two
        # searches took longer than that on a loaded machine (the first toast had gone)
        await search(pilot, "zzzz")
        await pilot.pause(0.1)
        assert any("no match for 'zzzz'" in m for m in toasts(app)), toasts(app)
        await search(pilot, "/aten::(mm/")
        await pilot.pause(0.1)
        assert any("aten::(mm" in m for m in toasts(app)), toasts(app)
        await search(pilot, "[bold]x[/bold]")
        await pilot.pause(0.1)
        notes = toasts(app)
        assert any("no match for '[bold]x[/bold]'" in m for m in notes), notes  # shown literally, not as markup


@pytest.mark.slow
async def test_jump_down_from_an_op_without_gpu_work_warns():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::empty")
        node = screen.current
        assert not screen.source.gpu_events(node).size
        await press(pilot, "greater_than_sign")
        await pilot.pause(0.1)
        assert screen.current == node
        assert any("no GPU work under aten::empty" in m for m in toasts(app)), toasts(app)


@pytest.mark.slow
async def test_export_writes_the_file_and_the_app_lives_on(tmp_path):
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        await press(pilot, "e")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        target = tmp_path / "addmm.md"
        dialog.query_one("#export-path").value = str(target)
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        assert target.exists() and "aten::addmm" in target.read_text()
        assert any(str(target) in m for m in toasts(app)), toasts(app)
        assert app.screen is screen
        await press(pilot, "j")  # still alive
        assert os.path.getsize(target) > 0


@pytest.mark.slow
def test_every_notification_goes_through_show_note():
    """``show_note`` is the one path to a toast: no other module calls Textual's ``notify``."""
    import ast
    from pathlib import Path

    import tracetui

    offenders = []
    for path in Path(tracetui.__file__).parent.rglob("*.py"):
        if path.name == "notify.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "notify":
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders
