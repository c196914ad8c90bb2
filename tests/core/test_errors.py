"""Warnings are one line: file paths and trace strings inside them cannot break the
status line, the warnings screen or a terminal (control characters are escaped)."""

from __future__ import annotations

import re

from shared_traces import ET_DIR

from tracetui.errors import LoadWarning
from tracetui.et import load_et

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def test_load_warning_escapes_control_characters():
    w = LoadWarning("x", "a\nb\x1b[31mred\x00", 1)
    assert w.message == "a\\nb\\x1b[31mred\\x00"
    assert str(w) == w.message


def test_et_warning_naming_a_path_with_a_newline_stays_one_line(tmp_path):
    # a real ET whose gzip trailer (CRC + size, the last 8 bytes) is cut: the JSON is whole
    data = (ET_DIR / "et_only" / "chakra_test_schema_1.0.2.json.gz").read_bytes()[:-8]
    p = tmp_path / "run\n\x1b[2Jet.json.gz"
    p.write_bytes(data)
    et = load_et(p)
    assert et.warnings, "the cut gzip trailer is reported"
    for w in et.warnings:
        assert not _CONTROL.search(w.message), w.message
    assert any("run\\n\\x1b[2Jet.json.gz" in w.message for w in et.warnings)
