"""Is this file a JAX/XLA profile (an XSpace protobuf, ``*.xplane.pb``)?  Light: the standard
library only (no numpy, no reader): it runs on every file opened.

An XSpace starts with its first plane: field 1, length-delimited (tag byte ``0x0a``), a varint
length, then the plane's own fields -- its ``id`` (a varint, field 1) when not 0, then its
``name`` (field 2).  The head is walked for those first fields with their wire types checked and
the length held to the file's size; a first plane named as the profiler names planes
(``/device:``, ``/host:``, ``Task Environment``) says YES.  Anything else with the
``.xplane.pb`` name is a *maybe*, and the loader says what is wrong at which byte.
"""

from __future__ import annotations

from ..io.formats import Head, Recognition

#: the format's name (``tracetui.formats``); a trace read from an XPlane says so
FORMAT_NAME = "xplane"
#: file names of XPlane files (what the TensorBoard profile plugin and ``jax.profiler`` write)
SUFFIXES = (".xplane.pb",)
#: the same, compressed (read through gzip, known by name only)
GZIP_SUFFIXES = (".xplane.pb.gz",)
#: the names the profiler gives planes (the first plane's name must start with one)
PLANE_NAME_PREFIXES = (b"/device:", b"/host:", b"Task Environment", b"/custom:")


def _varint(buf: bytes, p: int) -> tuple[int, int] | None:
    value = shift = 0
    for _ in range(10):
        if p >= len(buf):
            return None
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p
        shift += 7
    return None


def first_plane_name(raw: bytes, size: int) -> bytes | None:
    """The name of the first plane when ``raw`` (the file's first bytes, of ``size`` in all)
    starts as an XSpace does; None when it does not."""
    if not raw.startswith(b"\x0a"):
        return None
    got = _varint(raw, 1)
    if got is None:
        return None
    length, p = got
    if length > size - p:
        return None
    end = p + length
    for _ in range(2):  # the plane's id (field 1, varint) may come first, then its name (field 2)
        tag = _varint(raw, p)
        if tag is None or p >= end:
            return None
        key, p = tag
        if key == 0x08:
            got = _varint(raw, p)
            if got is None:
                return None
            p = got[1]
        elif key == 0x12:
            got = _varint(raw, p)
            if got is None or got[1] + got[0] > min(end, len(raw)):
                return None
            return raw[got[1]:got[1] + got[0]]
        else:
            return None
    return None


def recognise(head: Head) -> Recognition:
    """YES for an XSpace whose first plane is named as the profiler names planes; MAYBE for any
    other file named ``*.xplane.pb`` (or ``.xplane.pb.gz``); NO otherwise."""
    if head.compressed is None:
        name = first_plane_name(head.raw, head.size)
        if name is not None and name.startswith(PLANE_NAME_PREFIXES):
            return Recognition.YES
    return Recognition.MAYBE if head.name_ends(*SUFFIXES, *GZIP_SUFFIXES) else Recognition.NO
