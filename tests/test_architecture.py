"""The core stays headless: import-linter's contract (pyproject.toml) forbids textual and
tracetui.ui everywhere outside tracetui.ui."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contract_holds():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    proc = subprocess.run([exe, "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout


def test_core_import_does_not_load_textual():
    code = ("import sys, tracetui, tracetui.model, tracetui.api, tracetui.navigate; "
            "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules), 'textual loaded'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)
