"""``tracetui --version`` (issue 45): what a bug report needs, on stdout, exit 0, through a pipe."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys

import pytest

import tracetui
from tracetui.cli import main
from tracetui.cli.entry import VERSION_PACKAGES


def test_version_names_tracetui_python_and_every_library(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"tracetui {tracetui.__version__} (Python {platform.python_version()}, ")
    for name in VERSION_PACKAGES:
        assert f"{name} {importlib.metadata.version(name)}" in out
    assert out.count("\n") == 1


def test_version_through_a_pipe_imports_no_numpy():
    code = ("import sys\nfrom tracetui.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit as e:\n"
            "    assert e.code == 0\nassert 'numpy' not in sys.modules, 'numpy imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tracetui ") and "duckdb" in done.stdout
