"""The one exception family tracetui raises for bad input.

Every message is one line that names the file, where in it the problem is (a byte
offset or an event index, when known) and what is wrong.  The CLI prints it and
exits non-zero; the TUI shows it in a dialog.  Non-fatal problems (a truncated
file that still opened, events that could not be linked) are *warnings*: they are
kept on the loaded trace (``trace.warnings``) and shown to the user, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with control characters and line separators escaped (``\\n``, ``\\x1b``), so
    a path or a problem holding a newline still makes a one-line message."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class TraceError(Exception):
    """Base class: a trace file could not be used.

    ``str(err)`` is the one-line message shown to the user: control characters in the
    path, the position and the problem are escaped (``path``/``problem`` keep the originals).
    """

    def __init__(self, path: str | None, problem: str, *, position: str | None = None):
        self.path = path
        self.problem = problem
        self.position = position
        where = f" at {one_line(position)}" if position else ""
        name = one_line(path) if path else "<input>"
        super().__init__(f"{name}{where}: {one_line(problem)}")


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

    def __post_init__(self) -> None:
        # messages quote file paths and names from traces: keep them one line, with no
        # terminal control sequences (``one_line`` escapes them)
        object.__setattr__(self, "message", one_line(self.message))

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


class LoadCancelled(BaseException):
    """The user cancelled a load: raised from the progress callback the UI hands the loader.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that no ``except Exception``
    fallback on the way (a failed cache child, a failed decode worker) swallows it: the
    load stops at its next progress report and every ``finally`` cleans up (the cache
    child is killed, decode workers are stopped).
    """
