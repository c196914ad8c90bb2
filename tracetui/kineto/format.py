"""The Kineto format's entry in the list of formats (:mod:`tracetui.formats`)."""

from __future__ import annotations

from ..io.formats import CacheSpec, FileRole, Format, Progress
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_kineto

    return load_kineto(path, progress=progress)


def _codec():
    from . import persist

    return persist


#: a Kineto trace's cache entry (also that of every format whose trace is a plain KinetoTrace)
CACHE = CacheSpec(kind=sniff.FORMAT_NAME, codec=_codec)

FORMAT = Format(
    name=sniff.FORMAT_NAME, title="PyTorch profiler trace", role=FileRole.TRACE,
    suffixes=(".json", ".json.gz", ".gz", ".json.zst", ".zst"),
    recognise=sniff.recognise, load=_load, looks_for="'traceEvents'", cache=CACHE, child_process=True,
    beside=frozenset({FileRole.ET, FileRole.DRIVER, FileRole.MEMORY}), identify=sniff.identify)
