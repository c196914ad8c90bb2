"""The user's ``config.toml`` (tracetui/config.py): a keymap from binding ids to keys, as the
``posting`` app has, and a theme.  Real keys on a real trace: the remapped key jumps, the old
one no longer does; mistakes are said, never ignored."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pilot import BERT, open_app, press, screen_text, search, toasts, toasts_saying

from tracetui.config import Settings, load_settings
from tracetui.errors import TraceFormatError
from tracetui.kineto.kinds import GPU_WORK_KINDS
from tracetui.ui.app import TraceApp, binding_ids


def write_config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    monkeypatch.setenv("TRACETUI_CONFIG", str(path))
    return path


async def test_keymap_moves_the_jumps_to_other_keys_and_the_theme_applies(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, 'theme = "textual-light"\n[keymap]\n'
                                        '"main.jump_gpu" = "ctrl+g"\n"main.jump_op" = "ctrl+b"\n')
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        assert app.theme == "textual-light"
        kt = screen.source.kt
        await search(pilot, "aten::addmm")
        op = screen.current
        await press(pilot, "greater_than_sign")  # ">": no longer bound
        assert screen.current == op
        await press(pilot, "ctrl+g")  # the jump, on its new key
        kernel = screen.current
        assert kernel != op and int(kt.kind[kernel]) in {int(k) for k in GPU_WORK_KINDS}
        assert int(kt.cpu_op_of[kernel]) == op
        await press(pilot, "ctrl+b")
        assert screen.current == op
        await press(pilot, "question_mark")  # help lists the live keys: the new ones
        shown = screen_text(app)
        assert "^g" in shown or "ctrl+g" in shown, shown
        assert not toasts(app)  # nothing to warn about


async def test_an_unknown_binding_id_or_theme_is_said_and_the_rest_applies(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, 'theme = "no-such-theme"\n[keymap]\n'
                                        '"main.jump_gpux" = "ctrl+g"\n"main.jump_op" = "ctrl+b"\n')
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        notes = await toasts_saying(app, pilot, "unknown theme 'no-such-theme'", "'main.jump_gpux'")
        assert "unknown theme 'no-such-theme'" in notes and "'main.jump_gpux'" in notes
        await search(pilot, "aten::addmm")
        op = screen.current
        await press(pilot, "greater_than_sign", "ctrl+b")  # > still jumps; ctrl+b goes back
        assert screen.current == op


def test_settings_file_errors_are_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "config.toml"
    for text, problem in (("theme = ", "not valid TOML"), ("colour = 'red'", "unknown setting 'colour'"),
                          ("[keymap]\n'main.search' = 3", "keymap 'main.search'")):
        bad.write_text(text)
        with pytest.raises(TraceFormatError) as err:
            load_settings(bad)
        assert str(err.value).startswith(f"{bad}:") and problem in str(err.value) and "\n" not in str(err.value)
    assert load_settings() == Settings()  # no file (the tests have no user config): the defaults


def test_the_cli_refuses_a_bad_settings_file_in_one_line(tmp_path):
    bad = tmp_path / "config.toml"
    bad.write_text("theme = ")
    env = {"TRACETUI_CONFIG": str(bad), "TRACETUI_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "tracetui", BERT], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith(f"tracetui: {bad}: not valid TOML") and done.stderr.count("\n") == 1


def test_every_binding_has_an_id_a_keymap_can_name():
    ids = binding_ids()
    assert {"main.jump_gpu", "vtree.down", "timeline.next", "summaries.sort", "job_summary.close"} <= ids
