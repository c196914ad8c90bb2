"""Which files make a job, and what each one is (kind, rank, world size), read cheaply.

``expand_inputs`` turns what the user typed (folders, files, glob patterns) into trace
files; ``looks_like_job`` says whether the command line names a job rather than one
trace or one Kineto + ET pair; ``identify_file`` reads one file's format and rank.

What a file is comes from the list of formats (:mod:`tracetui.formats`); its rank from
its format's ``identify`` (a Kineto trace: ``distributedInfo``; an Execution Trace: its
``record_param_comms`` nodes; see each format's ``sniff.py``).  The file name (``rank3``,
``worker3``, ``-3.``) is the fallback for every format.
"""

from __future__ import annotations

import errno
import glob
import os
import re
from typing import Any

from .. import formats
from ..errors import TraceError
from ..io.files import not_regular
from ..io.formats import FileRole, read_head

_GLOB_CHARS = "*?["
#: the command-line option that reads the files of a folder that lead outside it
FOLLOW_LINKS_OPTION = "--follow-links"
_RANK_IN_NAME = (re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE), re.compile(r"worker[_\-.]?(\d+)", re.IGNORECASE),
                 re.compile(r"[_\-.](\d+)\.(?:pt\.trace\.)?json", re.IGNORECASE))


def expand_inputs(inputs: list[str], skipped: list[str] | None = None, follow_links: bool = False) -> list[str]:
    """Files named by ``inputs``: a folder gives its ``*.json``/``*.json.gz`` files (not
    recursive), a pattern with ``* ? [`` that is not an existing path gives its matches;
    sorted, each file once.  A name of a folder or a match that is no regular file (a
    symbolic link loop, a link to nothing, a FIFO, a device), or whose real path lies outside
    the folder (the glob's folder: the part of the pattern before its first wildcard) unless
    ``follow_links``, is left out, and a line saying so is appended to ``skipped`` (the job's
    warnings).  A file named on its own is read wherever it leads: the user chose it."""
    out: list[str] = []
    found: list[str] = []
    for item in inputs:
        if os.path.isdir(item):
            base = item
            found = sorted(os.path.join(item, n) for n in os.listdir(item) if n.endswith(formats.job_suffixes()))
        elif not os.path.exists(item) and any(c in item for c in _GLOB_CHARS):
            base = glob_folder(item)
            found = sorted(glob.glob(item))
        else:
            out.append(item)
            continue
        for p in found:
            why, then = _not_a_file(p), ""
            if why is None and not follow_links:
                why, then = _outside(p, base), f" ({FOLLOW_LINKS_OPTION} reads it)"
            if why is None:
                out.append(p)
            elif skipped is not None and why != "is a directory":
                skipped.append(f"{p}: {why}; skipped{then}")
    seen: set[str] = set()
    return [p for p in out if not (os.path.abspath(p) in seen or seen.add(os.path.abspath(p)))]


def glob_folder(pattern: str) -> str:
    """The folder a glob pattern searches: its path before the first part with a wildcard
    (``runs/step12/rank*.json`` -> ``runs/step12``; ``rank*.json`` -> ``.``)."""
    head, parts = pattern, []
    while head and head != os.path.dirname(head):
        head, part = os.path.split(head)
        parts.append(part)
    kept = []
    for part in reversed(parts[1:]):  # parts[0] is the file name's pattern
        if any(c in part for c in _GLOB_CHARS):
            break
        kept.append(part)
    return os.path.join(head, *kept) if head or kept else "."


def _outside(path: str, folder: str) -> str | None:
    """Why ``path`` (found in ``folder``) is not read: its real path (links followed) lies
    outside the folder's; None when it stays inside."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, root]) == root:
        return None
    return f"is a link to {real}, outside the folder {folder}"


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


def _kind_of(path: str) -> formats.FileKind | None:
    """The format of ``path``; None when it cannot be read or is of no known format."""
    try:
        return formats.detect(path)
    except TraceError:
        return None


def looks_like_job(inputs: list[str]) -> bool:
    """A folder, a glob pattern, more than two files, or two traces (a driver-call trace
    or a CUDA memory snapshot beside them is one run's, not a rank: it does not count)."""
    if any(os.path.isdir(p) or (not os.path.exists(p) and any(c in p for c in _GLOB_CHARS)) for p in inputs):
        return True
    kinds = {p: _kind_of(p) for p in inputs}
    inputs = [p for p in inputs if kinds[p] is None or kinds[p].role not in (FileRole.DRIVER, FileRole.MEMORY)]
    if len(inputs) > 2:
        return True
    if len(inputs) == 2:
        return all(kinds[p] is not None and kinds[p].role == FileRole.TRACE for p in inputs)
    return False


def rank_from_name(path: str) -> int | None:
    """The rank a file name announces (``rank3``, ``worker3``, ``_3.json``), else None."""
    name = os.path.basename(path)
    for rx in _RANK_IN_NAME:
        m = rx.search(name)
        if m:
            return int(m.group(1))
    return None


def identify_file(path: str) -> dict[str, Any]:
    """``{"path", "kind": the role ("trace", "et", "driver") or "unknown", "format": the
    format's name or None, "rank", "rank_from": "content"|"name"|None, "world_size",
    "backend", "pids" (a trace: CPU pids seen in its head; an ET: [pid]), "error"}`` for one
    file; never raises (an unreadable file has ``error`` set)."""
    out: dict[str, Any] = {"path": path, "kind": "unknown", "format": None, "rank": None, "rank_from": None,
                           "world_size": None, "backend": None, "pids": [], "error": None}
    try:
        head = read_head(path)
        kind = formats.recognise(head)
        if kind is not None:
            out.update(kind=kind.role.value, format=kind.spec.name)
            if kind.spec.identify is not None:
                facts = kind.spec.identify(path, head)
                if isinstance(facts.get("rank"), int):
                    out.update(rank=facts["rank"], rank_from="content")
                out.update(world_size=facts.get("world_size"), backend=facts.get("backend"),
                           pids=facts.get("pids") or [])
    except TraceError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 -- a file that breaks identification must not stop the others
        out["error"] = f"{path}: cannot identify: {type(exc).__name__}: {exc}"
    if out["rank"] is None:
        r = rank_from_name(path)
        if r is not None:
            out.update(rank=r, rank_from="name")
    return out
