"""Is a trace file written to its end?  The content half of the rule that decides when a file a
profiler is still writing may be read (the other half, a size that holds still over two polls, is
:mod:`tracetui.follow.watch`'s).

* **gzip** (the file starts with ``1f 8b``): every member inflates to its end and its trailer
  checks: the CRC-32 and the length (ISIZE) of the last 8 bytes of each member equal those of
  the data inflated.  The last 8 bytes alone prove nothing (any 8 bytes of deflate data look like a
  trailer), so the file is inflated once with ISA-L, the output thrown away as it comes (54 MB of
  JSON: 15 ms of CPU; bounded memory).  A writer that is still writing has no trailer yet: the
  stream ends early.
* **JSON** (anything else): the last non-blank byte closes the document (``}`` or ``]``), then
  the whole document parses (``msgspec`` skipping every value without building it: 54 MB in
  25-50 ms of CPU).  A file too large to load in the memory left (the loader's own rule,
  :func:`~tracetui.io.files.available_memory_bytes`) is not read here: the loader refuses it in
  one line without reading it.  The tail alone is not enough: a writer's buffer often ends just after an
  event's ``}``.
* **JSON Lines** (:func:`lines_complete`, a driver-call trace growing line by line): the file
  ends with a newline (a gzip one: as above).

Each check returns None when the file is complete, else a short phrase saying why not; a file
that is gone, unreadable or not a regular file raises :class:`~tracetui.errors.TraceFileError`
(:func:`~tracetui.io.files.open_regular`: a FIFO is never opened for a blocking read).
"""

from __future__ import annotations

import os
from typing import BinaryIO

import msgspec
from isal import isal_zlib

from ..io.files import open_regular
from ..io.limits import MEMORY_FACTOR, available_memory_bytes

GZIP_MAGIC = b"\x1f\x8b"
#: bytes read from the end of a JSON file to find its last non-blank byte
TAIL_BYTES = 4096
#: compressed bytes fed to the inflater at a time, and the most it may give back per call
_IN_STEP = 1 << 20
_OUT_STEP = 1 << 22
_BLANK = b" \t\r\n"


class _Skip(msgspec.Struct):
    """A JSON object whose every member is skipped (parsed, never built)."""


_OBJECT = msgspec.json.Decoder(_Skip)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])


def trace_complete(path: str) -> str | None:
    """None when the trace file at ``path`` is complete (module docstring), else why not."""
    with open_regular(path) as f:
        if f.read(2) == GZIP_MAGIC:
            return gzip_complete(f)
        return json_complete(f)


def lines_complete(path: str) -> str | None:
    """None when the JSON Lines file at ``path`` ends with a whole line (a gzip one: its
    trailer checks), else why not."""
    with open_regular(path) as f:
        if f.read(2) == GZIP_MAGIC:
            return gzip_complete(f)
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return "empty"
        f.seek(size - 1)
        return None if f.read(1) == b"\n" else "the last line is not finished"


def gzip_complete(f: BinaryIO) -> str | None:
    """None when every gzip member of ``f`` inflates to its end and its trailer checks (only zero
    padding after the last one), else why not."""
    f.seek(0)
    d = None  # the inflater of the member being read; None between members
    members = 0
    buf = b""
    while True:
        if len(buf) < 2:
            more = f.read(_IN_STEP)
            if not more and not buf:
                break
            buf += more
        if d is None:  # a member starts here, or the zero padding that may end the file
            if not buf.strip(b"\x00"):
                buf = b""
                continue
            if buf[:2] != GZIP_MAGIC:
                return "bytes after the gzip data"
            d = isal_zlib.decompressobj(16 + isal_zlib.MAX_WBITS)
        try:
            d.decompress(buf, _OUT_STEP)
            while d.unconsumed_tail and not d.eof:
                d.decompress(d.unconsumed_tail, _OUT_STEP)
        except isal_zlib.error as exc:
            return f"the gzip data does not check ({exc})"
        if d.eof:
            members += 1
            buf, d = d.unused_data, None
        else:
            buf = b""
    if d is not None:
        return "the gzip stream has no end yet (no trailer)"
    return None if members else "no gzip member"


def json_complete(f: BinaryIO) -> str | None:
    """None when ``f`` holds one whole JSON document, else why not (module docstring)."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return "empty"
    f.seek(max(0, size - TAIL_BYTES))
    tail = f.read().rstrip(_BLANK)
    if not tail:
        return "only blanks at its end"
    if tail[-1:] not in (b"}", b"]"):
        return "the JSON document is not closed yet"
    avail = available_memory_bytes()
    if avail is not None and size * MEMORY_FACTOR > avail:
        return None  # too large to load: the loader refuses it in one line before reading it
    # read, not mapped: a file cut shorter while mapped would kill the process (SIGBUS)
    f.seek(0)
    data = f.read(size)
    start = 3 if data[:3] == b"\xef\xbb\xbf" else 0  # a UTF-8 byte order mark, as the loader allows
    while data[start:start + 1] in (b" ", b"\t", b"\r", b"\n"):
        start += 1
    decoder = _ARRAY if data[start:start + 1] == b"[" else _OBJECT
    try:
        decoder.decode(memoryview(data)[start:])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return f"the JSON document does not parse yet ({exc})"
    return None
