"""The formats tracetui reads: the one list, and the questions everything else asks it.

Each member of :class:`FileKind` is one format plug-in (a folder ``tracetui/<format>/``
whose ``format.py`` defines a :class:`~tracetui.io.formats.Format`), in the order their
recognition is tried.  Session, cache, job discovery and the command line ask this module
which format a file is (:func:`detect`, by content: :func:`~tracetui.io.formats.read_head`
reads only the head), how to load it (:func:`load`), how a trace of it is cached
(:func:`cache_spec_of`, :func:`cache_kinds`) and what a trace already loaded is
(:func:`kind_of_trace`); no other module spells a format's name.

Adding a format: its folder, one member here, one import-linter line (CONTRIBUTING.md).
"""

from __future__ import annotations

import enum
import os
from typing import Any

from .chrome.format import FORMAT as _CHROME
from .driver.format import FORMAT as _DRIVER
from .errors import TraceFormatError
from .et.format import FORMAT as _ET
from .io.files import trace_path
from .io.formats import CacheSpec, FileRole, Format, Head, Progress, Recognition, read_head
from .kineto.format import FORMAT as _KINETO
from .memsnap.format import FORMAT as _MEMSNAP
from .nsys.format import FORMAT as _NSYS
from .rocprof.format import FORMAT as _ROCPROF
from .xplane.format import FORMAT as _XPLANE


class FileKind(enum.Enum):
    """The formats, in the order their recognition is tried (the first of the surest wins).
    CHROME comes before KINETO: both read ``traceEvents``; CHROME says YES only for a file
    with no sign of the PyTorch profiler, and KINETO takes every other."""

    CHROME = _CHROME
    KINETO = _KINETO
    ET = _ET
    DRIVER = _DRIVER
    NSYS = _NSYS
    XPLANE = _XPLANE
    ROCPROF = _ROCPROF
    MEMSNAP = _MEMSNAP

    @property
    def spec(self) -> Format:
        return self.value

    @property
    def role(self) -> FileRole:
        return self.value.role

    @property
    def title(self) -> str:
        return self.value.title


def kind_named(name: str) -> FileKind:
    """The kind whose format is called ``name`` (a trace's ``source_format``); KeyError when none."""
    for kind in FileKind:
        if kind.value.name == name:
            return kind
    raise KeyError(name)


def kind_of_trace(trace: Any) -> FileKind:
    """The format a loaded trace was read from (its ``source_format``)."""
    return kind_named(getattr(trace, "source_format", _KINETO.name))


def other_format(trace: Any) -> FileKind | None:
    """The format of a trace in the Kineto model that was read from another format than a
    PyTorch profiler trace or a driver-call trace (those say what they are in their own
    words): what ``info`` and the status line name; None for those two."""
    kind = kind_of_trace(trace)
    return None if kind in (FileKind.KINETO, FileKind.DRIVER) else kind


def recognise(head: Head) -> FileKind | None:
    """The format of a file with this head: the surest match, the first in the list among
    equals; None when no format claims it."""
    return _surest(head)[0]


def _surest(head: Head) -> tuple[FileKind | None, Recognition]:
    best, best_match = None, Recognition.NO
    for kind in FileKind:
        m = kind.value.recognise(head)
        if m > best_match:
            best, best_match = kind, m
            if m == Recognition.YES:
                break
    return best, best_match


def detect(path: str | os.PathLike[str]) -> FileKind:
    """The format of the file at ``path``, by content (its head only).  Raises
    :class:`~tracetui.errors.TraceFileError` when it cannot be read, and
    :class:`~tracetui.errors.TraceFormatError` when it is empty, of no known format, or a
    container or encoding tracetui does not read and no format claims for sure (a zip
    archive, UTF-16 text: ``Head.unreadable`` says what it is and what to do)."""
    p = trace_path(path)
    head = read_head(p)
    kind, match = _surest(head)
    if head.unreadable and match != Recognition.YES:
        raise TraceFormatError(p, head.unreadable)
    if kind is not None:
        return kind
    if head.whole and not head.text:
        raise TraceFormatError(p, "file is empty")
    raise TraceFormatError(p, unknown_format_message())


def unknown_format_message() -> str:
    """What a file of no known format is told: every format's title, and what each looks for."""
    titles = [k.value.title for k in FileKind]
    looks = list(dict.fromkeys(k.value.looks_for for k in FileKind))  # each once, in list order
    return f"not a {_either(titles)} (no {_either(looks)} found)"


def _either(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def load(path: str | os.PathLike[str], progress: Progress | None = None, kind: FileKind | None = None) -> Any:
    """The trace at ``path``, read by its format's loader (``kind``: when already detected)."""
    p = trace_path(path)
    return (kind or detect(p)).value.load(p, progress)


def cache_spec_of(kind: FileKind) -> CacheSpec | None:
    """How a trace of ``kind`` is cached (None: never)."""
    return kind.value.cache


def cache_kinds() -> dict[str, CacheSpec]:
    """Every cache entry kind (``kineto``, ``et`` ...) with its spec; formats that share a
    model share one entry kind."""
    return {k.value.cache.kind: k.value.cache for k in FileKind if k.value.cache is not None}


def job_suffixes() -> tuple[str, ...]:
    """File names a job folder is listed by: those of the formats a job's ranks are made of
    (traces and Execution Traces)."""
    out: list[str] = []
    for k in FileKind:
        if k.value.role in (FileRole.TRACE, FileRole.ET):
            out += [s for s in k.value.suffixes if s not in out]
    return tuple(out)
