"""Runs the UI tests on the oldest Textual that pyproject.toml allows (used by conftest.py and
tests/ui/test_textual_floor.py; one module so both find the same child process).

The test environment has the newest Textual (``pip install -e '.[test]'`` picks it), so
the whole suite runs on that.  For the oldest end of the declared range, the floor
version named in pyproject.toml (``textual>=X``) is installed into a folder of its own
(``pip install --target``, cached in the temp folder) and the UI tests of
:data:`FLOOR_UI_FILES` (the monkey walks among them) run again with that folder first on the
path, in a child pytest.  SVG snapshots are skipped there: they
are recorded with the newest Textual, whose rendering details differ.

The child starts when the session collects the floor test (``conftest.py`` calls
:func:`start_floor_run`) and runs beside the main suite.  With pytest-xdist only the
first worker starts it; the child writes its exit status into a folder every worker of
the run finds (named by xdist's run id), so
:func:`test_ui_tests_pass_on_the_oldest_declared_textual`, moved to the end of the
collection, waits for it on whichever worker runs it.  The process that ends the session
last (xdist's controller, or pytest itself without xdist) stops a child still running.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOOR_ENV = "TRACETUI_TEXTUAL_FLOOR"
FLOOR_TEST = "test_ui_tests_pass_on_the_oldest_declared_textual"
#: pytest-xdist gives every worker of one run the same id in this variable.
XDIST_RUN_ID = "PYTEST_XDIST_TESTRUNUID"


def declared_floor() -> str:
    """The X of ``textual>=X`` in pyproject.toml's dependencies."""
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'"textual>=([0-9][0-9.]*)', text)
    assert match, "pyproject.toml must declare textual>=X"
    return match.group(1)


#: The UI tests the floor run repeats.  The guide asks for the monkey walks on the oldest and
#: the newest Textual; the others here are the ones that found floor-only defects or cover
#: the app's life cycle: screens opened and closed as the app ends (two races on 8.0), the
#: app's own keys and panes, crash paths and the error boundary.  Repeating every UI file
#: there doubled the UI tests' CPU on the 2 cores the suite shares (a clean-clone CI run took
#: 719 s of the 720 allowed); the rest of the UI tests run on the newest Textual only.
FLOOR_UI_FILES = ("test_ui_monkey.py", "test_ui_screen_closed_at_once.py", "test_ui_app.py",
                  "test_ui_crash_paths.py", "test_error_boundary.py")


#: set to 1 to have the floor run repeat every UI test file (what to run before raising the
#: floor, or after a change to how the UI uses Textual)
FLOOR_ALL_ENV = "TRACETUI_FLOOR_ALL"


def ui_test_files() -> list[str]:
    """The test files of the floor run (:data:`FLOOR_UI_FILES`, each checked to exist; every
    UI test file with ``TRACETUI_FLOOR_ALL=1``)."""
    if os.environ.get(FLOOR_ALL_ENV) == "1":
        names = sorted(p.name for p in (REPO / "tests" / "ui").glob("test_ui_*.py")) + ["test_error_boundary.py"]
        return [f"tests/ui/{name}" for name in names]
    files = [REPO / "tests" / "ui" / name for name in FLOOR_UI_FILES]
    missing = [p.name for p in files if not p.exists()]
    assert not missing, f"floor run: no such test file {missing}"
    return [f"tests/ui/{p.name}" for p in files]


def run_folder(basetemp: Path) -> Path:
    """Where the child's log, pid and exit status go: one folder per run, found by every
    xdist worker of it (their basetemps differ), else the session's basetemp."""
    run_id = os.environ.get(XDIST_RUN_ID)
    if run_id:
        return Path(tempfile.gettempdir()) / f"tracetui-floor-run-{run_id}"
    return basetemp / "textual-floor"


def starts_the_run() -> bool:
    """Only one process starts the child: pytest itself, or xdist's first worker."""
    return os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"


def start_floor_run(basetemp: Path) -> None:
    """Install the floor Textual (once) and start the child pytest in the background; it
    writes ``rc`` into :func:`run_folder` when it ends (``error`` if pip failed)."""
    folder = run_folder(basetemp)
    folder.mkdir(parents=True, exist_ok=True)
    floor = declared_floor()
    target = Path(tempfile.gettempdir()) / f"tracetui-textual-{floor}"
    try:
        if not (target / "textual" / "__init__.py").exists():
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--no-deps", "--target", str(target), f"textual=={floor}"], check=True,
                           capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        (folder / "error").write_text(f"pip could not install textual=={floor}:\n{exc.stdout}\n{exc.stderr}")
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO)]), FLOOR_ENV: "1"}
    for name in (XDIST_RUN_ID, "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"):
        env.pop(name, None)
    # Two xdist workers of its own: with one, the floor run ends minutes after the main suite
    # on a 2-core machine (measured: 173 s of waiting at the end of a 556 s run).
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                  "--basetemp", str(folder / "tmp"), "tests/ui/test_textual_floor.py", *ui_test_files()]
    log, rc = folder / "log", folder / "rc"
    # Detached: ``sh`` starts the run in the background and exits at once (waited for here),
    # so the run is not this process's child.  A child's CPU is added to this process's
    # RUSAGE_CHILDREN when it is reaped, and subprocess reaps an unwaited Popen whenever a later
    # one starts: the floor run's ~100 s of CPU landed inside a test that measures its
    # commands' CPU that way (test_long_names.py: "csv export 102.6 s of CPU").  The
    # session's process group (its id: the pid written here) still reaches the run.
    script = f"({shlex.join(pytest_cmd)} > {shlex.quote(str(log))} 2>&1; echo $? > {shlex.quote(str(rc))}.part; " \
             f"mv {shlex.quote(str(rc))}.part {shlex.quote(str(rc))}) < /dev/null > /dev/null 2>&1 &"
    (folder / "floor").write_text(floor)
    process = subprocess.Popen(["sh", "-c", script], cwd=REPO, env=env, start_new_session=True)
    process.wait()
    (folder / "pid").write_text(str(process.pid))


def stop_floor_run(basetemp: Path) -> None:
    """Stop a child still running (the session ended early, or its check never ran); an
    xdist run's folder (outside pytest's temp folders, which pytest prunes) is removed."""
    folder = run_folder(basetemp)
    pid_file = folder / "pid"
    if pid_file.exists() and not (folder / "rc").exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass
    if os.environ.get(XDIST_RUN_ID):
        shutil.rmtree(folder, ignore_errors=True)
