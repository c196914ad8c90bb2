"""Padding: the whitespace and NUL bytes a trace file may hold around its JSON (a preallocated
file, a profiler killed while writing, a stream of spaces), found in C-speed blocks.

A block that is one padding byte repeated is passed by ``bytes.startswith`` against a run of
that byte (``memcmp``: about 20 GB/s); any other block is mapped by ``bytes.translate`` and
searched with ``rfind``/``find``.  Linear and memory bounded: a gigabyte of padding costs
well under a tenth of a second here (the byte-at-a-time loop these replace took minutes).
Light: no numpy (the reader uses it on every file).
"""

from __future__ import annotations

#: the bytes a file may be padded with around its JSON (whitespace and NUL)
PADDING = b" \t\r\n\x00"
#: trailing padding kept after the content when a file is read; a longer run is not held in
#: memory (it is counted: ``FileBytes.padding``)
PADDING_KEPT = 1 << 20

#: every byte -> 0 for padding, 1 for content
_CONTENT_TABLE = bytes(0 if c in PADDING else 1 for c in range(256))
#: bytes compared per ``startswith`` call against a run of one padding byte
_RUN = 1 << 20
_runs: dict[int, memoryview] = {}
#: first and largest block a scan looks at (the blocks grow 4x from the first)
_FIRST_BLOCK, _LAST_BLOCK = 1 << 16, 1 << 24


def _run_of(byte: int) -> memoryview:
    run = _runs.get(byte)
    if run is None:
        run = _runs[byte] = memoryview(bytes([byte]) * _RUN)
    return run


def one_byte_run(data: bytes | bytearray, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is one byte repeated (no copy: ``memcmp`` in 1 MiB steps)."""
    if end <= start:
        return True
    if not hasattr(data, "startswith"):
        return data.count(data[start:start + 1], start, end) == end - start
    run = _run_of(data[start])
    for pos in range(start, end, _RUN):
        if not data.startswith(run[:min(_RUN, end - pos)], pos):
            return False
    return True


def content_end(data: bytes | bytearray) -> int:
    """Exclusive end of ``data`` without its trailing whitespace and NUL padding, scanned
    backwards in blocks growing from 64 KiB to 16 MiB."""
    end = len(data)
    if not end or data[end - 1] not in PADDING:
        return end
    step = _FIRST_BLOCK
    while end > 0:
        start = max(0, end - step)
        if not (data[end - 1] in PADDING and one_byte_run(data, start, end)):
            last = bytes(data[start:end]).translate(_CONTENT_TABLE).rfind(1)
            if last >= 0:
                return start + last + 1
        end = start
        step = min(step * 4, _LAST_BLOCK)
    return 0


def content_start(data: bytes | bytearray) -> int:
    """Position of the first byte of ``data`` that is not whitespace or NUL padding
    (``len(data)`` when there is none); blocks as in :func:`content_end`."""
    n = len(data)
    if not n or data[0] not in PADDING:
        return 0
    start, step = 0, _FIRST_BLOCK
    while start < n:
        end = min(n, start + step)
        if not (data[start] in PADDING and one_byte_run(data, start, end)):
            first = bytes(data[start:end]).translate(_CONTENT_TABLE).find(1)
            if first >= 0:
                return start + first
        start = end
        step = min(step * 4, _LAST_BLOCK)
    return n
