"""The driver-call trace format's entry in the list of formats (:mod:`tracetui.formats`).

Not cached: a driver-call trace is read in well under a second (bench/bench_driver.py)."""

from __future__ import annotations

from ..io.formats import FileRole, Format, Head, Progress, Recognition
from .sniff import FORMAT_NAME, looks_like_driver_lines

#: file names of JSON Lines: a file of them with no event line is still told it is no driver-call trace
SUFFIXES = (".jsonl", ".jsonl.gz")


def recognise(head: Head) -> Recognition:
    """YES when the first JSON object line names a layout by its keys; MAYBE for a ``.jsonl``
    file whose lines do not (the loader says what they are)."""
    if looks_like_driver_lines(head.text):
        return Recognition.YES
    return Recognition.MAYBE if head.name_ends(*SUFFIXES) else Recognition.NO


def _load(path: str, progress: Progress | None = None):
    from .loader import load_driver

    return load_driver(path, progress=progress)


FORMAT = Format(
    name=FORMAT_NAME, title="driver-call trace", role=FileRole.DRIVER, suffixes=SUFFIXES, recognise=recognise,
    load=_load, looks_for="JSON object line", beside=frozenset({FileRole.TRACE}))
