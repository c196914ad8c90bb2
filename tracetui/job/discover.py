"""Which files make a job, and what each one is (kind, rank, world size), read cheaply.

``expand_inputs`` turns what the user typed (folders, files, glob patterns) into trace
files; ``looks_like_job`` says whether the command line names a job rather than one
trace or one Kineto + ET pair; ``identify_file`` reads one file's kind and rank.

A Kineto trace's rank is ``distributedInfo.rank`` (with ``world_size`` and ``backend``),
read from the first 4 MiB of the (decompressed) document, or from the whole document
when the profiler wrote ``distributedInfo`` after ``traceEvents``.  An Execution Trace
has no such header: its rank is the ``rank`` a ``record_param_comms`` node records (the
``rank`` attribute in the nested layout; in the flat layout, the integer input just
before the collective's name), and its ``pid`` is the OS process id, which the Kineto
trace of the same process repeats as the ``pid`` of its CPU events.  The file name
(``rank3``, ``worker3``, ``-3.``) is the fallback for both.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import zlib
from collections import Counter
from typing import Any

from ..driver.sniff import looks_like_driver_lines
from ..errors import TraceError
from ..io.files import not_regular, open_regular, read_trace_bytes, sniff_head

HEAD_BYTES = 4 << 20
_TRACE_SUFFIXES = (".json", ".json.gz", ".gz")
_GLOB_CHARS = "*?["
_RANK_IN_NAME = (re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE), re.compile(r"worker[_\-.]?(\d+)", re.IGNORECASE),
                 re.compile(r"[_\-.](\d+)\.(?:pt\.trace\.)?json", re.IGNORECASE))
_PID = re.compile(rb'"pid"\s*:\s*(\d+)')


def expand_inputs(inputs: list[str], skipped: list[str] | None = None) -> list[str]:
    """Files named by ``inputs``: a folder gives its ``*.json``/``*.json.gz`` files (not
    recursive), a pattern with ``* ? [`` that is not an existing path gives its matches;
    sorted, each file once.  A name of a folder or a match that is no regular file (a
    symbolic link loop, a link to nothing, a FIFO, a device) is left out, and a line saying
    so is appended to ``skipped`` (the job's warnings)."""
    out: list[str] = []
    found: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            found = sorted(os.path.join(item, n) for n in os.listdir(item) if n.endswith(_TRACE_SUFFIXES))
        elif not os.path.exists(item) and any(c in item for c in _GLOB_CHARS):
            found = sorted(glob.glob(item))
        else:
            out.append(item)
            continue
        for p in found:
            why = _not_a_file(p)
            if why is None:
                out.append(p)
            elif skipped is not None and why != "is a directory":
                skipped.append(f"{p}: {why}; skipped")
    seen: set[str] = set()
    return [p for p in out if not (os.path.abspath(p) in seen or seen.add(os.path.abspath(p)))]


def _not_a_file(path: str) -> str | None:
    """Why ``path`` cannot be read as a trace file, or None for a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if os.path.islink(path):
            return "is a symbolic link to a file that does not exist"
        return f"cannot be read ({exc.strerror or exc})"
    what = not_regular(st.st_mode)
    return None if what is None else f"is {what}"


def read_head(path: str, limit: int = HEAD_BYTES) -> bytes:
    """Up to ``limit`` bytes of the file's (gunzipped) content; b"" when unreadable."""
    try:
        with open_regular(path) as fh:
            first = fh.read(1 << 16)
            if first[:2] != b"\x1f\x8b":
                return first + fh.read(max(limit - len(first), 0))
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = [d.decompress(first, limit)]
            got = len(out[0])
            while got < limit and not d.eof:
                chunk = d.unconsumed_tail or fh.read(1 << 20)
                if not chunk:
                    break
                part = d.decompress(chunk, limit - got)
                out.append(part)
                got += len(part)
            return b"".join(out)
    except (OSError, zlib.error, EOFError, TraceError):
        return b""


def looks_like_job(inputs: list[str]) -> bool:
    """A folder, a glob pattern, more than two files, or two Kineto traces (a driver-call
    trace beside them is one run's, not a rank: it does not count)."""
    if any(os.path.isdir(p) or (not os.path.exists(p) and any(c in p for c in _GLOB_CHARS)) for p in inputs):
        return True
    inputs = [p for p in inputs if not _is_driver_file(p)]
    if len(inputs) > 2:
        return True
    if len(inputs) == 2:
        return all(sniff_head(read_head(p, 1 << 16).lstrip()) == "kineto" for p in inputs)
    return False


def _is_driver_file(path: str) -> bool:
    try:
        return looks_like_driver_lines(read_head(path, 1 << 16))
    except OSError:
        return False


def rank_from_name(path: str) -> int | None:
    """The rank a file name announces (``rank3``, ``worker3``, ``_3.json``), else None."""
    name = os.path.basename(path)
    for rx in _RANK_IN_NAME:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


def _distributed_info(data: bytes) -> dict[str, Any] | None:
    i = data.find(b'"distributedInfo"')
    if i < 0:
        return None
    j = data.find(b"{", i)
    if j < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(data[j:j + 65536].decode("utf-8", "replace"))
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _et_rank(path: str) -> tuple[int | None, Any]:
    """(rank recorded by the ET's record_param_comms nodes, the ET's pid)."""
    from ..et import load_et

    et = load_et(path)
    ranks: Counter[int] = Counter()
    try:
        rpc = et.names.index("record_param_comms")
    except ValueError:
        return None, et.pid
    import numpy as np

    for pos in np.flatnonzero(et.name_ids == rpc)[:16].tolist():
        node = et.node(pos)
        r = node.attrs.get("rank")
        if not isinstance(r, int):
            vals = [a for a in node.inputs]
            first_str = next((i for i, a in enumerate(vals) if a.type == "String"), -1)
            r = vals[first_str - 1].value if first_str >= 1 else None
        if isinstance(r, int) and not isinstance(r, bool) and r >= 0:
            ranks[r] += 1
    return (ranks.most_common(1)[0][0] if ranks else None), et.pid


def identify_file(path: str) -> dict[str, Any]:
    """``{"path", "kind": "kineto"|"et"|"unknown", "rank", "rank_from": "content"|"name"|None,
    "world_size", "backend", "pids" (Kineto: CPU pids seen in the head; ET: [pid]),
    "error"}`` for one file; never raises (an unreadable file has ``error`` set)."""
    out: dict[str, Any] = {"path": path, "kind": "unknown", "rank": None, "rank_from": None, "world_size": None,
                           "backend": None, "pids": [], "error": None}
    try:
        head = read_head(path)
        kind = sniff_head(head.lstrip())
        if kind is None:
            from ..session import detect_kind

            kind = detect_kind(read_trace_bytes(path))
        out["kind"] = kind
        if kind == "kineto":
            info = _distributed_info(head)
            if info is None and len(head) >= HEAD_BYTES:
                info = _distributed_info(read_trace_bytes(path).data[-(1 << 20):])
            info = info or {}
            if isinstance(info.get("rank"), int):
                out.update(rank=info["rank"], rank_from="content")
            out["world_size"] = info.get("world_size") if isinstance(info.get("world_size"), int) else None
            out["backend"] = info.get("backend") if isinstance(info.get("backend"), str) else None
            out["pids"] = sorted({int(m) for m in _PID.findall(head[: 1 << 20])})[:64]
        elif kind == "et":
            rank, pid = _et_rank(path)
            if rank is not None:
                out.update(rank=rank, rank_from="content")
            out["pids"] = [pid] if isinstance(pid, int) else []
    except TraceError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 -- a file that breaks identification must not stop the others
        out["error"] = f"{path}: cannot identify: {type(exc).__name__}: {exc}"
    if out["rank"] is None:
        r = rank_from_name(path)
        if r is not None:
            out.update(rank=r, rank_from="name")
    return out
