"""Reading a snapshot's pickle so that nothing in it runs: plain data only, at C speed, with caps.

``pickle.load`` runs whatever a pickle asks for: a global it names is imported and called
(``os.system``, ``builtins.exec`` ...).  A CUDA memory snapshot is plain data (dicts, lists,
strings, numbers, booleans, None; a tuple or two), so :class:`PlainUnpickler` (the C
``pickle.Unpickler``) refuses every way a pickle has to reach code:

- ``find_class`` raises: ``GLOBAL``, ``STACK_GLOBAL``, ``INST`` and the ``EXT1/2/4`` codes
  (which look their class up through ``find_class``) are refused, naming the global
  (``os.system``), so ``REDUCE``, ``BUILD``, ``NEWOBJ`` and ``OBJ`` never get a callable: the
  only objects on the unpickler's stack are the plain values it built itself;
- ``persistent_load`` raises (``PERSID``, ``BINPERSID``);
- out-of-band buffers (protocol 5's ``NEXT_BUFFER``) are refused by the C unpickler itself
  (no ``buffers`` are given);
- the extension registry (``copyreg.add_extension``) must be empty: a code registered by
  other code in the process would be resolved from its cache without ``find_class``.

Caps (each a one-line :class:`~tracetui.errors.TraceError`, exit 2):

- the protocol: 2 to 5 (``PROTO`` first);
- the bytes a read may ask for: never past the end of the file (a string or frame that
  claims more says where the file ends: a truncated snapshot);
- the memory the objects take: checked before reading (:data:`OBJECT_FACTOR` times the file,
  :data:`STREAMED_FACTOR` when the history is streamed, :data:`PRUNED_FACTOR` when its spent
  objects are dropped as well, against the memory available) and
  while reading (the process's resident memory every :data:`CHECK_EVERY` bytes read: a pickle
  that builds more objects than memory allows is stopped at the byte it reached);
- nesting: the C unpickler builds nested lists without recursion, and nothing here walks the
  objects recursively (the reader reads the snapshot's known shape only), so a list nested
  100,000 deep is plain data like any other.

The one answer ``persistent_load`` gives is the history list of :mod:`.stream`, for the random
token that module writes into the stream it serves (no file can name it in advance).

Garbage collection is off while the objects are built (millions of dicts would trigger it
again and again for nothing: no cycle can be built from plain pickled data that matters).
"""

from __future__ import annotations

import copyreg
import gc
import io
import os
import pickle
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import TraceError, TraceFormatError, TraceTooLargeError
from ..io.files import open_regular, trace_path
from ..io.limits import available_memory_bytes
from ..units import bytes_rounded
from .prune import MemoPruner, PruneMiss, pruning_works
from .sniff import PROTOCOLS, pickle_protocol
from .stream import Spliced, StreamList, find_point, injection, token

#: what a refused pickle is told after the global it names
REFUSED = "refused: a snapshot holds plain data only"
#: bytes of Python objects a pickle of plain data builds per byte of file, at most, for the
#: check before reading (measured on snapshots with Python stacks: ~6x; bench/bench_memsnap.py)
OBJECT_FACTOR = 8
#: the same when the history is read while unpickling (:mod:`.stream`: measured ~4x with Python stacks)
STREAMED_FACTOR = 5
#: the same when its spent objects are also dropped from the memo (:mod:`.prune`: the load measured
#: 1.8x, with the memory model 2.3x, on 1 GB with Python stacks; bench/README.md)
PRUNED_FACTOR = 3
#: bytes read between two looks at the resident memory
CHECK_EVERY = 1 << 20
#: how the C unpickler says a ``BINGET`` found no object (3.11 to 3.14)
_MEMO_MISS = "Memo value not found"


class _Refused(Exception):
    """A pickle asked for something that is not plain data."""


class PlainUnpickler(pickle.Unpickler):
    """The C unpickler, able to build plain data only (see the module docstring).  ``stream``:
    the one persistent id it answers (:mod:`.stream`'s token) and the list it answers with."""

    def __init__(self, file: Any, stream: tuple[str, StreamList] | None = None) -> None:
        super().__init__(file)
        self.stream = stream
        self.streamed = False

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if self.stream is not None and not self.streamed and pid == self.stream[0]:
            self.streamed = True
            return self.stream[1]
        raise _Refused("a persistent id")


