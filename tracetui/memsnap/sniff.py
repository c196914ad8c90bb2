"""Is this file a CUDA memory snapshot (``torch.cuda.memory._dump_snapshot``)?  Light: the
standard library only (no numpy, no pickle); it runs on every file opened.

A snapshot is a pickle: its first byte is ``PROTO`` (``0x80``) followed by the protocol (2 to
5), and its first key, ``segments`` (then ``device_traces``), is pickled near the start as a
short string.  A pickle with neither key in its first 64 KiB, or a ``.pickle``/``.pkl`` file,
is a *maybe*: no other format reads pickles, and the loader says what the file lacks.
"""

from __future__ import annotations

from ..io.formats import Head, Recognition

#: the format's name (``tracetui.formats``); a trace read from a snapshot says so
FORMAT_NAME = "memsnap"
#: file names a snapshot usually has (a maybe by name alone)
SUFFIXES = (".pickle", ".pkl")
#: the pickle protocols a snapshot may be written with (Python 3.14 writes 5)
PROTOCOLS = range(2, 6)
#: the top-level keys, as the pickler writes a short string: SHORT_BINUNICODE (protocol 4+),
#: BINUNICODE (protocols 2-3) and SHORT_BINSTRING (a Python 2 str)
KEY_MARKERS = tuple(op + key for key in (b"segments", b"device_traces")
                    for op in (bytes((0x8C, len(key))), b"X" + len(key).to_bytes(4, "little"),
                               b"U" + bytes((len(key),))))


def pickle_protocol(raw: bytes) -> int | None:
    """The protocol a pickle's ``PROTO`` opcode names (its first two bytes); None when the
    bytes do not start with one."""
    return raw[1] if len(raw) >= 2 and raw[0] == 0x80 else None


def recognise(head: Head) -> Recognition:
    """YES for a pickle of protocol 2-5 whose head holds the key ``segments`` or
    ``device_traces``; MAYBE for any other pickle and for a ``.pickle``/``.pkl`` name."""
    proto = pickle_protocol(head.raw)
    if proto is not None and proto in PROTOCOLS and any(m in head.raw for m in KEY_MARKERS):
        return Recognition.YES
    if proto is not None or head.name_ends(*SUFFIXES):
        return Recognition.MAYBE
    return Recognition.NO
