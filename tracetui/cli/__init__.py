"""The command line: the entry point (`main`, :mod:`tracetui.cli.entry`) and one module per command."""

from .entry import main

__all__ = ["main"]
