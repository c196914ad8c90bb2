"""The Nsight Systems SQLite export's entry in the list of formats (:mod:`tracetui.formats`).

A trace read from an export is a plain :class:`~tracetui.kineto.trace.KinetoTrace` (its
``source_format`` says ``nsys``), so it shares the Kineto cache entry kind; a big export is
read in a child process that writes the entry, as a big Kineto trace is."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Progress
from ..kineto.format import CACHE
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_nsys

    return load_nsys(path, progress=progress)


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="Nsight Systems SQLite export", role=FileRole.TRACE, suffixes=sniff.SUFFIXES,
    recognise=sniff.recognise, load=_load, looks_for="SQLite header", cache=CACHE,
    child_process=True)
