"""The command line is one list of command modules (``tracetui.cli.entry.COMMANDS``, issue 37):
each module has ``NAME``, ``register(subparsers)`` and ``run(args)``; the entry builds the
parser from the list, and ``tracetui --help`` names every command of it, in its order."""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil

import pytest

import tracetui.cli
from tracetui.cli.entry import COMMANDS, SUBCOMMANDS, build_parser, main


def _help_commands(text: str) -> list[str]:
    """The command names of argparse's help: the first word of each line indented four spaces
    under ``COMMAND`` (a long name stands alone on its line, its help on the next)."""
    lines = text.split("positional arguments:", 1)[1].split("options:", 1)[0].splitlines()
    return [ln.split()[0] for ln in lines if ln.startswith("    ") and not ln.startswith("     ")]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub


def test_help_lists_every_command_of_the_one_list(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    names = [c.NAME for c in COMMANDS]
    assert _help_commands(out) == names == list(SUBCOMMANDS)
    assert names == ["open", "summary", "memory", "export", "tree", "info", "query", "slice", "check", "diff",
                     "follow", "critical-path", "mcp", "record"]
    assert main([]) == 0  # no command: the same help
    assert capsys.readouterr().out == out


def test_each_command_module_has_register_and_run():
    for command in COMMANDS:
        assert isinstance(command.NAME, str), command.__name__
        assert list(inspect.signature(command.register).parameters) == ["subparsers"], command.__name__
        assert list(inspect.signature(command.run).parameters) == ["args"], command.__name__
    assert len({c.NAME for c in COMMANDS}) == len(COMMANDS)
    # the parser holds exactly the commands of the list, each registered by its own module
    assert list(_subparsers(build_parser()).choices) == list(SUBCOMMANDS)


def test_every_cli_module_with_a_register_is_in_the_list():
    """A command module left out of COMMANDS would be dead code: the list is the one place."""
    listed = {c.__name__ for c in COMMANDS}
    for info in pkgutil.iter_modules(tracetui.cli.__path__):
        module = importlib.import_module(f"tracetui.cli.{info.name}")
        if hasattr(module, "register") or hasattr(module, "run"):
            assert module.__name__ in listed, module.__name__


def test_export_choices_are_the_export_formats():
    """The parser spells the formats (it imports no export code); they are the export's own."""
    from tracetui.export import FORMATS

    export = _subparsers(build_parser()).choices["export"]
    (fmt,) = [a for a in export._actions if a.dest == "format"]
    assert tuple(fmt.choices) == FORMATS
