"""The one exception family tracetui raises for bad input.

Every message is one line that names the file, where in it the problem is (a byte
offset or an event index, when known) and what is wrong.  The CLI prints it and
exits non-zero; the TUI shows it in a dialog.  Non-fatal problems (a truncated
file that still opened, events that could not be linked) are *warnings*: they are
kept on the loaded trace (``trace.warnings``) and shown to the user, never dropped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

#: What a terminal could act on, or that changes how the text around it reads: the C0
#: controls (ESC, BEL, CR, BS, NUL, newline ...), DEL, the C1 controls (U+0080-U+009F:
#: 8-bit CSI, OSC, DCS, ST), the Unicode line and paragraph separators, the bidi
#: embedding/override/isolate controls, and lone surrogates (undecodable file names,
#: which no terminal encoding can write).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: the same, except newline and tab (text of several lines: an export, a traceback)
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(m: re.Match[str]) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def one_line(text: str) -> str:
    """The one sanitiser for text read from a file (a name, an arg, a thread name, a path, an
    error position) before it is shown on a screen or written to a terminal: every character
    of :data:`_CONTROL` is escaped visibly (``\\x1b``, ``\\n``, ``\\x9b``, ``\\u202e``),
    every other character (printable Unicode) passes unchanged.  So the result is one line
    and holds nothing a terminal would act on (no escape sequence, no terminal query, no
    OSC 52 clipboard write); a name that contains a backslash already reads the same as
    an escaped one, which is harmless."""
    if text.isascii() and text.isprintable():  # the usual case: no regex pass
        return text
    return _CONTROL.sub(_escaped, text)


def printable_lines(text: str) -> str:
    """:func:`one_line` for text of several lines (a report written to a terminal): newline
    and tab are kept, every other control character is escaped the same way."""
    return _CONTROL_BUT_LINES.sub(_escaped, text)


def escapes(text: str, *, keep_lines: bool = False) -> list[tuple[int, str]]:
    """(position, escaped form) of every character :func:`one_line` escapes in ``text`` (or
    :func:`printable_lines` with ``keep_lines``), in order: for rewriting styled text whose
    spans must move with the characters."""
    if text.isascii() and text.isprintable():
        return []
    pattern = _CONTROL_BUT_LINES if keep_lines else _CONTROL
    return [(m.start(), _escaped(m)) for m in pattern.finditer(text)]


def has_control(text: str) -> bool:
    """Whether :func:`one_line` would change ``text``."""
    return not (text.isascii() and text.isprintable()) and _CONTROL.search(text) is not None


class TraceError(Exception):
    """Base class: a trace file could not be used.

    ``str(err)`` is the one-line message shown to the user: control characters in the
    path, the position and the problem are escaped (``path``/``problem`` keep the originals).
    """

    def __init__(self, path: str | bytes | os.PathLike | None, problem: str, *, position: str | None = None):
        path = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else path
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
