"""The UI tests pass on the oldest Textual that pyproject.toml allows (see tests/textual_floor.py:
the child pytest starts with the session, beside the suite, and this check runs last)."""

from __future__ import annotations

import os
import re
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from textual_floor import FLOOR_ENV, declared_floor, run_folder


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) == "1", reason="this is the floor run itself")
def test_ui_tests_pass_on_the_oldest_declared_textual(tmp_path_factory):
    folder = run_folder(tmp_path_factory.getbasetemp())
    if not (folder / "pid").exists() and not (folder / "error").exists():  # run on its own
        pytest.skip("the floor run starts with the session; run the whole suite")
    assert not (folder / "error").exists(), (folder / "error").read_text()
    rc_file = folder / "rc"
    deadline = time.monotonic() + 1500
    while not rc_file.exists():
        assert time.monotonic() < deadline, "the floor run took over 25 minutes"
        time.sleep(0.5)
    rc = int(rc_file.read_text())
    tail = (folder / "log").read_text(encoding="utf-8", errors="replace")[-8000:]
    assert rc == 0, f"UI tests on textual {(folder / 'floor').read_text()} failed:\n{tail}"
    assert re.search(r"\d+ passed", tail), tail


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) != "1", reason="only in the floor run")
def test_the_floor_run_imports_the_floor_version():
    import textual
    from packaging.version import Version

    assert Version(version("textual")) == Version(declared_floor())
    assert Path(textual.__file__).parent.parent.name.startswith("tracetui-textual-")
