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

#: Every character the sanitiser escapes, as (first, last, what) code-point ranges: the one
#: definition of "unsafe to show as it is" (:func:`one_line`, :func:`printable_lines`,
#: :func:`escapes`, the JSON writer's escapes in :mod:`tracetui.io.jsonout` and the browser's
#: last guard in ``ui/textual_guards.py`` all read it).  Three kinds:
#:
#: * what a terminal acts on: the C0 controls, DEL and the C1 controls;
#: * what reorders or breaks the text around it: the line and paragraph separators and the
#:   bidi controls (marks U+200E/U+200F/U+061C, embeddings and overrides U+202A-202E,
#:   isolates U+2066-2069);
#: * what is invisible, so that two names differing only by it would print alike: every
#:   Default_Ignorable_Code_Point (DerivedCoreProperties.txt: the ranges below are Unicode
#:   14.0's, as ``perl -MUnicode::UCD`` lists them: 4,174 code points, the total of 16.0's
#:   file too; variation selectors included, U+FE0F after an emoji too), and the format
#:   controls that property leaves out by name although they draw nothing (U+FFF9-FFFB,
#:   U+13430-1343F);
#:
#: plus lone surrogates (an undecodable file name), which no terminal encoding can write.
UNSAFE_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0000, 0x001F, "C0 controls: NUL, BEL, BS, tab, newline, CR, ESC ..."),
    (0x007F, 0x009F, "DEL and the C1 controls: 8-bit CSI, OSC, DCS, ST ..."),
    (0x00AD, 0x00AD, "soft hyphen"),
    (0x034F, 0x034F, "combining grapheme joiner"),
    (0x061C, 0x061C, "Arabic letter mark (bidi)"),
    (0x115F, 0x1160, "Hangul choseong and jungseong fillers"),
    (0x17B4, 0x17B5, "Khmer inherent vowels"),
    (0x180B, 0x180F, "Mongolian free variation selectors, vowel separator"),
    (0x200B, 0x200F, "zero width space, non-joiner, joiner; left-to-right and right-to-left marks"),
    (0x2028, 0x2029, "line and paragraph separators"),
    (0x202A, 0x202E, "bidi embeddings, pop, overrides"),
    (0x2060, 0x206F, "word joiner, invisible operators, bidi isolates (U+2066-2069), deprecated format controls"),
    (0x3164, 0x3164, "Hangul filler"),
    (0xD800, 0xDFFF, "lone surrogates"),
    (0xFE00, 0xFE0F, "variation selectors"),
    (0xFEFF, 0xFEFF, "zero width no-break space (byte order mark)"),
    (0xFFA0, 0xFFA0, "halfwidth Hangul filler"),
    (0xFFF0, 0xFFF8, "unassigned, default ignorable"),
    (0xFFF9, 0xFFFB, "interlinear annotation controls"),
    (0x13430, 0x1343F, "Egyptian hieroglyph format controls"),
    (0x1BCA0, 0x1BCA3, "shorthand format controls"),
    (0x1D173, 0x1D17A, "musical symbol format controls"),
    (0xE0000, 0xE0FFF, "tags (U+E0000-E007F), variation selectors supplement, unassigned default ignorables"),
)


def unsafe_class(keep: str = "") -> re.Pattern[str]:
    """A regex matching one character of :data:`UNSAFE_RANGES` that is not in ``keep``."""
    spans = []
    for first, last, _ in UNSAFE_RANGES:
        for cp in sorted(ord(c) for c in keep if first <= ord(c) <= last):
            if cp > first:
                spans.append((first, cp - 1))
            first = cp + 1
        if first <= last:
            spans.append((first, last))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans) + "]")


#: one character of :data:`UNSAFE_RANGES`
UNSAFE = unsafe_class()
#: the same, except newline and tab (text of several lines: an export, a traceback)
UNSAFE_BUT_LINES = unsafe_class(keep="\n\t")


def _escaped(m: re.Match[str]) -> str:
    """The visible form: as Python writes the character in a string literal (``\\x1b``,
    ``\\n``, ``\\x9b``, ``\\xad``, ``\\u200b``, ``\\u202e``, ``\\U000e0041``)."""
    return m.group().encode("unicode_escape").decode("ascii")


def one_line(text: str) -> str:
    """The one sanitiser for text read from a file (a name, an arg, a thread name, a path, an
    error position) before it is shown on a screen, written to a terminal or to a text export
    (Markdown, CSV, HTML), on a terminal or not: every character of :data:`UNSAFE_RANGES`
    (controls, bidi controls and marks, invisible characters) is escaped visibly as Python
    writes it in a string literal (``\\x1b``, ``\\n``, ``\\x9b``, ``\\u200b``,
    ``\\u202e``, ``\\U000e0041``), every other character passes unchanged.  So the result is
    one line, holds nothing a terminal would act on (no escape sequence, no terminal query,
    no OSC 52 clipboard write), and two names that differ only by such characters never
    read alike; a name that contains a backslash already reads the same as an escaped one,
    which is harmless (it shows its backslash)."""
    if text.isascii() and text.isprintable():  # the usual case: no regex pass
        return text
    return UNSAFE.sub(_escaped, text)


def printable_lines(text: str) -> str:
    """:func:`one_line` for text of several lines (a report written to a terminal): newline
    and tab are kept, every other character of :data:`UNSAFE_RANGES` is escaped the same way."""
    return UNSAFE_BUT_LINES.sub(_escaped, text)


def escapes(text: str, *, keep_lines: bool = False) -> list[tuple[int, str]]:
    """(position, escaped form) of every character :func:`one_line` escapes in ``text`` (or
    :func:`printable_lines` with ``keep_lines``), in order: for rewriting styled text whose
    spans must move with the characters."""
    if text.isascii() and text.isprintable():
        return []
    pattern = UNSAFE_BUT_LINES if keep_lines else UNSAFE
    return [(m.start(), _escaped(m)) for m in pattern.finditer(text)]


def has_control(text: str) -> bool:
    """Whether :func:`one_line` would change ``text``."""
    return not (text.isascii() and text.isprintable()) and UNSAFE.search(text) is not None


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
