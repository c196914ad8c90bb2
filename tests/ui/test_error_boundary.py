"""The one error boundary (tracetui/crash.py): a bug in the CLI or the browser ends in one
line naming what failed and the saved traceback file, with exit status 3 — never a raw
traceback on the terminal."""

from __future__ import annotations

import pytest
from pilot import BERT, open_app, press

from tracetui import cli
from tracetui.crash import EXIT_INTERNAL_ERROR
from tracetui.ui import app as app_module
from tracetui.ui.app import MainScreen, TraceApp


def _boom(*args, **kwargs):
    raise RuntimeError("boom\nsecond line")


@pytest.mark.parametrize("command, target", [
    (["info"], "tracetui.cli.info.print_info"),
    (["tree", "--depth", "1"], "tracetui.cli.tree_text.print_tree_command"),
    (["summary", "--no-cache"], "tracetui.cli.summary.summary_command"),
])
def test_cli_bug_is_one_line_with_a_saved_traceback(command, target, monkeypatch, capsys):
    monkeypatch.setattr(target, _boom)
    rc = cli.main([command[0], BERT, *command[1:]])
    out, err = capsys.readouterr()
    assert rc == EXIT_INTERNAL_ERROR == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"tracetui: internal error while running 'tracetui {command[0]}' on "
                           "h100_bert_inference.json.gz: RuntimeError: boom (traceback saved to ")
    path = line.rsplit("traceback saved to ", 1)[1].rstrip(")")
    saved = open(path, encoding="utf-8").read()
    assert "Traceback (most recent call last)" in saved and "RuntimeError: boom" in saved
    assert "Traceback" not in err


def test_bad_input_stays_exit_2_without_a_crash_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tracetui: {bad}") and "traceback" not in err


async def test_browser_bug_is_saved_and_reported_not_printed(monkeypatch):
    monkeypatch.setattr(MainScreen, "action_toggle_detail", _boom)
    app = TraceApp(paths=[BERT], use_cache=False)
    with pytest.raises(RuntimeError, match="boom"):  # run_test re-raises it for tests
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await open_app(app, pilot)
            await press(pilot, "d")
    assert app.crash is not None
    assert app.crash.line().startswith("tracetui: internal error while browsing (MainScreen) "
                                       "h100_bert_inference.json.gz: RuntimeError: boom (traceback saved to ")
    assert "RuntimeError: boom" in open(app.crash.traceback_path, encoding="utf-8").read()
    assert app.return_code == EXIT_INTERNAL_ERROR
    assert not app._exit_renderables  # nothing left for Textual to print on the terminal


def test_run_app_prints_the_report_and_returns_3(monkeypatch, capsys):
    from tracetui.crash import CrashReport

    def fake_run(self):
        self.crash = CrashReport("internal error while browsing (MainScreen) x.json: KeyError: 3", "/tmp/crash.txt")

    monkeypatch.setattr(TraceApp, "run", fake_run)
    assert app_module.run_app([BERT]) == EXIT_INTERNAL_ERROR
    assert capsys.readouterr().err == ("tracetui: internal error while browsing (MainScreen) x.json: KeyError: 3 "
                                      "(traceback saved to /tmp/crash.txt)\n")
