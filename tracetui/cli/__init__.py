"""The command line: argparse entry point (`main`), the text subcommands (info, tree, summary) and `record`."""

from .entry import main

__all__ = ["main"]