class _Reader:
    """The file as the unpickler reads it: never past its end, and the memory watched.

    ``peek`` lets the C unpickler read ahead in blocks (it then ``read``s what it used), so a
    pickle without frames (protocols 2-3) costs one call per block, not one per opcode."""

    def __init__(self, fh: BinaryIO, size: int, budget: int | None) -> None:
        self.fh, self.size, self.budget = fh, size, budget
        self.pos = 0  #: bytes the unpickler has consumed
        self.ahead = b""  #: bytes read from the file after ``pos``, not yet consumed
        self.next_check = CHECK_EVERY
        self.base = _resident()

    def _take(self, n: int) -> None:
        if n > self.size - self.pos:
            raise _Truncated(self.pos, n)
        self.pos += n
        if self.pos >= self.next_check:
            self.next_check = self.pos + CHECK_EVERY
            used = _resident() - self.base
            if self.budget is not None and used > self.budget:
                raise _TooMuch(self.pos, used)

    def _more(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) < n:  # the file shrank while it was read
            raise _Truncated(self.pos, n)
        return data

    def peek(self, n: int = 1) -> bytes:
        want = min(max(n, 1), self.size - self.pos) - len(self.ahead)
        if want > 0:
            self.ahead += self._more(want)
        return self.ahead

    def read(self, n: int = -1) -> bytes:
        n = self.size - self.pos if n is None or n < 0 else n
        self._take(n)
        if n <= len(self.ahead):
            out, self.ahead = self.ahead[:n], self.ahead[n:]
            return out
        out = self.ahead + self._more(n - len(self.ahead))
        self.ahead = b""
        return out

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        n = view.nbytes
        self._take(n)
        k = min(n, len(self.ahead))
        view[:k] = self.ahead[:k]
        self.ahead = self.ahead[k:]
        if n > k and self.fh.readinto(view[k:]) < n - k:
            raise _Truncated(self.pos, n)
        return n

    def readline(self) -> bytes:
        while b"\n" not in self.ahead and len(self.ahead) < self.size - self.pos:
            self.ahead += self._more(min(1 << 16, self.size - self.pos - len(self.ahead)))
        end = self.ahead.find(b"\n")
        return self.read(len(self.ahead) if end < 0 else end + 1)


class _Truncated(Exception):
    def __init__(self, at: int, wanted: int) -> None:
        super().__init__(at, wanted)
        self.at, self.wanted = at, wanted


class _TooMuch(Exception):
    def __init__(self, at: int, used: int) -> None:
        super().__init__(at, used)
        self.at, self.used = at, used


