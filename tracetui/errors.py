"""The one exception family tracetui raises for bad input.

Every message is one line that names the file, where in it the problem is (a byte
offset or an event index, when known) and what is wrong.  The CLI prints it and
exits non-zero; the TUI shows it in a dialog.  Non-fatal problems (a truncated
file that still opened, events that could not be linked) are *warnings*: they are
kept on the loaded trace (``trace.warnings``) and shown to the user, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass


class TraceError(Exception):
    """Base class: a trace file could not be used.

    ``str(err)`` is the one-line message shown to the user.
    """

    def __init__(self, path: str | None, problem: str, *, position: str | None = None):
        self.path = path
        self.problem = problem
        self.position = position
        where = f" at {position}" if position else ""
        name = path if path else "<input>"
        super().__init__(f"{name}{where}: {problem}")


class TraceFileError(TraceError):
    """The file cannot be read: missing, unreadable, not gzip where it says so."""


class TraceFormatError(TraceError):
    """The bytes are not JSON, or not a trace tracetui understands."""


class WrongTraceKindError(TraceFormatError):
    """An Execution Trace was given where a Kineto trace was expected, or the reverse."""


class TraceTooLargeError(TraceError):
    """The trace would need more memory than this machine can give."""


@dataclass(frozen=True)
class LoadWarning:
    """A non-fatal problem found while loading or linking; shown to the user.

    ``count`` says how many items it concerns (events cut off, events rejected,
    kernels without a launch ...); ``message`` is one line.
    """

    kind: str
    message: str
    count: int = 0

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message
