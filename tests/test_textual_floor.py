"""The UI tests on the oldest Textual that pyproject.toml allows.

The test environment has the newest Textual (``pip install -e '.[test]'`` picks it), so
the whole suite runs on that.  This test installs the floor version named in
pyproject.toml (``textual>=X``) into a folder of its own (``pip install --target``, cached
in the temp folder) and runs every UI test again with that folder first on the path, in
a child pytest.  SVG snapshots are skipped there: they are recorded with the newest
Textual, whose rendering details differ.  So both ends of the declared range are tested
in every CI run; a failure prints the child's output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLOOR_ENV = "TRACETUI_TEXTUAL_FLOOR"


def declared_floor() -> str:
    """The X of ``textual>=X`` in pyproject.toml's dependencies."""
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'"textual>=([0-9][0-9.]*)', text)
    assert match, "pyproject.toml must declare textual>=X"
    return match.group(1)


def ui_test_files() -> list[str]:
    files = sorted(p.name for p in (REPO / "tests").glob("test_ui_*.py"))
    return [f"tests/{name}" for name in files] + ["tests/test_error_boundary.py"]


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) == "1", reason="this is the floor run itself")
def test_ui_tests_pass_on_the_oldest_declared_textual():
    floor = declared_floor()
    target = Path(tempfile.gettempdir()) / f"tracetui-textual-{floor}"
    if not (target / "textual" / "__init__.py").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--target", str(target), f"textual=={floor}"], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO)]), FLOOR_ENV: "1"}
    child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            "tests/test_textual_floor.py", *ui_test_files()],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    tail = (child.stdout + child.stderr)[-8000:]
    assert child.returncode == 0, f"UI tests on textual {floor} failed:\n{tail}"
    assert re.search(r"\d+ passed", tail), tail


@pytest.mark.skipif(os.environ.get(FLOOR_ENV) != "1", reason="only in the floor run")
def test_the_floor_run_imports_the_floor_version():
    import textual

    from packaging.version import Version

    assert Version(version("textual")) == Version(declared_floor())
    assert Path(textual.__file__).parent.parent.name.startswith("tracetui-textual-")
