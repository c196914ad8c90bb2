"""Two names that differ only by an invisible character never print alike (issue 40).

The masquerade pair (:func:`hostile.write_lookalike_kineto`): a copy of h100_bert_inference
whose 26 ``aten::addmm`` ops are named ``aten::mm`` and ``aten::mm`` + U+200B (13 each) and
whose 17 cutlass GEMM kernels ``mm_kernel`` and ``mm_kernel`` + U+200B (9 and 8).  Each
command that lists ops or kernels (``summary``, ``query``, ``tree``, the md/csv/html exports)
must show both names, one of them with its ``\\u200b`` visible, and no raw invisible
character; the JSON outputs keep both exact strings.  (The browser's summaries screen at
80x24: tests/ui/test_ui_hostile.py.)
"""

from __future__ import annotations

import html
import json
import re

import pytest
from hostile import LOOKALIKE_KERNELS, LOOKALIKE_OPS, unsafe_characters, write_lookalike_kineto

from tracetui.cli.entry import main


def shown_forms(text: str, name: str) -> set[str]:
    """How ``name`` is written in ``text``: plain, or with its zero width space escaped."""
    return set(re.findall(re.escape(name) + r"(?:\\u200b)?", text))


@pytest.fixture(scope="module")
def lookalike(tmp_path_factory):
    return write_lookalike_kineto(tmp_path_factory.mktemp("lookalike"))


COMMANDS = {
    "summary": (["summary", "{trace}"], ("aten::mm", "mm_kernel")),
    "query": (["query", "{trace}", "SELECT name, count(*) AS n FROM ops WHERE name LIKE 'aten::mm%' GROUP BY name"],
              ("aten::mm",)),
    "query csv": (["query", "{trace}", "SELECT name, count(*) AS n FROM kernels WHERE name LIKE 'mm_kernel%' "
                   "GROUP BY name", "--csv"], ("mm_kernel",)),
    "tree": (["tree", "{trace}"], ("aten::mm", "mm_kernel")),
    "export md": (["export", "{trace}", "-f", "md", "-o", "-"], ("aten::mm", "mm_kernel")),
    "export csv": (["export", "{trace}", "-f", "csv", "-o", "-"], ("aten::mm", "mm_kernel")),
    "export html": (["export", "{trace}", "-f", "html", "-o", "-"], ("aten::mm", "mm_kernel")),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_lookalike_names_print_as_two_names(command, lookalike, capsys):
    args, names = COMMANDS[command]
    assert main([a.format(trace=lookalike) for a in args]) == 0
    out = capsys.readouterr().out  # (captured: not a terminal, as a pipe is)
    assert unsafe_characters(out) == []
    shown = html.unescape(out) if command == "export html" else out
    for name in names:
        assert shown_forms(shown, name) == {name, name + "\\u200b"}, name


def test_query_counts_each_lookalike_apart(lookalike, capsys):
    """13 ``aten::mm`` and 13 ``aten::mm`` + U+200B: two rows, never one name twice."""
    sql = "SELECT name, count(*) AS n FROM ops WHERE name LIKE 'aten::mm%' GROUP BY name ORDER BY name"
    assert main(["query", str(lookalike), sql, "--csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["name,n", "aten::mm,13", "aten::mm\\u200b,13"]


@pytest.mark.parametrize("command", ["summary --json", "query --json", "export json"])
def test_json_keeps_both_exact_names(command, lookalike, capsys, tmp_path):
    if command == "export json":
        target = tmp_path / "report.json"
        assert main(["export", str(lookalike), "-f", "json", "-o", str(target)]) == 0
        text = target.read_text(encoding="utf-8")
    else:
        sql = ["SELECT name FROM ops UNION ALL SELECT name FROM kernels"] if command.startswith("query") else []
        assert main([command.split()[0], str(lookalike), *sql, "--json"]) == 0
        text = capsys.readouterr().out
    assert unsafe_characters(text) == []  # U+200B written as JSON's \u200b escape
    found = set(re.findall(r'"((?:aten::mm|mm_kernel)[^"]*)"', text))
    assert {json.loads(f'"{f}"') for f in found} >= {*LOOKALIKE_OPS, *LOOKALIKE_KERNELS}
