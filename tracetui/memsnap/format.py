"""The CUDA memory snapshot's entry in the list of formats (:mod:`tracetui.formats`).

Role :data:`~tracetui.io.formats.FileRole.MEMORY`: alone, the snapshot is the trace (its
devices' allocator lanes, the profiler's annotations, the memory answers); beside a PyTorch
profiler trace of the same run, the trace is shown and the snapshot answers the memory
questions, its times put on the trace's clock.  Not cached: the pickle is read at C speed and
holds nothing a cache entry would save."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Progress
from . import sniff


def _load(path: str, progress: Progress | None = None):
    from .loader import load_memsnap

    return load_memsnap(path, progress=progress)


FORMAT = Format(
    name=sniff.FORMAT_NAME, title="CUDA memory snapshot", role=FileRole.MEMORY, suffixes=sniff.SUFFIXES,
    recognise=sniff.recognise, load=_load, looks_for="pickled 'segments'", beside=frozenset({FileRole.TRACE}))
