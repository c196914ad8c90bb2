"""Runs the UI tests on the oldest Textual that pyproject.toml allows (used by conftest.py and
tests/ui/test_textual_floor.py; one module so both see the same child process).

The test environment has the newest Textual (``pip install -e '.[test]'`` picks it), so
the whole suite runs on that.  For the oldest end of the declared range, the floor
version named in pyproject.toml (``textual>=X``) is installed into a folder of its own
(``pip install --target``, cached in the temp folder) and every UI test runs again with
that folder first on the path, in a child pytest.  SVG snapshots are skipped there: they
are recorded with the newest Textual, whose rendering details differ.

The child starts when the session starts (``conftest.py`` calls :func:`start_floor_run`)
and runs beside the main suite on the second core; :func:`test_ui_tests_pass_on_the_oldest_declared_textual`
is moved to the end of the session and waits for it.  A failure prints the child's output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOOR_ENV = "TRACETUI_TEXTUAL_FLOOR"
FLOOR_TEST = "test_ui_tests_pass_on_the_oldest_declared_textual"
_child: dict[str, object] = {}


def declared_floor() -> str:
    """The X of ``textual>=X`` in pyproject.toml's dependencies."""
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'"textual>=([0-9][0-9.]*)', text)
    assert match, "pyproject.toml must declare textual>=X"
    return match.group(1)


def ui_test_files() -> list[str]:
    files = sorted(p.name for p in (REPO / "tests" / "ui").glob("test_ui_*.py"))
    return [f"tests/ui/{name}" for name in files] + ["tests/ui/test_error_boundary.py"]


def start_floor_run(basetemp: Path) -> None:
    """Install the floor Textual (once) and start the child pytest in the background."""
    floor = declared_floor()
    target = Path(tempfile.gettempdir()) / f"tracetui-textual-{floor}"
    try:
        if not (target / "textual" / "__init__.py").exists():
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--no-deps", "--target", str(target), f"textual=={floor}"], check=True,
                           capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        _child["error"] = f"pip could not install textual=={floor}:\n{exc.stdout}\n{exc.stderr}"
        return
    log = basetemp / "textual-floor.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO)]), FLOOR_ENV: "1"}
    handle = open(log, "w", encoding="utf-8")
    _child.update(floor=floor, log=log, handle=handle, process=subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(basetemp / "floor"),
         "tests/ui/test_textual_floor.py", *ui_test_files()],
        cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT))


def stop_floor_run() -> None:
    process = _child.get("process")
    if process is not None and process.poll() is None:
        process.kill()
