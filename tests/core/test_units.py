"""One units module (``tracetui/units.py``): every unit symbol is spelled there and nowhere
else in ``tracetui/``, bytes are SI, and its formats give what the screens and reports show."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tracetui import units

PACKAGE = Path(__file__).resolve().parents[2] / "tracetui"
#: the trace formats' own key names (Kineto writes ``memory bandwidth (GB/s)``): data, not ours
FORMAT_KEYS = {PACKAGE / "kineto" / "schema.py"}
#: literals that look like a unit and are not one: (file, literal) -> why
NOT_UNITS = {
    ("kineto/build.py", " B events without an E kept with zero duration"): "B is the Chrome trace phase 'B'",
}

_SYMBOL = "|".join(re.escape(s) for s in sorted(
    {units.NS, units.US, units.MS, units.US_ASCII, units.KB, units.MB, units.GB, units.TB, units.GBPS,
     units.TFLOPS, units.FLOP_PER_BYTE, units.FLOP_PER_B, "KiB", "MiB", "GiB", "TiB", "KB", "MB/s", "TB/s"},
    key=len, reverse=True))
#: a unit symbol as a word of its own anywhere in a literal (``total ms``, ``(µs)``, ``GB/s``)
ANYWHERE = re.compile(rf"(?<![\w/.\-])(?:{_SYMBOL})(?![\w/])")
#: a unit right after a number: a digit, then an optional space and any symbol (``100 µs``,
#: ``4 B``, ``12%``)
AFTER_DIGIT = re.compile(rf"\d ?(?:{_SYMBOL}|s|B|%|min)(?![\w/])")
#: the literal piece right after a formatted value of an f-string (``f"{n:,} B"``, ``f"{p:.1f}%"``,
#: ``f"{t} s"``; not the plural ``f"{side}s"`` nor the ``s`` of ``f"GPU{pid} s{tid}"``)
AFTER_VALUE = re.compile(rf"^(?: ?(?:{_SYMBOL}|B|%|min)(?![\w/])| s(?![\w/])(?!$))")
#: the same where nothing follows in the piece (``f"{t} s"`` at the end of the f-string)
AFTER_VALUE_LAST = re.compile(r"^ s$")


def _docstrings(tree: ast.AST) -> set[int]:
    """Ids of the docstrings and of the CSS of widgets (``DEFAULT_CSS``: ``100%`` is CSS, also
    in the arguments of a call that builds it)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in ("DEFAULT_CSS", "CSS") for t in node.targets):
            out.update(id(n) for n in ast.walk(node.value))
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        # an attribute docstring (a string statement after an assignment)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.add(id(node.value))
    return out


def unit_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every string literal of ``source`` (docstrings excluded) that spells
    a unit: a symbol as a word, a unit after a digit, or a unit right after an f-string value."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    after_value: set[int] = set()
    last: set[int] = set()  # pieces that end their f-string
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for prev, part in zip(node.values, node.values[1:]):
                if isinstance(prev, ast.FormattedValue) and isinstance(part, ast.Constant):
                    after_value.add(id(part))
            if node.values and isinstance(node.values[-1], ast.Constant):
                last.add(id(node.values[-1]))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
            continue
        text = node.value
        after = id(node) in after_value and (AFTER_VALUE.search(text) or (id(node) in last
                                                                          and AFTER_VALUE_LAST.search(text)))
        if ANYWHERE.search(text) or AFTER_DIGIT.search(text) or after:
            found.append((node.lineno, text))
    return found


def test_no_unit_string_literal_outside_the_units_module():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "units.py" or path in FORMAT_KEYS:
            continue
        for line, text in unit_literals(path.read_text()):
            if (str(path.relative_to(PACKAGE)), text) in NOT_UNITS:
                continue
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}")
    assert not found, "spell units with tracetui.units:\n" + "\n".join(found)


@pytest.mark.parametrize(("source", "hits"), [
    ('x = f"{n:,} B"', 1), ('x = f"{p:.1f}%"', 1), ('x = "total ms"', 1), ('x = "dur (µs)"', 1),
    ('x = "within 100 µs"', 1), ('x = ("GB", 1e9)', 1), ('x = f"{v} {units.US}"', 0),
    ('x = "B/E event pairs"', 0), ('x = "ph B"', 0), ('x = "--delay-ms"', 0), ('x = f"{n} calls"', 0),
    ('x = f"{side}s"', 0), ('x = f"GPU{pid} s{tid}"', 0), ('x = f"{t:g} s"', 1), ('x = f"{t:g} s away"', 1),
    ('x = "a { width: 100%; }"', 1), ('DEFAULT_CSS = "a { width: 100%; }"', 0),
    ('DEFAULT_CSS = css("A", "a { width: 100%; }")', 0),
    ('"""A docstring in µs."""', 0),
])
def test_the_scan_finds_units_and_not_prose(source, hits):
    assert len(unit_literals(source)) == hits


def test_bytes_are_si_and_exact_beside_the_rounded_form():
    assert units.bytes_text(999) == "999 B"
    assert units.bytes_text(33_792) == "33,792 B (33.8 kB)"  # 33.0 KiB in IEC: SI chosen
    assert units.bytes_text(19_267_584) == "19,267,584 B (19.3 MB)"
    assert units.bytes_short(4_194_304) == "4.2 MB"
    assert units.bytes_short(512) == "512 B" and units.bytes_short(0) == ""
    # bytes / time = bandwidth with the same prefix: 19.3 MB in 1 ms is 19.3 GB/s
    assert units.gbps_text(units.gbps(19_267_584, 1_000.0), ".3g") == "19.3 GB/s"


def test_durations_counts_and_percentages():
    assert [units.format_duration_us(v) for v in (0.812, 3.14159, 31.4, 12_345.0, 1.52e6)] == [
        "812ns", "3.14µs", "31.4µs", "12.3ms", "1.52s"]
    assert units.duration_exact(5.824) == "5.82µs  (5.824 µs)"
    assert units.format_time_us(1_500.0, resolution_us=100.0) == "1.5ms"
    assert units.number(1234) == "1,234" and units.number(1234.5678) == "1,234.568"
    assert units.number(None) == "" and units.number(float("nan")) == ""
    assert [units.compact_count(n) for n in (9_999, 12_345, 123_456, 12_345_678)] == ["9,999", "12345", "123k", "12M"]
    assert units.plural(1, "call") == "1 call" and units.plural(2145, "call") == "2,145 calls"
    assert units.percent(1, 8) == "12.5%" and units.percent(1, 0) == ""


def test_query_values_are_plain_and_copyable():
    import numpy as np

    assert [units.value_text(v) for v in (None, True, np.bool_(False), 1234567, np.int64(-3))] == [
        "", "true", "false", "1234567", "-3"]  # ids and counts without separators
    assert [units.value_text(v) for v in (12.3456, 0.0, 1.234e-5, float("inf"), np.float32(2.5), "x")] == [
        "12.346", "0.000", "1.23e-05", "inf", "2.500", "x"]
