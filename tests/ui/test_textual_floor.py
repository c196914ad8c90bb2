"""The UI tests pass on the oldest Textual that pyproject.toml allows (see tests/textual_floor.py:
the child pytest starts with the session, beside the suite, and this check runs last)."""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from textual_floor import FLOOR_ENV, _child, declared_floor


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) == "1", reason="this is the floor run itself")
def test_ui_tests_pass_on_the_oldest_declared_textual():
    assert "error" not in _child, _child.get("error")
    process = _child.get("process")
    if process is None:  # run on its own (not through the session hook)
        pytest.skip("the floor run starts with the session; run the whole suite")
    try:
        rc = process.wait(timeout=1500)
    finally:
        _child["handle"].close()
    tail = Path(_child["log"]).read_text(encoding="utf-8", errors="replace")[-8000:]
    assert rc == 0, f"UI tests on textual {_child['floor']} failed:\n{tail}"
    assert re.search(r"\d+ passed", tail), tail


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) != "1", reason="only in the floor run")
def test_the_floor_run_imports_the_floor_version():
    import textual
    from packaging.version import Version

    assert Version(version("textual")) == Version(declared_floor())
    assert Path(textual.__file__).parent.parent.name.startswith("tracetui-textual-")
