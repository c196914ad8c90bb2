"""The XPlane format's entry in the list of formats (:mod:`tracetui.formats`).

A trace read from an XPlane is a plain :class:`~tracetui.kineto.trace.KinetoTrace` (its
``source_format`` says ``xplane``), so it shares the Kineto cache entry kind; a big file is read
in a child process that writes the entry, as a big Kineto trace is."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Progress
from ..kineto.format import CACHE
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_xplane

    return load_xplane(path, progress=progress)


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="JAX/XLA XPlane profile", role=FileRole.TRACE,
    suffixes=(*sniff.SUFFIXES, *sniff.GZIP_SUFFIXES), recognise=sniff.recognise, load=_load,
    looks_for="XSpace plane", cache=CACHE, child_process=True)
