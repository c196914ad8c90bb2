"""The query sandbox: what SQL run by tracetui may touch (docs/query.md, docs/security.md).

Trace text cannot inject SQL, but the SQL itself may come from someone else: a shared
``--file q.sql``, a program that passes SQL on.  So every :class:`~tracetui.query.QuerySession`
(the CLI, the browser's ``:`` bar, the API) opens DuckDB with:

- **external access off** (:func:`connect`): no file is read or written (``COPY ... TO``,
  ``ATTACH``, ``EXPORT DATABASE``, ``read_csv``/``read_text``/``glob``, a file name as a
  table), no temp files (``temp_directory`` off: a temp folder would be a folder queries may
  write), no extension installed or loaded, so no network (``http://`` needs ``httpfs``);
  ``allow_files`` (``tracetui query --allow-files``) turns file access on for that session
  only: extensions, the network and the settings stay off;
- **``INSTALL``/``LOAD``/``UPDATE EXTENSIONS`` refused** before DuckDB sees them
  (:func:`refusal`), whatever ``allow_files`` says;
- **the configuration locked**: ``SET``/``PRAGMA``/``RESET`` of a setting fails;
- **no Python variables as tables** (``python_enable_replacements`` off: DuckDB would
  otherwise read any DataFrame a calling function holds, by its variable's name);
- **bounded memory and threads**: :data:`MEMORY_SHARE` of the memory available when the
  session starts (``io.limits.available_memory_bytes``: cgroups, ``ulimit``,
  ``TRACETUI_MEMORY_LIMIT_MB``), the CPUs this process may use;
- **a time limit** (:func:`call_with_limit`): the query runs on a helper thread while the
  calling thread waits, so the limit, a cancel (the browser's Esc) and Ctrl+C each stop it
  with DuckDB's interrupt.

DuckDB's refusals are turned into one line naming what was refused and, where it would allow
it, the option (:func:`explain`).  No heavy import here (the CLI's parser reads the defaults).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: seconds a query may run unless told otherwise (``tracetui query --timeout``, the API): a
#: query over the documented tables answers in milliseconds on the shared traces and a GROUP BY
#: over a million events in about 0.3 s (README, ``bench/bench_query.py``; building a table is
#: not counted), so 30 s leaves a heavy join a hundred times that, while a runaway query (a
#: cross join, ``range(1000000000000)``) gives the terminal, or a program's request, back in
#: half a minute
DEFAULT_TIMEOUT_S = 30.0
#: share of the available memory DuckDB may use for one session (the rest: the tables'
#: frames, the rows fetched into Python, the browser)
MEMORY_SHARE = 0.5
#: the command-line options the messages name
FILES_OPTION = "--allow-files"
TIMEOUT_OPTION = "--timeout"
#: what a refusal adds where the option would allow it (``tracetui mcp`` says instead that it never does)
FILES_HINT = f" (tracetui query {FILES_OPTION} allows it)"
#: DuckDB's suffix for a size in bytes (its memory_limit takes a number with a unit)
DUCKDB_BYTES = "b"
#: how often the waiting thread looks at a cancel request while a query runs
POLL_S = 0.05

_FILE = re.compile(r'Cannot access (?:file|directory) "(.*?)" - file system operations are disabled')
_LOCKED = re.compile(r'Cannot change configuration option "(.*?)" - the configuration has been locked')
_NETWORK = re.compile(r'File (\S+://\S*) requires the extension')
_EXTERNAL = "Cannot enable external access"
#: the extension a statement names
_NAME = re.compile(r"^\s*([\w.\-]+)")
#: statements about extensions (UPDATE EXTENSIONS: the Python client's StatementType lacks it)
_EXTENSION_WORDS = re.compile(r"\s*(update\s+extensions|force\s+install|install|load)\b", re.IGNORECASE)


def connect(allow_files: bool, memory_bytes: int | None, threads: int) -> Any:
    """A DuckDB connection (in memory) with the sandbox's settings (see the module docstring).

    External access is turned off and the configuration locked by ``SET`` once the other
    settings are in: DuckDB applies a ``config`` dict in an order of its own, and refuses
    ``temp_directory`` after external access is off."""
    import duckdb

    config: dict[str, Any] = {
        "temp_directory": "",
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "python_enable_replacements": False,
        "threads": max(1, int(threads)),
    }
    if memory_bytes:
        config["memory_limit"] = str(max(memory_bytes, 64 << 20)) + DUCKDB_BYTES
    con = duckdb.connect(":memory:", config=config)
    if not allow_files:
        con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def memory_bytes() -> int | None:
    """What DuckDB may use: :data:`MEMORY_SHARE` of the memory available now (None: DuckDB's
    own default, where nothing can be read)."""
    from ..io.limits import available_memory_bytes

    avail = available_memory_bytes()
    return None if avail is None else int(avail * MEMORY_SHARE)


def refusal(statements: list[Any]) -> str | None:
    """Why one of ``statements`` (DuckDB's parsed statements) is refused before it runs
    (``INSTALL``, ``LOAD``, ``UPDATE EXTENSIONS``), else None."""
    for st in statements:
        text = str(getattr(st, "query", "") or "")
        try:
            kind = st.type.name
        except ValueError:  # a statement type the Python client does not list (UPDATE EXTENSIONS)
            kind = "UNKNOWN"
        m = _EXTENSION_WORDS.match(text)
        if kind == "LOAD" or (kind == "UNKNOWN" and m):
            what = " ".join(m.group(1).split()).upper() if m else "INSTALL/LOAD"
            name = _NAME.findall(text[m.end():])[:1] if m and what != "UPDATE EXTENSIONS" else []
            return (f"{' '.join([what, *name])}: queries may not install or load DuckDB extensions "
                    "(they could reach the network)")
    return None


def explain(kind: str, message: str, allow_files: bool, memory_limit: int | None) -> str:
    """One line for DuckDB's error ``message`` of class ``kind`` (``PermissionException`` ...):
    what the sandbox refused and, where it would allow it, the option; else the message."""
    files_hint = "" if allow_files else FILES_HINT
    m = _FILE.search(message) or _NETWORK.search(message)
    if m and "://" in m.group(1):
        return f'queries may not reach the network (no DuckDB extension is loaded): "{m.group(1)}"'
    if m:
        return f'queries may not read or write files{files_hint}: "{m.group(1)}"'
    m = _LOCKED.search(message)
    if m and m.group(1) == "enable_external_access":
        return f'the setting "{m.group(1)}" is locked: queries may not change DuckDB\'s settings{files_hint}'
    if m:
        return f'the setting "{m.group(1)}" is locked: queries may not change DuckDB\'s settings'
    if _EXTERNAL in message:
        return f'the setting "enable_external_access" is locked: queries may not change DuckDB\'s settings{files_hint}'
    if kind == "PermissionException" and not allow_files:
        return f"{message}{files_hint}"
    if kind == "OutOfMemoryException" and memory_limit:
        from ..units import bytes_rounded

        return f"{message} (a query may use {bytes_rounded(memory_limit)} here: add LIMIT or aggregate)"
    return message


@dataclass
class Outcome:
    """What :func:`call_with_limit` saw: the work's ``value`` or ``error``, and whether the
    time limit (``timed_out``) or a cancel (``cancelled``) interrupted it."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    cancelled: bool = False


def call_with_limit(work: Callable[[], Any], interrupt: Callable[[], None], timeout_s: float | None,
                    cancel: threading.Event) -> Outcome:
    """Run ``work()`` on a helper thread while this thread waits; after ``timeout_s`` seconds
    (None or 0: no limit), when ``cancel`` is set, or on Ctrl+C (KeyboardInterrupt in this
    thread) call ``interrupt()`` until the work has ended.  KeyboardInterrupt is raised again
    once it has; the rest is in the :class:`Outcome`.  The interrupt is repeated because one
    that lands before DuckDB starts the statement is forgotten."""
    out = Outcome()
    done = threading.Event()

    def target() -> None:
        try:
            out.value = work()
        except BaseException as exc:  # noqa: BLE001 -- handed to the waiting thread as it is
            out.error = exc
        finally:
            done.set()

    helper = threading.Thread(target=target, name="tracetui-query", daemon=True)
    deadline = time.monotonic() + timeout_s if timeout_s else None
    try:
        helper.start()
        while not done.wait(POLL_S):
            if cancel.is_set():
                out.cancelled = True
                break
            if deadline is not None and time.monotonic() >= deadline:
                out.timed_out = True
                break
    except KeyboardInterrupt:
        if helper.ident is not None:  # started (Ctrl+C may come while it starts)
            _stop(done, interrupt)
        raise
    if not done.is_set():
        _stop(done, interrupt)
    return out


def _stop(done: threading.Event, interrupt: Callable[[], None]) -> None:
    """Interrupt until the work has ended (a second Ctrl+C meanwhile is not lost: it is
    raised once the work has stopped)."""
    pending: KeyboardInterrupt | None = None
    while True:
        try:
            interrupt()
            if done.wait(POLL_S):
                break
        except KeyboardInterrupt as exc:
            pending = exc
    if pending is not None:
        raise pending
