"""Which paths ``tracetui mcp`` reads: only traces under the roots given at its start.

One function decides (:meth:`Roots.resolve`): the path (absolute, or relative to a root) is
resolved with every link followed (``os.path.realpath``) and must lie under one of the roots'
real paths; it must be a regular file (a folder where a job is allowed).  So ``/etc/passwd``,
``../../x``, a link inside a root that leads out of it, a device (``/dev/zero``), a FIFO or a
socket are refused, each with one line the agent can read.  The loaders open the resolved path,
and they too read regular files only (:func:`tracetui.io.files.open_regular`).  A job folder's
own files that lead outside the folder are skipped by job discovery (``follow_links`` is never
set by the server).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import TraceError, one_line
from ..io.files import not_regular

#: the option of ``tracetui mcp`` that names a root (the messages name it)
ROOT_OPTION = "--root"


class Refused(TraceError):
    """A path the server does not read: ``refused: <path> <why>`` on one line."""

    def __init__(self, path: str, why: str) -> None:
        self.why = why
        super().__init__(path, why)
        self.args = (f"refused: {one_line(path)} {one_line(why)}",)

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class Roots:
    """The folders whose traces the server may read (real paths, links resolved)."""

    folders: tuple[str, ...]

    @classmethod
    def of(cls, folders: list[str]) -> Roots:
        """The roots given at the start; TraceError for one that is not a folder."""
        out: list[str] = []
        for f in folders:
            real = os.path.realpath(f)
            if not os.path.isdir(real):
                raise TraceError(f, f"{ROOT_OPTION}: not a folder")
            if real not in out:
                out.append(real)
        if not out:
            raise TraceError(None, f"give at least one {ROOT_OPTION} DIR: the folders whose traces the server reads")
        return cls(tuple(out))

    def describe(self) -> str:
        return ", ".join(f"{ROOT_OPTION} {one_line(f)}" for f in self.folders)

    def root_of(self, real: str) -> str | None:
        """The root that holds the real path ``real``, else None."""
        for root in self.folders:
            if os.path.commonpath([real, root]) == root:
                return root
        return None

    def resolve(self, path: str, *, folder: bool = False, what: str = "trace") -> str:
        """The real path of ``path`` when the server may read it, else :class:`Refused`.

        ``path``: absolute, or relative to a root (the first root holding it).  ``folder``:
        a folder is accepted too (a job: every rank file in it).  Refused: a path outside
        every root, a link leading out of them, a missing path, a device, FIFO or socket,
        a folder where a file is wanted."""
        if not isinstance(path, str) or not path or "\0" in path:
            raise Refused(repr(path), f"is not a {what} path")
        candidates = [path] if os.path.isabs(path) else [os.path.join(r, path) for r in self.folders]
        given = next((c for c in candidates if os.path.lexists(c)), candidates[0])
        real = os.path.realpath(given)
        if self.root_of(real) is None:
            inside = self.root_of(os.path.abspath(given)) is not None
            why = f"is a link to {real}, outside the roots" if inside else "is outside the roots"
            raise Refused(path, f"{why} ({self.describe()})")
        try:
            st = os.stat(real)
        except OSError as exc:
            raise Refused(path, f"cannot be read ({exc.strerror or exc})" if os.path.lexists(given)
                          else "does not exist under the roots") from None
        kind = not_regular(st.st_mode)
        if kind == "a directory":
            if not folder:
                raise Refused(path, f"is a folder: give a {what} file")
        elif kind is not None:
            raise Refused(path, f"is {kind}, not a {what} file: only regular files are read")
        return real
