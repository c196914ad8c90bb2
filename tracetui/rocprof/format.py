"""The rocprofv3 format's entry in the list of formats (:mod:`tracetui.formats`).

A trace read from rocprofv3 output is a plain :class:`~tracetui.kineto.trace.KinetoTrace` (its
``source_format`` says ``rocprof``), so it shares the Kineto cache entry kind."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Progress
from ..kineto.format import CACHE
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_rocprof

    return load_rocprof(path, progress=progress)


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="AMD rocprofv3 trace", role=FileRole.TRACE, suffixes=sniff.SUFFIXES,
    recognise=sniff.recognise, load=_load, looks_for="'rocprofiler-sdk-tool'", cache=CACHE, child_process=True)
