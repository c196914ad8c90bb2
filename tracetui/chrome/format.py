"""The generic Chrome trace JSON format's entry in the list of formats (:mod:`tracetui.formats`).

Before the Kineto format in the list: it says YES only for a Chrome trace with no sign of
the PyTorch profiler (:mod:`.sniff`).  Its trace is a plain
:class:`~tracetui.kineto.trace.KinetoTrace` (``source_format`` ``chrome``): the Kineto cache
entry kind."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Progress
from ..kineto.format import CACHE
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_chrome

    return load_chrome(path, progress=progress)


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="Chrome trace JSON", role=FileRole.TRACE, suffixes=(".json", ".json.gz"),
    recognise=sniff.recognise, load=_load, looks_for="'traceEvents'", cache=CACHE, child_process=True)
