"""Is this file an Nsight Systems SQLite export (``nsys export --type sqlite``), or a report
that must be exported first?  Light: the standard library only (no sqlite3, no numpy).

An SQLite database starts with :data:`SQLITE_MAGIC`.  The schema of an export (the
``CREATE TABLE`` statements SQLite keeps near the start of the file) names ``StringIds``,
``NVTX_EVENTS`` or the ``CUPTI_ACTIVITY_KIND_*`` / ``TARGET_INFO_*`` tables: with one of
them in the first 64 KiB the file is an export; any other SQLite database is a *maybe*
(no other format reads SQLite, and the loader says what it lacks).  A report
(``.nsys-rep``, the older ``.qdrep``) or a capture stream (``.qdstrm``) is known by its name
only: a *maybe*, and the loader says to export it.
"""

from __future__ import annotations

from ..io.formats import Head, Recognition

#: the format's name (``tracetui.formats``); a trace read from an export says so
FORMAT_NAME = "nsys"
#: the first 16 bytes of every SQLite 3 database file
SQLITE_MAGIC = b"SQLite format 3\x00"
#: names in the schema text of an export (any one suffices)
EXPORT_MARKERS = (b"StringIds", b"NVTX_EVENTS", b"CUPTI_ACTIVITY_KIND_", b"TARGET_INFO_", b"META_DATA_EXPORT")
#: Nsight Systems files that are not SQLite: reports and capture streams, to be exported
REPORT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")
#: file names a folder of exports is listed by
SUFFIXES = (".sqlite", ".sqlite3")


def recognise(head: Head) -> Recognition:
    """YES for an SQLite file whose schema names an export's tables; MAYBE for any other
    SQLite file (compressed or not), and for a report or capture stream by its name."""
    if head.raw.startswith(SQLITE_MAGIC):
        return Recognition.YES if any(m in head.raw for m in EXPORT_MARKERS) else Recognition.MAYBE
    if head.compressed and head.text.startswith(SQLITE_MAGIC):
        return Recognition.MAYBE
    return Recognition.MAYBE if head.name_ends(*REPORT_SUFFIXES) else Recognition.NO
