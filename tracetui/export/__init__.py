"""Export a subtree (or the whole trace) as Markdown, HTML, CSV, JSON, a Chrome trace or folded stacks.

Python API (the TUI's ``e`` key calls :func:`write_export` on the selected node)::

    from tracetui.export import write_export
    write_export(linked, root_node, "md", "report.md")        # root_node None: whole trace
    write_export(linked, root_node, "chrome", sys.stdout.buffer)

CLI: ``tracetui export TRACE [--et ET] [--select SELECTOR] --format FMT -o OUT [--python-frames]
[--by cpu|gpu]`` (:func:`export_command`); selectors are described in :mod:`tracetui.export.selectors`;
``folded`` writes the subtree's call stacks for flame-graph tools (:mod:`tracetui.export.folded`:
``--by`` the CPU or the GPU time, integer ns).
The reports (md, html, csv, json) list python function frames only when asked
(``python_frames=True``); the Chrome trace keeps every event of the subtree.
A path ending in ``.gz`` is written gzip-compressed.  A file is written atomically (a temp
file renamed over the target once complete: a failed write keeps the old file).  Trace text
is data, the same in a file, a pipe or on a terminal: md, csv and html show every control,
bidi and invisible character of a name escaped visibly (:func:`tracetui.errors.one_line`, in
each renderer); json and chrome keep every string exact, with such characters written as
JSON's ``\\u`` escapes (:func:`tracetui.io.jsonout.escape_controls`).
"""

from __future__ import annotations

import io
import os
import sys
from typing import IO

from ..analysis.categories import KernelCategorizer, get_categorizer
from ..errors import TraceError, TraceFileError
from ..io.files import gzip_pieces, write_atomically
from ..session import LinkedTrace
from .selectors import SelectorError, resolve_selector

FORMATS = ("md", "html", "csv", "json", "chrome", "folded")

__all__ = ["FORMATS", "SelectorError", "empty_note", "export_bytes", "export_command", "resolve_selector",
           "write_export"]


def export_bytes(linked: LinkedTrace, root_node: int | None, fmt: str,
                 categorizer: KernelCategorizer | None = None, max_rows: int | None = None,
                 python_frames: bool = False, by: str = "cpu") -> bytes:
    """The export of the subtree under ``root_node`` (None: whole trace) as bytes (UTF-8 text).

    ``fmt`` is one of :data:`FORMATS`; ``max_rows`` cuts md/html tables (default 200 rows);
    ``python_frames`` lists python function frames among a report's host events (and keeps
    them in the CPU time's folded stacks); ``by``: what the folded stacks count (``cpu``,
    ``gpu``).
    An Execution Trace alone exports its counts and tree (:mod:`tracetui.export.et_export`;
    ``root_node`` is then an ET position).
    """
    if fmt not in FORMATS:
        raise TraceError(None, f"unknown export format {fmt!r} (expected {', '.join(FORMATS)})")
    kt = linked.kineto
    if kt is None:
        if linked.et is None:
            raise TraceError(None, "nothing to export: no trace is loaded")
        from .et_export import et_export_bytes
        from .sections import DEFAULT_MAX_ROWS

        return et_export_bytes(linked.et, root_node, fmt, DEFAULT_MAX_ROWS if max_rows is None else max_rows)
    if fmt == "chrome":
        from .chrome import render_chrome

        if root_node is not None and not 0 <= root_node < kt.n_nodes:
            raise TraceError(kt.path, f"node {root_node} does not exist (0..{kt.n_nodes - 1})")
        return render_chrome(kt, root_node)  # (its pieces: escape_controls)
    if fmt == "folded":
        from .folded import render_folded

        return render_folded(kt, root_node, by, python_frames)
    from .report import build_report

    rep = build_report(linked, root_node, categorizer, python_frames=python_frames)
    if fmt == "json":
        from .csv_json import render_json

        return render_json(rep)
    if fmt == "csv":
        from .csv_json import render_csv

        return render_csv(rep).encode("utf-8")
    from .sections import DEFAULT_MAX_ROWS

    rows = DEFAULT_MAX_ROWS if max_rows is None else max_rows
    if fmt == "md":
        from .markdown import render_markdown

        return render_markdown(rep, rows).encode("utf-8")
    from .html import render_html

    return render_html(rep, rows).encode("utf-8")


def write_export(linked: LinkedTrace, root_node: int | None, fmt: str, path_or_stream: str | os.PathLike[str] | IO,
                 categorizer: KernelCategorizer | None = None, max_rows: int | None = None,
                 python_frames: bool = False, by: str = "cpu") -> int:
    """Write the export to a path (``.gz`` suffix: gzip) or a stream; returns bytes written.

    Streams opened in text mode get text, binary streams get bytes.  Unwritable paths
    raise :class:`~tracetui.errors.TraceFileError` (one line naming the path).
    """
    data = export_bytes(linked, root_node, fmt, categorizer, max_rows, python_frames, by)
    if hasattr(path_or_stream, "write"):
        stream = path_or_stream
        if isinstance(stream, io.TextIOBase) or "b" not in getattr(stream, "mode", "b"):
            stream.write(data.decode("utf-8"))
        else:
            stream.write(data)
        return len(data)
    path = os.fspath(path_or_stream)
    try:
        view = memoryview(data)
        pieces = gzip_pieces(view[i:i + (1 << 22)] for i in range(0, len(data), 1 << 22)) if path.endswith(".gz") \
            else [data]
        write_atomically(path, pieces, durable=True)
    except OSError as exc:
        raise TraceFileError(path, f"cannot write the export: {exc.strerror or exc}") from None
    return len(data)


def empty_note(fmt: str, by: str = "cpu") -> str:
    """Why an export of ``fmt`` came out empty: only folded stacks can (a row with no host time
    under it, as a GPU lane; no GPU time, as a CPU-only trace).  The file is still written (an
    empty list of stacks, which the flame-graph tools reject themselves) and the user told."""
    what = "GPU time" if fmt == "folded" and by == "gpu" else "host (CPU) time"
    return f"no {what} under the selection: the folded stacks are empty"


def export_command(linked: LinkedTrace, selector: str | None, fmt: str, output: str, rules: str | None,
                   python_frames: bool = False, by: str = "cpu") -> int:
    """``tracetui export``: resolve the selector, write the file (``-``: stdout); returns 0."""
    categorizer = get_categorizer(rules)
    if linked.kineto is None and linked.et is not None:
        from .et_export import resolve_et_selector

        root = resolve_et_selector(linked.et, selector)
    else:
        root = resolve_selector(linked, selector)
    if output == "-":
        data = export_bytes(linked, root, fmt, categorizer, python_frames=python_frames, by=by)
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        written = len(data)
    else:
        if os.path.isdir(output):
            raise TraceFileError(output, "is a directory; give a file name to write the export to")
        written = write_export(linked, root, fmt, output, categorizer, python_frames=python_frames, by=by)
    if not written:
        sys.stderr.write(f"tracetui export: {empty_note(fmt, by)}\n")
    return 0
