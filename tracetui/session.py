"""The linked model the UI, the CLI and the Python API share.

``load_trace(path)`` loads one file of any format tracetui reads, recognised by *content*
(:mod:`tracetui.formats`).  ``open_traces(paths)`` loads one trace, or a trace with the
files that go beside it -- its Execution Trace, its driver-call trace, a CUDA memory snapshot
of the same run -- in any order, and links them (see ``tracetui.link``); ``load_pair(a, b)`` is the ET + Kineto case.

The steps are public so the cache (:mod:`tracetui.store.traces`) runs the same ones with
traces it read from disk: :func:`check_count`, :func:`file_progress`, :func:`arrange` (which
file plays which role) and :func:`assemble` (the driver link and the :class:`LinkedTrace`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import formats
from .driver.trace import DriverTrace
from .errors import LoadWarning, TraceFormatError, WrongTraceKindError
from .formats import FileKind
from .io.files import trace_path
from .io.formats import FileRole, Progress, no_progress
from .kineto import KinetoTrace
from .link import ETLink, link_et_kineto

if TYPE_CHECKING:
    from .et import ETTrace
    from .memsnap.trace import SnapshotTrace

#: most files one run is opened from: a trace, its Execution Trace, its driver-call trace, its memory snapshot
MAX_FILES = 4


def load_trace(path: str | bytes | os.PathLike, progress: Progress | None = None) -> Any:
    """Load one trace file of any format, recognised by content (``path``: a ``str``,
    ``bytes`` or ``os.PathLike``; anything else is a :class:`TraceFileError`)."""
    return formats.load(trace_path(path), progress)


@dataclass
class LinkedTrace:
    """A trace, optionally with its Execution Trace and the link between them.

    ``kineto`` is the trace the browser shows (a Kineto trace, or a trace of another format
    in the same model); it may be a :class:`~tracetui.driver.trace.DriverTrace`: a
    driver-call trace alone, or a Kineto trace with a driver-call trace linked to it
    (``driver_link``); it may be a CUDA memory snapshot's trace alone
    (:class:`~tracetui.memsnap.trace.SnapshotTrace`).  ``memory``: the snapshot given beside
    a trace (None otherwise; a snapshot alone is ``kineto``).  :attr:`snapshot_trace` is the
    snapshot either way."""

    kineto: KinetoTrace | None
    et: "ETTrace | None" = None
    link: ETLink | None = None
    warnings: list[LoadWarning] = field(default_factory=list)
    memory: "SnapshotTrace | None" = None

    @property
    def snapshot_trace(self) -> "SnapshotTrace | None":
        """The CUDA memory snapshot of the run: given beside the trace, or the trace itself."""
        if self.memory is not None:
            return self.memory
        return self.kineto if getattr(self.kineto, "snapshot", None) is not None else None

    @property
    def title(self) -> str:
        parts = [os.path.basename(t.path) for t in (self.kineto, self.et) if t is not None]
        drv = self.kineto if isinstance(self.kineto, DriverTrace) else None
        if drv is not None and drv.link is not None:
            parts.append(os.path.basename(drv.driver_path))
        if self.memory is not None:
            parts.append(os.path.basename(self.memory.path))
        return " + ".join(parts)

    def all_warnings(self) -> list[LoadWarning]:
        out: list[LoadWarning] = []
        if self.kineto is not None:
            out += self.kineto.warnings
        if self.memory is not None:
            out += self.memory.warnings
        if self.et is not None:
            out += list(getattr(self.et, "warnings", []))
        if self.link is not None:
            out += self.link.warnings
        return out + self.warnings


@dataclass
class Loaded:
    """One file of a run, loaded: its path, its format and the trace read from it."""

    path: str
    kind: FileKind
    trace: Any


@dataclass
class Arrangement:
    """The files of one run by role (each None when not given)."""

    trace: Loaded | None = None
    et: Loaded | None = None
    driver: Loaded | None = None
    memory: Loaded | None = None


def load_pair(et_path: str | os.PathLike[str], kineto_path: str | os.PathLike[str],
              progress: Progress | None = None) -> LinkedTrace:
    """Load an ET and its Kineto trace (either order: detected by content) and link them."""
    return open_traces([trace_path(et_path), trace_path(kineto_path)], progress)


def check_count(paths: list[str]) -> None:
    """One run is one to :data:`MAX_FILES` files."""
    if not paths or len(paths) > MAX_FILES:
        raise TraceFormatError(None, "give one trace file, or a Kineto trace with its Execution Trace, its "
                                     "driver-call trace and/or its CUDA memory snapshot")


def file_progress(paths: list[str], progress: Progress | None) -> list[Progress]:
    """One progress callback per file, each reporting ``"<file>: <message>"`` on its share
    of the whole."""
    report = progress or no_progress
    scale = 1.0 / len(paths) if paths else 1.0

    def one(k: int, p: str) -> Progress:
        return lambda msg, frac: report(f"{os.path.basename(p)}: {msg}", (k + frac) * scale)

    return [one(k, p) for k, p in enumerate(paths)]


def open_traces(paths: list[str], progress: Progress | None = None) -> LinkedTrace:
    """Load one trace, or a trace with its ET and/or its driver-call trace (any order,
    recognised by content) into a :class:`LinkedTrace`; no cache (the cache's own is
    :func:`tracetui.store.traces.load_cached`)."""
    check_count(paths)
    paths = [trace_path(p) for p in paths]
    loaded = []
    for p, sub in zip(paths, file_progress(paths, progress)):
        kind = formats.detect(p)
        loaded.append(Loaded(p, kind, kind.spec.load(p, sub)))
    arr = arrange(loaded)
    link = None
    if arr.trace is not None and arr.et is not None:
        (progress or no_progress)("linking ET to Kineto", 0.99)
        link = link_et_kineto(arr.et.trace, arr.trace.trace)
    return assemble(arr, link, progress)


def _partners(role: FileRole) -> str:
    """The titles of the traces a file of ``role`` may go beside ("PyTorch profiler trace")."""
    titles = [k.title for k in FileKind if k.role == FileRole.TRACE and role in k.spec.beside]
    return " or ".join(titles) or "trace"


def arrange(loaded: list[Loaded]) -> Arrangement:
    """Which file plays which role; :class:`~tracetui.errors.WrongTraceKindError` naming the
    file when two play the same one, or when a file cannot go beside the others."""
    arr = Arrangement()
    slot = {FileRole.TRACE: "trace", FileRole.ET: "et", FileRole.DRIVER: "driver", FileRole.MEMORY: "memory"}
    for item in loaded:
        name = slot[item.kind.role]
        have = getattr(arr, name)
        if have is not None:
            if item.kind.role == FileRole.TRACE:
                what = f"{item.kind.title}s" if have.kind == item.kind else \
                    f"traces ({have.kind.title} and {item.kind.title})"
                raise WrongTraceKindError(item.path, f"both files are {what}; the other file must be the "
                                                     f"{_either_title(have.kind.spec.beside)} of the same run")
            raise WrongTraceKindError(item.path, f"both files are {item.kind.title}s; give the "
                                                 f"{_partners(item.kind.role)} of the same run")
        setattr(arr, name, item)
    if arr.trace is None:
        alone = [x for x in (arr.driver, arr.memory) if x is not None]
        others = [x for x in (arr.et, arr.driver, arr.memory) if x is not None]
        if alone and len(others) > 1:
            other = next(x for x in others if x is not alone[0])
            raise WrongTraceKindError(alone[0].path, f"a {alone[0].kind.title} links to a "
                                                     f"{_partners(alone[0].kind.role)}, not to the "
                                                     f"{other.kind.title} given beside it")
    if arr.trace is not None:
        for other in (arr.et, arr.driver, arr.memory):
            if other is not None and other.kind.role not in arr.trace.kind.spec.beside:
                raise WrongTraceKindError(other.path, f"this {other.kind.title} goes with a "
                                                      f"{_partners(other.kind.role)}, not with the "
                                                      f"{arr.trace.kind.title} given beside it")
    return arr


def _either_title(roles: frozenset[FileRole]) -> str:
    titles = [k.title for k in FileKind if k.role in roles and k.role != FileRole.TRACE]
    if len(titles) > 2:
        return ", ".join(titles[:-1]) + " or " + titles[-1]
    return " or ".join(titles) or "trace"


def assemble(arr: Arrangement, link: ETLink | None, progress: Progress | None = None) -> LinkedTrace:
    """The :class:`LinkedTrace` of an arranged run, given the ET link when there is one: a
    driver-call trace beside a trace is linked to it here; alone, it is the trace."""
    report = progress or no_progress
    kt = arr.trace.trace if arr.trace is not None else None
    memory = arr.memory.trace if arr.memory is not None else None
    if kt is None and memory is not None:
        kt, memory = memory, None
    if arr.driver is not None:
        if kt is None:
            kt = arr.driver.trace
        else:
            from .link.driver_merge import link_driver

            report("linking the driver calls to Kineto", 0.99)
            kt = link_driver(kt, arr.driver.trace)
    report("ready", 1.0)
    return LinkedTrace(kt, arr.et.trace if arr.et is not None else None, link, memory=memory)
