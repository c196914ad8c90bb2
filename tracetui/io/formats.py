"""What a trace format is, for the one list of formats (:mod:`tracetui.formats`).

A format plug-in is one folder (``tracetui/<format>/``) whose ``format.py`` defines
``FORMAT``, a :class:`Format`: how to recognise a file of it from its first bytes and its
name (:class:`Head`), how to load it from a path, what role it plays beside other files
(:class:`FileRole`) and how a loaded trace is kept in the cache (:class:`CacheSpec`).
Nothing here knows any format; the formats know only this module.

Also here, defined once: :data:`Progress`, the callback every loader reports through.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceFileError
from .containers import UTF8_BOM, compression_of, unreadable, zstd_module
from .files import open_regular, trace_path

#: ``progress(message, fraction)``: what a load is doing now and how far it is (0..1)
Progress = Callable[[str, float], None]

#: bytes of content a format's recognition may look at
HEAD_BYTES = 1 << 16
#: compressed bytes read per step to fill a head (each step inflates at most the head's size)
_RAW_STEP = 1 << 16
#: whitespace (and NUL padding) skipped before the first byte of content
_BLANK = b" \t\r\n\x00"
#: bytes read per step while skipping leading whitespace
_BLANK_STEP = 1 << 20
#: most leading blank content inflated from a compressed file before its head is given up as
#: blank (the full read then says what it is): bounds what recognising a bomb costs
GZIP_BLANK_MAX = 64 << 20


def no_progress(message: str, fraction: float) -> None:
    """A :data:`Progress` that reports nothing."""


@dataclass(frozen=True)
class Head:
    """The start of a file, as a format's recognition sees it.

    ``raw``: the first bytes on disk (up to :data:`HEAD_BYTES`); ``text``: the first
    :data:`HEAD_BYTES` of the content after leading whitespace and NUL padding
    (decompressed when ``compressed``, "gzip" or "zstd"; a UTF-8 byte order mark dropped);
    ``blank``: how many whitespace bytes were skipped before it; ``whole``: ``text`` is all
    of the content (after the blank); ``size``: the file's size on disk; ``unreadable``: what
    the file is when tracetui does not read it, and what to do (``"is a zip archive: unzip it
    first"``, :func:`~tracetui.io.containers.unreadable`), for the message when no format
    claims it.
    """

    path: str
    raw: bytes
    text: bytes
    compressed: str | None = None
    blank: int = 0
    whole: bool = True
    size: int = 0
    unreadable: str | None = None

    @property
    def name(self) -> str:
        """The file's name (the last part of its path)."""
        return os.path.basename(self.path)

    def name_ends(self, *suffixes: str) -> bool:
        """Does the file name end with one of ``suffixes`` (any case)?"""
        low = self.name.lower()
        return any(low.endswith(s) for s in suffixes)


def read_head(path: str | os.PathLike[str], limit: int = HEAD_BYTES) -> Head:
    """The :class:`Head` of ``path``: reads the first bytes, inflates a gzip or zstd file only
    as far as ``limit`` bytes of content (at most :data:`GZIP_BLANK_MAX` of leading blank
    content before it), and skips leading whitespace in linear time (bounded steps, never the
    whole file in memory).

    Only a regular file is read (:func:`~tracetui.io.files.open_regular`).  A compressed stream
    that is not valid from its first byte, or that ends before any content, raises
    :class:`~tracetui.errors.TraceFileError` with the same message the full read gives.
    """
    p = trace_path(path)
    with open_regular(p) as fh:
        size = os.fstat(fh.fileno()).st_size
        raw = fh.read(min(size, HEAD_BYTES))
        compression = compression_of(raw)
        if compression == "zstd" and zstd_module() is None:
            compression = None  # no decoder: the content cannot be looked at (unreadable says so)
        if compression:
            text, blank, whole, start = _compressed_head(p, fh, raw, size, limit, compression)
            return Head(p, raw, text, compression, blank, whole, size, unreadable(raw, start))
        text, blank, whole = _plain_head(fh, raw, size, limit)
        return Head(p, raw, text, None, blank, whole, size, unreadable(raw))


def _skip_blank(chunk: bytes, at_start: bool) -> bytes:
    if at_start and chunk.startswith(UTF8_BOM):
        chunk = chunk[3:]
    return chunk.lstrip(_BLANK)


def _plain_head(fh, raw: bytes, size: int, limit: int) -> tuple[bytes, int, bool]:
    pos = len(raw)
    text = _skip_blank(raw, True)
    blank = len(raw) - len(text)
    while not text and pos < size:  # a file padded with whitespace: skip it in bounded steps
        chunk = fh.read(min(_BLANK_STEP, size - pos))
        if not chunk:
            break
        pos += len(chunk)
        text = chunk.lstrip(_BLANK)
        blank += len(chunk) - len(text)
    if len(text) < limit and pos < size:
        more = fh.read(min(limit - len(text), size - pos))
        pos += len(more)
        text += more
    text = text[:limit]
    return text, blank, blank + len(text) >= size


def _compressed_head(path: str, fh, raw: bytes, size: int, limit: int,
                     compression: str) -> tuple[bytes, int, bool, bytes]:
    """(text, blank, whole, the first bytes of content before any blank was skipped) of a
    compressed file: its first stream inflated a bounded step at a time."""
    from .inflate import Stream

    s = Stream(compression)
    feed = raw
    text = start = b""
    blank = 0
    got_any = False
    while True:
        try:
            out = s.inflate(feed, limit - len(text) if text else HEAD_BYTES)
        except s.errors as exc:
            if not got_any:
                raise TraceFileError(path, f"not a valid {compression} stream ({exc})", position="byte 0") from None
            return text, blank, False, start
        feed = b""
        if out:
            if not got_any:
                start = out[:1024]
            got_any = True
            if not text:
                stripped = _skip_blank(out, blank == 0)
                blank += len(out) - len(stripped)
                out = stripped
                if not out and blank > GZIP_BLANK_MAX:
                    return b"", blank, False, start  # no content in sight: the full read says what it is
            text += out
        if len(text) >= limit:
            return text[:limit], blank, False, start
        if s.eof:
            rest = s.unused_data + fh.read(_RAW_STEP)  # another member or frame, or padding
            return text, blank, not rest.strip(b"\x00") and not fh.read(1), start
        if s.needs_input:
            feed = fh.read(_RAW_STEP)
            if not feed:
                if not got_any:
                    raise TraceFileError(path, f"{compression} stream ends after {size:,} bytes, before any data "
                                               "could be decompressed")
                return text, blank, False, start


class Recognition(enum.IntEnum):
    """How sure a format's recognition is.  :mod:`tracetui.formats` takes the surest; among
    equals, the first in its list."""

    #: not this format
    NO = 0
    #: nothing else fits and this format's loader says best what is wrong (a file cut in its header)
    MAYBE = 1
    #: the content says so
    YES = 2


class FileRole(enum.Enum):
    """What a file is to the others opened beside it."""

    #: the events shown in the browser (CPU and device timelines): one per run
    TRACE = "trace"
    #: a PyTorch Execution Trace: op details linked to a Kineto trace of the same run
    ET = "et"
    #: driver calls (eBPF / LD_PRELOAD tracers): a trace alone, or linked to a Kineto trace's calls
    DRIVER = "driver"
    #: the allocator's memory (a CUDA memory snapshot): a trace alone, or the memory of a Kineto trace's run
    MEMORY = "memory"


@dataclass(frozen=True)
class CacheSpec:
    """How a loaded trace is kept in the on-disk cache (:mod:`tracetui.store.traces`).

    ``kind``: the entry kind written in the cache file's header (:mod:`tracetui.io.colfile`);
    ``codec()``: the module that stores one (imported when first needed, so that the list of
    formats costs nothing to import), with ``CLASSES`` (the dataclasses an entry holds, by
    name), ``save(trace, target, extra)`` and ``restore(values, path)``.  Formats whose traces
    are the same model share one spec (and one ``kind``).
    """

    kind: str
    codec: Callable[[], Any]

    @property
    def classes(self) -> dict[str, type]:
        return self.codec().CLASSES

    def save(self, trace: Any, target: str | os.PathLike[str], extra: dict[str, Any]) -> Any:
        return self.codec().save(trace, target, extra)

    def restore(self, values: dict[str, Any], path: str) -> Any:
        return self.codec().restore(values, path)


@dataclass(frozen=True)
class Format:
    """One format tracetui reads.

    ``name``: a stable id (what a trace's ``source_format`` says, JSON outputs, cache
    headers); ``title``: what the user reads ("PyTorch profiler trace"); ``role``;
    ``suffixes``: file names a folder of a job is listed by; ``recognise(head)``: a :class:`Recognition`, is
    this file of the format (content first; the name only where the content cannot tell);
    ``load(path, progress)``: the trace, read from the path; ``looks_for``: what
    recognition looks for, for the message that says a file is no trace at all;
    ``cache``: how a trace is cached (None: never); ``child_process``: a big file is parsed
    in a child process that writes the cache entry; ``beside``: the roles of the files that
    may be opened with it; ``identify(head)``: the rank facts a job's discovery reads
    (``rank``, ``world_size``, ``backend``, ``pids``), None where the format has none.
    """

    name: str
    title: str
    role: FileRole
    suffixes: tuple[str, ...]
    recognise: Callable[[Head], Recognition]
    load: Callable[[str, Progress | None], Any]
    looks_for: str
    cache: CacheSpec | None = None
    child_process: bool = False
    beside: frozenset[FileRole] = field(default_factory=frozenset)
    identify: Callable[[str, Head], dict[str, Any]] | None = None
