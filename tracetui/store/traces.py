"""Open traces through an on-disk cache of parsed traces and their links (reopen instantly).

Where: ``$TRACETUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracetui``, else
``~/.cache/tracetui``; one file per trace path (``trace-<hash of the absolute path>.ttc``,
format in :mod:`tracetui.io.colfile`: a Kineto trace, :mod:`tracetui.kineto.persist`, or
an Execution Trace, :mod:`tracetui.et.persist`), the ET <-> Kineto link of a pair
(``link-<hash>.ttl``, :mod:`tracetui.store.links`, keyed by both files' identities), and
the stored results of ``tracetui summary`` (``summary-<hash>.json``,
:mod:`tracetui.store.summaries`).  A cached reopen of a pair parses neither file and does
no linking.

An entry is used only when everything in its key still matches: the trace file's
absolute path, size, ``mtime_ns`` and a CRC-32 of *all* its bytes (ISA-L, ~18 GB/s: an
edit anywhere in the file, even one that keeps its size and time, is seen), the tracetui
version, the cache format version, and a fingerprint of the loader's source code (so a
changed loader never serves columns built by the old one).  Otherwise -- stale,
unreadable -- the entry is ignored, the trace is loaded from the file, and the entry is
rewritten atomically (temp file + rename).  An entry that is damaged (a checksum of
:mod:`tracetui.kineto.persist` differs, it was cut short or grew) is removed and rebuilt
the same way, and the trace carries a warning saying so (kind ``cache``): never a wrong
answer from a damaged entry.  A cache folder that cannot be written only means no cache
(logged at debug level), never an error.

Big Kineto traces (estimated JSON >= ``$TRACETUI_SUBPROCESS_MB``, default 96 MB; gzip
counted x10) are parsed in a child Python process that writes the entry; this process
then reads it.  The parse's garbage (decoded structs, freed-but-kept heap) dies with the
child, so memory held while browsing is that of the columns read back, and a UI thread
never competes with the parse for the GIL.  ``TRACETUI_LOAD_SUBPROCESS=0/1`` forces it
off/on.  Without a writable cache folder the child writes a temp file that is unlinked
once read; if the child cannot run, the trace is loaded in this process.

Truncated traces are cached with their warnings.  Old entries are pruned, least recently
used first, when the folder grows past ``$TRACETUI_CACHE_MAX_MB`` (default 4096 MB); a
process looks at the folder's size on its first write and then only when its own writes
may have taken it past the cap (:func:`prune_if_due`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from isal.isal_zlib import crc32

from .. import __version__, config, errors, formats, session
from ..errors import LoadWarning, TraceError
from ..formats import FileKind
from ..io.colfile import FORMAT_VERSION, CacheCorruptError, load_fields
from ..io.containers import compression_of
from ..io.files import open_regular, trace_path
from ..io.formats import Progress, no_progress
from ..link import link_et_kineto
from ..session import LinkedTrace, Loaded
from .links import SUFFIX as LINK_SUFFIX
from .links import linked_with_cache

log = logging.getLogger(__name__)

#: bytes read per step while hashing a trace file
HASH_STEP = 8 << 20
DEFAULT_MAX_MB = 4096
DEFAULT_SUBPROCESS_MB = 96
#: package folders whose code cannot change a cached trace or a stored summary (every
#: other source file of the package is hashed into the code fingerprint)
_NOT_HASHED = ("ui", "cli")


def cache_dir() -> Path:
    """The cache folder (may not exist yet): :func:`tracetui.config.cache_dir`."""
    return config.cache_dir()


def code_fingerprint() -> str:
    """Hash of the loader's source files (changes whenever the loading code does).

    ``$TRACETUI_CODE_FINGERPRINT`` replaces it (tests pin it while sources are edited).
    """
    return config.env("TRACETUI_CODE_FINGERPRINT") or _source_fingerprint()


@lru_cache(maxsize=1)
def _source_fingerprint() -> str:
    return source_fingerprint()


def source_fingerprint() -> str:
    """Hash of every source file (``*.py``, ``*.toml``) of the headless core: the whole
    package except the folders in :data:`_NOT_HASHED`, by path relative to the package and
    content.  Whole folders, not a list of files: code moved or added anywhere in the core
    changes the hash, at the price of one re-parse after an unrelated edit."""
    root = Path(__file__).resolve().parent.parent  # the tracetui package (this file is store/traces.py)
    h = hashlib.blake2b(digest_size=12)
    files = sorted(p for pattern in ("*.py", "*.toml") for p in root.rglob(pattern)
                   if p.relative_to(root).parts[0] not in _NOT_HASHED)
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def file_identity(path: str | os.PathLike[str]) -> dict[str, object]:
    """Absolute path, size, mtime_ns and the CRC-32 of every byte of a trace file (a regular
    file only: :class:`~tracetui.errors.TraceFileError` otherwise, as the loaders say)."""
    p = os.path.abspath(trace_path(path))
    crc = 0
    with open_regular(p) as fh:
        st = os.fstat(fh.fileno())
        buf = bytearray(min(HASH_STEP, max(st.st_size, 1)))
        view = memoryview(buf)
        while n := fh.readinto(view):
            crc = crc32(view[:n], crc)
        view.release()
    return {"path": p, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "crc32": crc}


def cache_key(path: str | os.PathLike[str], ident: dict[str, object] | None = None) -> dict[str, object]:
    """Everything an entry must match to be used for ``path`` (``ident``: its
    :func:`file_identity`, when the caller already took it)."""
    key = dict(ident) if ident is not None else file_identity(path)
    key.update(version=__version__, format=FORMAT_VERSION, code=code_fingerprint())
    return key


def entry_path(path: str | os.PathLike[str], folder: Path | None = None) -> Path:
    """The cache file for a trace path (one entry per absolute path, whatever it holds)."""
    p = os.path.abspath(os.fspath(path))
    digest = hashlib.blake2b(p.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return (folder or cache_dir()) / f"trace-{digest}.ttc"


def _entry_classes() -> dict[str, dict[str, type]]:
    """Every cache entry kind with the dataclasses it holds (:func:`tracetui.formats.cache_kinds`)."""
    return {kind: spec.classes for kind, spec in formats.cache_kinds().items()}


def _entry_deferred() -> dict[str, frozenset[str]]:
    """Per cache entry kind, the fields its codec reads on first use (``DEFERRED``; none for most)."""
    return {kind: getattr(spec.codec(), "DEFERRED", frozenset()) for kind, spec in formats.cache_kinds().items()}


def _read_entry(target: str | os.PathLike[str], key: dict[str, object] | None, path: str):
    """The trace stored at ``target`` for the trace file ``path``; raises as
    :func:`~tracetui.io.colfile.load_fields` does.  A big Kineto entry's columns are read
    and checked on first use (:data:`tracetui.kineto.persist.DEFERRED`): one found damaged
    then comes from the trace read again from its file (:func:`_recovery`)."""
    recovery = _Recovery(path, key)
    kind, values = load_fields(target, _entry_classes(), expect=key, defer=_entry_deferred(), label=path,
                               recover=recovery)
    trace = formats.cache_kinds()[kind].restore(values, path)
    trace.path = path
    recovery.trace = weakref.ref(trace)
    return trace


class _Recovery:
    """What gives a field of a reopened trace whose cached copy is found damaged when the
    field is first read (the entry is already removed): the trace read again from its file,
    once, when the file is still the one the entry was made from (else
    :class:`~tracetui.errors.TraceFileError`: answers from two versions of a file never
    mix); a warning on the trace says so, as for damage found at the open."""

    def __init__(self, path: str, key: dict[str, object] | None) -> None:
        self.path, self.key = path, key
        self.trace: Callable[[], object] = lambda: None
        self.fresh = None

    def __call__(self, name: str, exc: Exception):
        if self.fresh is None:
            now = None
            try:
                now = cache_key(self.path)
            except (OSError, TraceError):
                pass
            if self.key is None or now != self.key:
                raise errors.TraceFileError(self.path, "changed since it was opened, and its cached copy was "
                                                       "damaged while in use: open it again")
            log.debug("tracetui cache: a section of the entry for %s is damaged: %s", self.path, exc)
            self.fresh = _load_one(self.path, True, no_progress).trace
            trace = self.trace()
            if trace is not None:
                trace.warnings.append(_damaged_warning(self.path, exc))
        return getattr(self.fresh, name)


def _damaged_warning(path: str | os.PathLike[str], exc: Exception) -> LoadWarning:
    return LoadWarning("cache", f"the cached copy of {os.path.basename(os.fspath(path))} was damaged ({exc}): it was "
                                f"removed and the trace read again from the file")


def read_cached(path: str | os.PathLike[str], key: dict[str, object] | None = None,
                damaged: list[LoadWarning] | None = None):
    """The cached trace (of any cached format) for ``path`` if a valid entry exists, else
    None (never raises).

    ``key``: the :func:`cache_key` of ``path`` when the caller already has it.  A damaged
    entry is removed, and a warning saying so is appended to ``damaged`` (the caller
    shows it with the trace loaded again from the file).
    """
    target = entry_path(path)
    try:
        key = key if key is not None else cache_key(path)
        trace = _read_entry(target, key, os.fspath(path))
    except FileNotFoundError:
        return None
    except CacheCorruptError as exc:
        log.debug("tracetui cache: the entry for %s is damaged: %s", path, exc)
        _unlink(str(target))
        if damaged is not None:
            damaged.append(_damaged_warning(path, exc))
        return None
    except Exception as exc:  # stale, unreadable: rebuild
        log.debug("tracetui cache: not using the entry for %s: %s", path, exc)
        return None
    try:
        os.utime(entry_path(path))  # recency for pruning
    except OSError:
        pass
    return trace


def write_cached(path: str | os.PathLike[str], trace, key: dict[str, object] | None = None,
                 kind: FileKind | None = None) -> bool:
    """Store ``trace`` as the entry for ``path``, as its format says (``kind``: the format it
    was read from, else its ``source_format``); False (logged) when it cannot be written or
    its format is not cached.

    ``key`` should be taken *before* the file was read; the entry is skipped when the
    file changed while it was being loaded.
    """
    try:
        spec = formats.cache_spec_of(kind or formats.kind_of_trace(trace))
        if spec is None:
            return False
        now = cache_key(path)
        if key is not None and key != now:
            log.debug("tracetui cache: %s changed while loading; not cached", path)
            return False
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        target = entry_path(path, folder)
        spec.save(trace, target, now)
        prune_if_due(target)
        return True
    except Exception as exc:
        log.debug("tracetui cache: cannot write the entry for %s: %s", path, exc)
        return False


#: per cache folder, what this process knows of its size: [bytes found at its last look
#: (:func:`prune`), bytes this process wrote into it since]
_SEEN: dict[str, list[int]] = {}
#: a process looks at the folder again once it wrote this fraction of the cap since its last look
_LOOK_AGAIN = 16


def prune_if_due(written: Path) -> int:
    """After this process wrote the entry ``written``: :func:`prune` (keeping it) when it is
    due, else nothing (returns the entries removed).  Due: on this process's first write into
    the folder, when the size it found at its last look plus what it wrote since passes
    ``$TRACETUI_CACHE_MAX_MB``, or when it wrote a sixteenth of that since (other processes
    write into the folder too: the folder stays within the cap plus a sixteenth of it per
    writing process).  A look reads the size of every entry: looking after every write made
    opening a job quadratic in its ranks (2,000 ranks: 4,000 looks at up to 4,000 entries)."""
    max_bytes = config.env_megabytes("TRACETUI_CACHE_MAX_MB", DEFAULT_MAX_MB)
    seen = _SEEN.get(os.fspath(written.parent))
    if seen is not None:
        try:
            seen[1] += written.stat().st_size
        except OSError:
            pass
        if seen[0] + seen[1] <= max_bytes and seen[1] <= max_bytes // _LOOK_AGAIN:
            return 0
    return prune(max_bytes, keep=written)


def prune(max_bytes: int | None = None, keep: Path | None = None) -> int:
    """Delete least recently used entries until the folder is under ``max_bytes``.

    Entries are trace entries and stored summaries (``summary-*.json``, see
    :mod:`tracetui.store.summaries`).  Returns the number of entries removed.
    Leftover temp files older than an hour go too.  What is left is remembered for
    :func:`prune_if_due`.
    """
    if max_bytes is None:
        max_bytes = config.env_megabytes("TRACETUI_CACHE_MAX_MB", DEFAULT_MAX_MB)
    folder = cache_dir()
    entries = []
    removed = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                if not e.is_file() or not _is_entry_name(e.name):
                    continue
                st = e.stat()
                if e.name.startswith(".tmp-"):
                    if st.st_mtime < time.time() - 3600:
                        _unlink(e.path)
                    continue
                entries.append((st.st_mtime, st.st_size, e.path))
    except OSError:
        return 0
    total = sum(s for _, s, _ in entries)
    for _, size, p in sorted(entries):
        if total <= max_bytes:
            break
        if keep is not None and os.path.abspath(p) == os.path.abspath(keep):
            continue
        if _unlink(p):
            total -= size
            removed += 1
    _SEEN[os.fspath(folder)] = [total, 0]
    return removed


def _is_entry_name(name: str) -> bool:
    """Trace entries (``*.ttc``), links (``*.ttl``), stored summaries (``summary-*.json``)
    and their temp files."""
    return name.endswith((".ttc", LINK_SUFFIX)) or (name.endswith(".json") and name.startswith(("summary-", ".tmp-")))


def _unlink(p: str) -> bool:
    try:
        os.unlink(p)
        return True
    except OSError:
        return False


def clear() -> int:
    """Remove every cache entry; returns how many were removed."""
    return prune(max_bytes=0)


def _load_one(path: str, use_cache: bool, progress: Progress, deferred: list[Callable[[], bool]] | None = None,
              damaged: list[LoadWarning] | None = None, idents: dict[str, dict[str, object]] | None = None) -> Loaded:
    """One file: its cache entry when a valid one exists, else its format's loader (in a
    child process for a big file of a format that says so), then the entry written."""
    key = None
    if use_cache:
        try:
            ident = file_identity(path)
            key = cache_key(path, ident)
        except (OSError, TraceError):
            key = None  # the loader reports the unreadable file properly
        else:
            if idents is not None:
                idents[path] = ident
        if key is not None:
            progress("reading cache", 0.0)
            cached = read_cached(path, key, damaged)
            if cached is not None:
                progress("from cache", 1.0)
                return Loaded(path, formats.kind_of_trace(cached), cached)
    kind = formats.detect(path)
    spec = kind.spec
    if use_cache and key is not None and spec.cache is not None and _use_subprocess(path, kind):
        trace = _load_in_child(path, kind, key, progress)
        if trace is not None:
            return Loaded(path, kind, trace)
    loaded = formats.load(path, progress, kind)
    if use_cache and key is not None and spec.cache is not None:
        if deferred is not None:
            deferred.append(functools.partial(write_cached, path, loaded, key, kind))
        else:
            progress("writing cache", 1.0)
            write_cached(path, loaded, key, kind)
    return Loaded(path, kind, loaded)


# --------------------------------------------------------------------------- child process
def _estimated_json_bytes(path: str) -> int:
    with open_regular(path) as fh:
        compressed = compression_of(fh.read(4)) is not None  # gzip or zstd
        size = os.fstat(fh.fileno()).st_size
    return size * 10 if compressed else size


def _use_subprocess(path: str, kind: FileKind) -> bool:
    if not kind.spec.child_process:
        return False
    force = config.env("TRACETUI_LOAD_SUBPROCESS")
    if force in ("0", "1"):
        return force == "1"
    try:
        limit = config.env_megabytes("TRACETUI_SUBPROCESS_MB", DEFAULT_SUBPROCESS_MB)
        return _estimated_json_bytes(path) >= limit
    except (OSError, ValueError, TraceError):
        return False


def _load_in_child(path: str, kind: FileKind, key: dict[str, object], progress: Progress):
    """Parse ``path`` (a file of ``kind``) in a child process that writes the cache entry, then read it.

    Returns None (the caller loads in-process) when the child cannot do it for any reason
    other than bad input; bad input raises the same TraceError the in-process load would.
    """
    target = entry_path(path)
    temp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".tmp-", suffix=".ttc", delete=True)
        probe.close()
    except OSError:
        fd, temp = tempfile.mkstemp(prefix="tracetui-", suffix=".ttc")
        os.close(fd)
        target = Path(temp)
    pkg_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    # -P: ``-c`` would put the working directory first on sys.path, so a child started from
    # another checkout's root imported that checkout's tracetui, not this one (bench_open.py,
    # run from the repository root, timed the baseline's parse with this checkout's code)
    cmd = [sys.executable, "-P", "-c", "from tracetui.store.traces import _child_main; _child_main()"]
    proc = None
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env)
        proc.stdin.write(json.dumps({"path": path, "kind": kind.spec.name, "out": str(target),
                                     "key": key}).encode() + b"\n")
        proc.stdin.close()
        outcome = None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, list) or not msg:
                continue
            if msg[0] == "progress":
                progress(msg[1], float(msg[2]))
            else:
                outcome = msg
        proc.wait()
        if outcome is not None and outcome[0] == "trace_error":
            cls = getattr(errors, outcome[1], None)
            cls = cls if isinstance(cls, type) and issubclass(cls, TraceError) else TraceError
            raise cls(outcome[2], outcome[3], position=outcome[4])
        if outcome is None or outcome[0] != "done" or proc.returncode != 0:
            log.debug("tracetui cache: child load of %s failed: %s (exit %s)", path, outcome, proc.returncode)
            return None
        trace = _read_entry(target, key, path)
        if temp is None:
            prune_if_due(target)
        return trace
    except TraceError:
        raise
    except Exception as exc:
        log.debug("tracetui cache: child load of %s failed: %s", path, exc)
        return None
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if temp is not None:
            _unlink(temp)  # read (or failed): the name is no longer needed


def _child_main() -> None:
    """Child side of :func:`_load_in_child`: JSON request on stdin, JSON lines on stdout."""
    req = json.loads(sys.stdin.readline())
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # stray prints cannot garble the protocol

    def send(*msg: object) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    try:
        spec = formats.kind_named(req["kind"]).spec
        code = code_fingerprint()  # of the code imported now, which builds the entry
        trace = spec.load(req["path"], lambda m, f: send("progress", m, f))
        ident = file_identity(req["path"])
        if any(req["key"].get(k) != v for k, v in ident.items()):
            send("error", "the file changed while it was being loaded")
            out.close()
            os._exit(0)
        send("progress", "writing cache", 1.0)
        spec.cache.save(trace, req["out"], dict(req["key"], code=code))
        send("done")
    except TraceError as exc:
        send("trace_error", type(exc).__name__, exc.path, exc.problem, exc.position)
    except BaseException as exc:  # reported; the parent falls back to loading in-process
        send("error", f"{type(exc).__name__}: {exc}")
    out.close()
    os._exit(0)  # skip freeing millions of objects one by one: the OS takes the memory back


def load_cached(paths: list[str], *, use_cache: bool = True, progress: Progress | None = None,
                deferred_writes: list[Callable[[], bool]] | None = None) -> LinkedTrace:
    """Load one trace, or a trace with its ET and/or driver-call trace (any order), and link
    them: :func:`tracetui.session.open_traces` through the cache.

    Traces come from the cache when a valid entry exists, else from their format's loader,
    and are stored after a fresh load (formats that are cached); ``use_cache=False``
    neither reads nor writes the cache.  ``progress(message, fraction)`` is called as
    loading goes on.  ``deferred_writes``: a list that receives the writes of the cache
    entries of traces loaded in this process (callables; each returns :func:`write_cached`'s
    result) instead of running them, so the caller can show the trace first (the browser)
    or write while it computes (``tracetui summary``).  The write encodes the trace when it
    runs: the caller must not change the trace's fields before then.
    """
    session.check_count(paths)
    paths = [trace_path(p) for p in paths]
    damaged: list[LoadWarning] = []
    idents: dict[str, dict[str, object]] = {}  # file identities taken for the entries' keys, reused by the link's
    loaded = [_load_one(p, use_cache, sub, deferred_writes, damaged, idents)
              for p, sub in zip(paths, session.file_progress(paths, progress))]
    arr = session.arrange(loaded)
    link = None
    if arr.trace is not None and arr.et is not None:
        (progress or no_progress)("linking ET to Kineto", 0.99)
        et, kt = arr.et.trace, arr.trace.trace
        link = _link_cached(et, kt, idents) if use_cache else link_et_kineto(et, kt)
    linked = session.assemble(arr, link, progress)
    # on the linked trace, not the trace itself: its (deferred) cache write must not store it
    linked.warnings += damaged
    return linked


def _link_cached(et, kt, idents: dict[str, dict[str, object]] | None = None):
    """The ET <-> Kineto link from the cache (:mod:`tracetui.store.links`), else computed
    and stored; keyed by both files' identities (``idents``: those already taken, by
    path), the version and the code fingerprint."""
    idents = idents or {}
    try:
        key = {"et": idents.get(et.path) or file_identity(et.path),
               "kineto": idents.get(kt.path) or file_identity(kt.path),
               "version": __version__, "code": code_fingerprint()}
    except (OSError, TraceError):
        return link_et_kineto(et, kt)
    return linked_with_cache(et, kt, cache_dir(), key)