def _resident() -> int:
    """The process's resident memory (bytes; 0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass
class Plain:
    """What a pickle held: its ``value`` (plain data), its ``protocol``, the file's ``size``
    and the bytes after its ``STOP`` opcode (``trailing``: not read)."""

    value: Any
    protocol: int
    size: int
    trailing: int
    #: the device whose history was read while unpickling (its list in ``value`` is empty), else None
    streamed_device: int | None = None


def load_plain(path: str | os.PathLike[str], stream: Any = None) -> Plain:
    """The plain value the pickle at ``path`` holds (see the module docstring).  ``stream``: its
    ``consumer(device)`` is where the history of a device goes batch by batch while unpickling
    (:mod:`.stream`); when the file's layout does not allow it, or that read fails, ``reset()``
    is called and the file read whole (``Plain.streamed_device`` says which).  Raises
    :class:`~tracetui.errors.TraceFormatError` for a pickle that names a global, a protocol
    other than 2-5, a truncated or damaged pickle, and
    :class:`~tracetui.errors.TraceTooLargeError` for one that would not fit in memory."""
    p = trace_path(path)
    if copyreg._extension_registry or copyreg._extension_cache:  # type: ignore[attr-defined]
        raise TraceFormatError(p, "the process has pickle extension codes registered (copyreg.add_extension): "
                                  "snapshots are not read beside them")
    with open_regular(p) as fh:
        size = os.fstat(fh.fileno()).st_size
        proto = pickle_protocol(fh.read(2))
        fh.seek(0)
        if proto is None:
            raise TraceFormatError(p, "not a pickle (no PROTO opcode at byte 0): a CUDA memory snapshot is a pickle "
                                      "written by torch.cuda.memory._dump_snapshot")
        if proto not in PROTOCOLS:
            raise TraceFormatError(p, f"pickle protocol {proto}: a snapshot is written with protocol 2 to 5")
        point = find_point(fh, size) if stream is not None else None
        avail = available_memory_bytes()
        prunes = point is not None and pruning_works(_probe_read)
        need = size * (PRUNED_FACTOR if prunes else STREAMED_FACTOR if point is not None else OBJECT_FACTOR)
        if avail is not None and need > avail:
            raise TraceTooLargeError(p, f"needs about {bytes_rounded(need)} of memory to load "
                                        f"but only {bytes_rounded(avail)} is available")
        if point is not None:
            for prune in (True, False) if prunes else (False,):
                pid = token()
                lst = StreamList(stream.consumer(point.device), MemoPruner() if prune else None)
                try:
                    got = _unpickle(p, Spliced(fh, size, point, injection(pid)), size, avail, (pid, lst))
                except PruneMiss:  # an object dropped was named again: read again, nothing dropped
                    stream.reset()
                    continue
                except TraceError:  # the plain read says what is wrong (never the change's doing)
                    got = None
                traces = got[0].get("device_traces") if got is not None and isinstance(got[0], dict) else None
                if got and got[2] and isinstance(traces, list) and point.device < len(traces) and \
                        traces[point.device] is lst:
                    return Plain(got[0], proto, size, got[1], point.device)
                del got, traces  # the change was not the list's (a key inside a string ...): read it whole
                break
            stream.reset()
        fh.seek(0)
        value, trailing, _ = _unpickle(p, fh, size, avail, None)
    return Plain(value, proto, size, trailing)


def _unpickle(p: str, source: Any, size: int, avail: int | None, stream: tuple[str, StreamList] | None
              ) -> tuple[Any, int, bool]:
    """(value, bytes after STOP, whether the stream's list was asked for) of ``source``."""
    reader = _Reader(source, getattr(source, "size", size), avail)
    physical = getattr(source, "physical", lambda pos: pos)
    pruner = stream[1].pruner if stream is not None else None
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        unpickler = PlainUnpickler(reader, stream)
        if pruner is not None:
            pruner.unpickler = unpickler
        value = unpickler.load()
    except _Refused as exc:
        raise TraceFormatError(p, f"the pickle asks for {exc.args[0]}: {REFUSED}") from None
    except _Truncated as exc:
        raise TraceFormatError(p, f"file ends at byte {size:,} where {exc.wanted:,} more bytes were expected "
                                  f"at byte {physical(exc.at):,} (truncated snapshot)") from None
    except _TooMuch as exc:
        raise TraceTooLargeError(p, f"builds {bytes_rounded(exc.used)} of objects from its first "
                                    f"{physical(exc.at):,} bytes of {size:,}: more than the "
                                    f"{bytes_rounded(avail or 0)} available (stopped there)") from None
    except MemoryError:
        raise TraceTooLargeError(p, f"does not fit in memory (stopped at byte {physical(reader.pos):,} of {size:,})"
                                 ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
            OverflowError, UnicodeDecodeError, RecursionError) as exc:
        if pruner is not None and pruner.prunes and str(exc).startswith(_MEMO_MISS):
            raise PruneMiss from None  # an object pruned was named again (not the file's fault)
        raise TraceFormatError(p, _damaged(exc, physical(reader.pos), size)) from None
    finally:
        if pruner is not None:
            pruner.release()
        if was_enabled:
            gc.enable()
    return value, size - physical(reader.pos), unpickler.streamed


def _probe_read(data: bytes, pruner: MemoPruner) -> tuple[Any, list[tuple[Any, Any]]]:
    """:func:`~.prune.pruning_works`'s read: ``data`` streamed as a snapshot is, the entries
    emptied as :mod:`.reader` empties them, ``pruner`` pruning."""
    fh = io.BytesIO(data)
    point = find_point(fh, len(data))
    if point is None:
        raise ValueError("the probe's layout was not found")
    seen: list[tuple[Any, Any]] = []

    def consume(items: list[Any]) -> None:
        for e in items:
            seen.append((e.get("action"), e.get("addr")))
            fl = e.get("frames")
            if type(fl) is list:
                fl[:] = ((None, 0),)
            e.clear()

    pid = token()
    lst = StreamList(consume, pruner)
    value, _, asked = _unpickle("(probe)", Spliced(fh, len(data), point, injection(pid)), len(data), None, (pid, lst))
    if not asked or value["device_traces"][point.device] is not lst:
        raise ValueError("the probe's list was not streamed")
    return value, seen


def _damaged(exc: BaseException, at: int, size: int) -> str:
    """The one line for a pickle the unpickler could not read (``at``: bytes it consumed)."""
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, EOFError) or "truncated" in msg or at >= size:
        return f"file ends at byte {size:,} before the pickle's end (truncated snapshot)"
    return f"not a readable pickle: {msg} (after byte {at:,})"
