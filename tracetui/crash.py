"""The one error boundary for bugs: an unexpected exception in the CLI or the browser ends
in a one-line message, a saved traceback file and exit status :data:`EXIT_INTERNAL_ERROR`.

Bad input is not a bug: it raises :class:`~tracetui.errors.TraceError`, whose message is
shown as is (exit 2).  Anything else reaching the top is a defect of tracetui; the user
sees what failed, on which files, and where the traceback was saved for a bug report,
never a raw traceback on the screen.  Tracebacks go to ``<cache dir>/crashes/`` (the
cache folder of :func:`tracetui.store.traces.cache_dir`), or the system temp folder when that
cannot be written.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import one_line

#: Exit status after an unexpected internal error (2 is bad input, 130 an interrupt).
EXIT_INTERNAL_ERROR = 3


@dataclass(frozen=True)
class CrashReport:
    """An unexpected exception: the one-line ``message`` and where its traceback was
    saved (``traceback_path`` is None when no folder could be written)."""

    message: str
    traceback_path: str | None

    def line(self) -> str:
        """What the user reads: ``tracetui: <what failed> (traceback saved to <path>)``."""
        where = (f"traceback saved to {self.traceback_path}" if self.traceback_path
                 else "no traceback file could be written")
        return f"tracetui: {self.message} ({one_line(where)})"


def _crash_folders() -> list[Path]:
    from .store.traces import cache_dir

    return [cache_dir() / "crashes", Path(tempfile.gettempdir()) / "tracetui-crashes"]


def save_traceback(exc: BaseException, context: str) -> str | None:
    """Write ``exc``'s traceback (with ``context`` and the versions that matter) to a new
    file; return its path, or None when no folder was writable."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    header = [f"tracetui internal error: {context}", f"python {sys.version.split()[0]} on {sys.platform}"]
    try:
        from importlib.metadata import version

        header += [f"{pkg} {version(pkg)}" for pkg in ("tracetui", "textual", "rich", "numpy")]
    except Exception:  # metadata is a nicety; the traceback is what matters
        pass
    body = "\n".join(header) + "\n\n" + text
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in _crash_folders():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=f"crash-{stamp}-", suffix=".txt", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(body)
            return path
        except OSError:
            continue
    return None


def describe(exc: BaseException, doing: str, paths: Sequence[str] = ()) -> str:
    """``internal error while <doing> <files>: <Type>: <message>`` on one line."""
    files = " + ".join(os.path.basename(p) for p in paths)
    on = f" {files}" if files else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    what = type(exc).__name__ + (f": {detail}" if detail else "")
    return one_line(f"internal error while {doing}{on}: {what}")


def report(exc: BaseException, doing: str, paths: Sequence[str] = ()) -> CrashReport:
    """Save the traceback of ``exc`` and build the user's one-line report."""
    message = describe(exc, doing, paths)
    return CrashReport(message, save_traceback(exc, message))
