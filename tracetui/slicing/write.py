"""Writing slices: a Kineto trace cut to some events, its Execution Trace cut to the same ops,
and a job folder cut to some ranks (each file written atomically; ``.gz`` compresses).

The Kineto file is the Chrome-trace export of the kept events (``export/chrome.py``): every
top-level key of the source (``deviceProperties``, ``distributedInfo``, ``baseTimeNanoseconds``
...), the process and thread names of the kept events, the events with their args byte for
byte and exact timestamps, ``ac2g`` flows for every kept launch and its GPU work, and the
``fwdbwd`` flows whose two ends are kept; plus ``tracetui_slice`` saying what was kept.

The ET keeps the nodes linked to a kept Kineto event, everything below them and the chain
above them (so the file is a tree again), each node byte for byte; the other top-level keys
are kept as they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
import numpy as np

from ..errors import TraceError
from ..export.chrome import chrome_pieces
from ..io import jsonout
from ..io.files import read_trace_bytes, write_atomically
from ..kineto.trace import KinetoTrace


def _gzip(pieces: Iterable[bytes]) -> Iterator[bytes]:
    from isal import isal_zlib

    comp = isal_zlib.compressobj(isal_zlib.ISAL_DEFAULT_COMPRESSION, isal_zlib.DEFLATED, 31)
    for p in pieces:
        out = comp.compress(p)
        if out:
            yield out
    yield comp.flush()


def write_pieces(path: str, pieces: Iterable[bytes]) -> None:
    """Write ``pieces`` to ``path`` atomically and durably (as exports are), gzip-compressed
    when it ends in ``.gz``."""
    try:
        write_atomically(path, _gzip(pieces) if path.endswith(".gz") else pieces, durable=True)
    except OSError as exc:
        raise TraceError(path, f"cannot write: {exc.strerror or exc}") from None


def kineto_slice_pieces(kt: KinetoTrace, events: np.ndarray, what: dict[str, Any]) -> Iterator[bytes]:
    """The Kineto trace of ``events`` as JSON pieces (``what``: the ``tracetui_slice`` key)."""
    note = {"source": kt.name_of_file, **what, "events": int(np.unique(events).size)}
    return chrome_pieces(kt, events, ("tracetui_slice", note))


def write_kineto_slice(kt: KinetoTrace, events: np.ndarray, path: str, what: dict[str, Any]) -> None:
    """Write the Kineto trace of ``events`` to ``path`` (``what``: the ``tracetui_slice`` key)."""
    write_pieces(path, kineto_slice_pieces(kt, events, what))


class _NodeId(msgspec.Struct):
    id: Any = None


def et_positions(et: Any, link: Any, events: np.ndarray) -> np.ndarray:
    """ET node positions to keep for the Kineto ``events`` (see the module docstring)."""
    n = len(et.ids)
    linked = np.zeros(n, dtype=bool)
    pos = link.kineto_to_et[np.asarray(events, dtype=np.int64)].astype(np.int64)
    linked[pos[pos >= 0]] = True
    keep = linked.copy()
    parent = et.parent.astype(np.int64)
    by_depth = np.argsort(et.depth, kind="stable")
    depth_sorted = et.depth[by_depth]
    for d in np.unique(depth_sorted).tolist():  # below a linked node: pass the mark down
        nodes = by_depth[depth_sorted == d]
        has_p = parent[nodes] >= 0
        keep[nodes[has_p]] |= keep[parent[nodes[has_p]]]
    frontier = np.flatnonzero(linked)
    while frontier.size:  # above a linked node: its chain
        p = parent[frontier]
        p = np.unique(p[p >= 0])
        p = p[~keep[p]]
        keep[p] = True
        frontier = p
    return np.flatnonzero(keep)


def write_et_slice(et: Any, link: Any, events: np.ndarray, path: str) -> int:
    """Write the ET cut to the ops of the Kineto ``events`` to ``path``; returns the nodes kept."""
    fb = read_trace_bytes(et.path)
    try:
        top = msgspec.json.decode(fb.data, type=dict[str, msgspec.Raw])
        nodes = msgspec.json.decode(top.get("nodes", b"[]"), type=list[msgspec.Raw])
        node_ids = msgspec.json.decode(top.get("nodes", b"[]"), type=list[_NodeId])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(et.path, f"cannot cut this Execution Trace (it must be whole JSON): {exc}") from None
    keep_ids = set(np.asarray(et.ids)[et_positions(et, link, events)].tolist())
    kept = [bytes(r) for r, i in zip(nodes, node_ids) if isinstance(i.id, int) and i.id in keep_ids]

    def pieces() -> Iterator[bytes]:
        yield b"{"
        first = True
        for key, raw in top.items():
            yield (b"" if first else b",") + jsonout.dumps(key) + b":"
            first = False
            if key == "nodes":
                yield b"[\n" + b",\n".join(kept) + b"\n]"
            else:
                yield bytes(raw)
        yield b"}\n"

    write_pieces(path, pieces())
    return len(kept)


def et_output_path(path: str) -> str:
    """Where the ET of a slice written to ``path`` goes: ``step12.json.gz`` -> ``step12_et.json.gz``."""
    base = os.path.basename(path)
    for ext in (".json.gz", ".json", ".gz"):
        if base.endswith(ext):
            return path[: len(path) - len(ext)] + "_et" + ext
    return path + "_et.json"
