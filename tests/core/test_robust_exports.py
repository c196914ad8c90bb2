"""Safe exports (issue 24): every file tracetui writes for the user is written atomically (a
failed write keeps the file it was replacing, and leaves no temp file), with the mode a
plain ``open`` gives; CSV cells a spreadsheet would run as a formula are prefixed with
``'``.  (The browser's question before it overwrites a file: tests/ui/test_ui_hostile.py.)
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import stat
import subprocess
import sys

import pytest
from shared_traces import kineto_path

import tracetui.io.files as files
from tracetui.errors import TraceFileError
from tracetui.export import write_export
from tracetui.export.csv_json import FORMULA_START
from tracetui.session import open_traces

MI250 = str(kineto_path("mi250_minitoy_train.json.gz"))
OLD = b"the report written yesterday\n"


def _no_temp_files(folder) -> bool:
    return not [p for p in os.listdir(folder) if p.startswith(".tmp-")]


class _DiskFull:
    """A file object whose writes fail with ENOSPC once ``room`` bytes are written."""

    def __init__(self, fh, room: int) -> None:
        self.fh, self.room = fh, room

    def write(self, data) -> int:
        n = memoryview(data).nbytes
        if n > self.room:
            raise OSError(28, "No space left on device")
        self.room -= n
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.fh.close()


@pytest.mark.parametrize("fmt,name", [("md", "report.md"), ("json", "report.json"), ("chrome", "trace.json.gz")])
def test_a_failed_write_keeps_the_old_file(fmt, name, tmp_path, monkeypatch):
    target = tmp_path / name
    target.write_bytes(OLD)
    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: _DiskFull(real_fdopen(fd, *a, **k), 100))
    linked = open_traces([MI250])
    with pytest.raises(TraceFileError, match=r"cannot write the export: No space left on device$"):
        write_export(linked, None, fmt, target)
    assert target.read_bytes() == OLD and _no_temp_files(tmp_path)
    monkeypatch.undo()
    write_export(linked, None, fmt, target)  # with room: replaced whole
    data = target.read_bytes()
    assert data != OLD and (gzip.decompress(data) if name.endswith(".gz") else data).strip()


_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
from tracetui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_cli_over_a_file_size_limit_keeps_the_old_file_and_says_why(tmp_path):
    """A real failing write (``ulimit -f``: the export is bigger than 4 KiB) in a child."""
    target = tmp_path / "report.html"
    target.write_bytes(OLD)
    out = subprocess.run([sys.executable, "-c", _LIMITED, "export", MI250, "--no-cache", "-f", "html", "-o",
                          str(target)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"tracetui: {target}: cannot write the export: File too large\n"
    assert target.read_bytes() == OLD and _no_temp_files(tmp_path)


def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(tmp_path):
    linked = open_traces([MI250])
    old = os.umask(0o027)
    try:
        write_export(linked, None, "md", tmp_path / "new.md")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
    kept = tmp_path / "private.md"
    kept.write_bytes(OLD)
    kept.chmod(0o600)
    write_export(linked, None, "md", kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_bytes() != OLD


def test_record_writes_its_gzip_files_atomically_and_reproducibly(tmp_path):
    from tracetui.cli.record import _gzip_file

    src = tmp_path / "trace.json"
    src.write_bytes(b'{"traceEvents": []}' * 1000)
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    _gzip_file(src, a)
    _gzip_file(src, b)
    assert a.read_bytes() == b.read_bytes() and gzip.decompress(a.read_bytes()) == src.read_bytes()
    assert a.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header time 0: no changing bytes
    assert _no_temp_files(tmp_path)


FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]


def test_csv_cells_that_would_run_as_formulas_are_quoted_with_an_apostrophe(tmp_path):
    raw = json.loads(gzip.open(MI250).read())
    renamed = 0
    for ev in raw["traceEvents"]:
        if ev.get("cat") == "cpu_op" and renamed < len(FORMULAS):
            ev["name"] = FORMULAS[renamed]
            renamed += 1
    assert renamed == len(FORMULAS)
    p = tmp_path / "formulas.json"
    p.write_text(json.dumps(raw))
    target = tmp_path / "out.csv"
    write_export(open_traces([str(p)]), None, "csv", target)
    rows = list(csv.DictReader(io.StringIO(target.read_bytes().decode(), newline="")))
    names = [r["name"] for r in rows]
    for f in FORMULAS:
        if f[0] in "\t\r":  # escaped visibly as every control character of a name is: no formula left
            assert {"\t": r"\tcmd", "\r": r"\rcmd"}[f[0]] in names and f not in names
        else:
            assert "'" + f in names and f not in names
    assert not [n for n in names if n.startswith(FORMULA_START)]
    # numbers stay numbers (a spreadsheet reads them as values): no apostrophe before them
    assert all(r["ts_us"] == "" or not r["ts_us"].startswith("'") for r in rows)
    assert any(r["dur_us"] and float(r["dur_us"]) > 0 for r in rows)
