"""What each tool of ``tracetui mcp`` answers, free of the MCP SDK (tests call it directly).

A tool is a command of the command line: it calls the same headless functions and answers the
same JSON document as the command's ``--json`` (``summary``, ``check``, ``critical-path``,
``diff``, ``memory``, ``query``), the lines of ``tracetui tree``, or the files a ``slice`` wrote;
then :func:`~tracetui.mcp_server.bounds.bound` cuts it to fit one answer.  Paths go through the
roots (:mod:`tracetui.mcp_server.roots`); a trace is loaded once per session
(:mod:`tracetui.mcp_server.loaded`); queries never touch files; a slice is written only into the
server's own folder.  Bad requests raise a :class:`~tracetui.errors.TraceError` whose message is
one line (the server hands it to the agent as the tool's error).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import units
from ..errors import TraceError
from ..io import jsonout
from . import bounds
from .bounds import BadRequest, bound
from .loaded import DOCUMENTS, KeptTrace, LoadedTraces
from .roots import Roots

#: what the query sandbox's refusals say instead of the command line's option (the server
#: never lets a query touch files)
NO_FILES = " (this server's queries never read or write files)"
#: how deep :meth:`Tools.list_traces` looks under a folder
LIST_DEPTH = 4
#: files :meth:`Tools.list_traces` looks at, at most (a root that is a whole disk stays cheap)
LIST_FILES = 2000


def plain(doc: Any) -> Any:
    """``doc`` as the JSON types the command line prints (numpy values, tuples: as JSON reads back)."""
    return jsonout.loads(jsonout.dumps(doc))


class Tools:
    """The tools of one server session: its roots, its folder for slices, its loaded traces.

    Calls run one at a time (the lock): the analyses keep per-trace memos that are not
    meant to be filled by two threads at once, and one query at a time keeps DuckDB's memory
    bound.  ``timeout_s``: seconds a query may run."""

    def __init__(self, roots: Roots, out_dir: str, budget: int, timeout_s: float | None, *,
                 workers: int | None = None) -> None:
        self.roots = roots
        self.out_dir = out_dir
        self.traces = LoadedTraces(budget)
        self.timeout_s = timeout_s
        self.workers = workers
        self.lock = threading.Lock()
        self.job_documents: OrderedDict[tuple, Any] = OrderedDict()

    # ------------------------------------------------------------------ inputs
    def _inputs(self, trace: str, et: str | None = None, driver: str | None = None, *,
                job: bool = True) -> tuple[list[str], bool]:
        """The real paths of a request's files and whether they are a job (a folder)."""
        real = self.roots.resolve(trace, folder=job, what="trace")
        if os.path.isdir(real):
            if et or driver:
                raise BadRequest("et and driver are for one trace; a job folder's ETs are found in it")
            return [real], True
        files = [real]
        if et:
            files.append(self.roots.resolve(et, what="Execution Trace"))
        if driver:
            files.append(self.roots.resolve(driver, what="driver-call trace"))
        return files, False

    def _kept(self, files: list[str]) -> KeptTrace:
        return self.traces.get(files)

    def _job_document(self, key: tuple, folder: str, make: Callable[[], Any]) -> Any:
        """A job's document, kept for paging (keyed by the folder's listing: sizes, mtimes)."""
        try:
            listing = tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)
                                   if e.is_file()))
        except OSError:
            listing = ()
        full = (*key, folder, listing)
        if full in self.job_documents:
            self.job_documents.move_to_end(full)
            return self.job_documents[full]
        doc = self.job_documents[full] = make()
        while len(self.job_documents) > DOCUMENTS:
            self.job_documents.popitem(last=False)
        return doc

    def _document(self, tool: str, args: tuple, trace: str, et: str | None, driver: str | None,
                  one: Callable[[KeptTrace], Any], job: Callable[[str], Any] | None) -> Any:
        files, is_job = self._inputs(trace, et, driver, job=job is not None)
        if is_job:
            assert job is not None
            return self._job_document((tool, *args), files[0], lambda: plain(job(files[0])))
        kept = self._kept(files)
        return kept.document((tool, *args), lambda: plain(one(kept)))

    # ------------------------------------------------------------------ tools
    def list_traces(self, folder: str | None = None, *, part: str | None = None, offset: int = 0,
                    rows: int | None = None) -> dict[str, Any]:
        """The trace files under the roots (or under ``folder``, inside them), by content, and
        the folders holding two or more of them (a job's folder)."""
        from .. import formats

        starts = [self.roots.resolve(folder, folder=True, what="folder")] if folder else list(self.roots.folders)
        files: list[dict[str, Any]] = []
        folders: list[dict[str, Any]] = []
        seen = 0
        for start in starts:
            for here, dirs, names in os.walk(start):
                if seen >= LIST_FILES:
                    break
                if here != start and os.path.relpath(here, start).count(os.sep) + 1 >= LIST_DEPTH:
                    dirs[:] = []
                dirs.sort()
                n = 0
                for name in sorted(names)[:LIST_FILES - seen]:
                    seen += 1
                    path = os.path.join(here, name)
                    try:
                        kind = formats.detect(self.roots.resolve(path))
                    except TraceError:
                        continue  # links out of the roots, devices, FIFOs, other files: not listed
                    n += 1
                    files.append({"path": path, "bytes": os.path.getsize(path), "format": kind.spec.name})
                if n > 1:
                    folders.append({"path": here, "trace_files": n})
        doc = {"roots": list(self.roots.folders), "slices_folder": self.out_dir, "folders": folders, "files": files}
        if seen >= LIST_FILES:
            doc["incomplete"] = (f"stopped after looking at {LIST_FILES:,} files: give folder= to list one folder "
                                 "under the roots")
        return bound(doc, tool="list_traces", part=part, offset=offset, rows=rows)

    def summary(self, trace: str, et: str | None = None, driver: str | None = None, *, top: int = 15,
                part: str | None = None, offset: int = 0, rows: int | None = None) -> dict[str, Any]:
        """``tracetui summary --json``: one trace (with its ET / driver-call trace) or a job folder."""
        top = max(top, 0)

        def one(kept: KeptTrace) -> Any:
            from ..analysis.categories import get_categorizer
            from ..analysis.summary import build_summary

            return build_summary(kept.linked, get_categorizer(None), top=top)

        def job(folder: str) -> Any:
            from ..job import job_summary, open_job

            return job_summary(open_job([folder], workers=self.workers, top=top))

        doc = self._document("summary", (top,), trace, et, driver, one, job)
        return bound(doc, tool="summary", part=part, offset=offset, rows=rows)

    def check(self, trace: str, et: str | None = None, driver: str | None = None, *, part: str | None = None,
              offset: int = 0, rows: int | None = None) -> dict[str, Any]:
        """``tracetui check --json``: the findings, sorted by time at stake; one trace or a job folder."""
        from ..findings.spec import rule_configs

        def one(kept: KeptTrace) -> Any:
            from ..analysis.categories import get_categorizer
            from ..findings.engine import run_checks

            return run_checks(kept.linked, rule_configs(None), get_categorizer(None)).as_json()

        def job(folder: str) -> Any:
            from ..findings.jobs import check_job

            return check_job([folder], rule_configs(None), workers=self.workers).as_json()

        doc = self._document("check", (), trace, et, driver, one, job)
        return bound(doc, tool="check", part=part, offset=offset, rows=rows)

    def critical_path(self, trace: str, et: str | None = None, *, step: int | None = None,
                      annotation: str | None = None, instance: int = 1, select: str | None = None,
                      method: str = "elapsed", shrink: list[str] | None = None, part: str | None = None,
                      offset: int = 0, rows: int | None = None) -> dict[str, Any]:
        """``tracetui critical-path --json``: the window's path, by kind, segments and slack."""
        from ..critical import Shrink, check_method

        if sum(x is not None for x in (step, annotation, select)) > 1:
            raise BadRequest("give one window: step, annotation or select")
        try:
            cuts = [Shrink.parse(s) for s in shrink or []]
            check_method(method, cuts)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None

        def one(kept: KeptTrace) -> Any:
            from ..critical import critical_path

            kt = kept.linked.kineto
            if kt is None:
                raise TraceError(trace, "critical_path needs a Kineto trace (GPU trace)")
            return critical_path(kt, _window(kept.linked, step, annotation, instance, select), shrink=cuts,
                                 method=method).to_json()

        def job(folder: str) -> Any:
            from ..job.critical import job_critical_paths

            if method != "elapsed" or cuts or select:
                raise BadRequest("a job's path takes step or annotation only (method, shrink and select are for "
                                 "one rank's trace)")
            res = job_critical_paths([folder], step=step, annotation=annotation, instance=instance,
                                     workers=self.workers)
            res.chosen.trace_path = res.title
            doc = res.chosen.to_json()
            doc["warnings"] = res.warnings
            return doc

        args = (step, annotation, instance, select, method, tuple(shrink or ()))
        doc = self._document("critical_path", args, trace, et, None, one, job)
        return bound(doc, tool="critical_path", part=part, offset=offset, rows=rows)

    def memory(self, trace: str, et: str | None = None, *, top: int = 10, part: str | None = None,
               offset: int = 0, rows: int | None = None) -> dict[str, Any]:
        """``tracetui memory --json``: allocations per device, the peak and the ops that own it."""
        top = max(top, 0)

        def one(kept: KeptTrace) -> Any:
            from ..analysis.memory_doc import memory_document
            from ..errors import WrongTraceKindError

            if kept.linked.kineto is None:
                raise WrongTraceKindError(trace, "memory needs a Kineto trace (this is an Execution Trace only)")
            return memory_document(kept.linked, top=top)

        doc = self._document("memory", (top,), trace, et, None, one, None)
        return bound(doc, tool="memory", part=part, offset=offset, rows=rows)

    def diff(self, a: str, b: str, *, et_a: str | None = None, et_b: str | None = None, step_a: int | None = None,
             step_b: int | None = None, top: int = 15, part: str | None = None, offset: int = 0,
             rows: int | None = None) -> dict[str, Any]:
        """``tracetui diff A B --json``: two traces (with their ETs), or two job folders rank by rank."""
        from ..diff.runs import diff_files, diff_jobs

        fa, job_a = self._inputs(a, et_a)
        fb, job_b = self._inputs(b, et_b)
        if job_a != job_b:
            raise BadRequest("compare a trace with a trace, or a job folder with a job folder")
        top = max(top, 0)
        if job_a:
            doc = diff_jobs(fa[0], fb[0], step_a=step_a, step_b=step_b, top=top, workers=self.workers)
        else:
            doc = diff_files(fa, fb, step_a=step_a, step_b=step_b, top=top)
        return bound(plain(doc), tool="diff", part=part, offset=offset, rows=rows)

    def query(self, trace: str, sql: str, et: str | None = None, driver: str | None = None, *,
              rows: int | None = None) -> dict[str, Any]:
        """``tracetui query --json``: SQL over the trace's tables (or a job folder's), at most
        :data:`~tracetui.mcp_server.bounds.QUERY_ROWS` rows; never a file read or written."""
        from ..query.cells import json_value
        from ..query.engine import QueryError, QuerySession
        from ..query.sandbox import FILES_HINT

        limit = min(bounds.rows_asked(rows, bounds.QUERY_ROWS), bounds.QUERY_ROWS)
        files, is_job = self._inputs(trace, et, driver)
        sandbox = {"allow_files": False, "timeout_s": self.timeout_s}
        if is_job:
            session = QuerySession.for_job(files, workers=self.workers, **sandbox)
            keep = False
        else:
            kept = self._kept(files)
            if kept.query is None:
                from ..analysis.categories import get_categorizer

                kept.query = QuerySession.for_trace(kept.linked, get_categorizer(None), **sandbox)
            session, keep = kept.query, True
        try:
            res = session.run(sql, max_rows=limit)
        except QueryError as exc:
            raise QueryError("query", exc.problem.replace(FILES_HINT, NO_FILES)) from None
        finally:
            if not keep:
                session.close()
        doc: dict[str, Any] = {"rows": [{c: json_value(v) for c, v in zip(res.columns, r)} for r in res.rows],
                               "types": dict(zip(res.columns, res.types)), "more": res.truncated}
        if res.statement != "select":
            doc["statement"] = res.statement
        out = bound(doc, tool="query", rows=bounds.MAX_ROWS)
        notes = out.get(bounds.NOTE, [])
        rows_note = next((n for n in notes if n["what"] == "rows"), None)
        if rows_note is not None:  # cut to fit the characters: the query pages itself
            rows_note["ask"] = (f"add LIMIT {rows_note['kept']} OFFSET <n> to the SQL to page through the rows "
                                "(or aggregate)")
        if res.truncated:
            shown = len(out["rows"])
            if rows_note is None:
                rows_note = {"what": "rows", "kept": shown, "from": 0}
                notes.insert(0, rows_note)
            rows_note["of"] = f"more than {len(res.rows)}"
            rows_note["ask"] = (f"a query answers {limit} rows at most: add LIMIT {shown} OFFSET {shown} to the SQL "
                                "for the next rows, or aggregate")
            out[bounds.NOTE] = notes
        return out

    def tree(self, trace: str, et: str | None = None, *, depth: int | None = None, select: str | None = None,
             hide_python: bool = False, part: str | None = None, offset: int = 0,
             rows: int | None = None) -> dict[str, Any]:
        """``tracetui tree``: the op tree as indented lines (every lane, or one subtree)."""
        from ..export.tree_text import format_subtree
        from ..kineto.rollup import subtree_gpu_totals

        def one(kept: KeptTrace) -> Any:
            kt = kept.linked.kineto
            if kt is None:
                raise TraceError(trace, "tree needs a Kineto trace (an Execution Trace alone: tracetui tree)")
            totals = subtree_gpu_totals(kt)
            if select:
                from ..export.selectors import resolve_selector

                roots = [resolve_selector(kept.linked, select)]
            else:
                roots = kt.roots()
            text = "\n".join(format_subtree(kt, r, depth=depth, hide_python=hide_python, gpu_totals=totals)
                             for r in roots)
            return {"source": os.path.basename(kt.path), "lines": text.split("\n")}

        doc = self._document("tree", (depth, select, hide_python), trace, et, None, one, None)
        return bound(doc, tool="tree", part=part, offset=offset, rows=rows, default_rows=bounds.TREE_LINES)

    def slice(self, trace: str, et: str | None = None, *, step: int | None = None, window: str | None = None,
              select: str | None = None, ranks: str | None = None) -> dict[str, Any]:
        """``tracetui slice``: a smaller trace (a step, a window, a subtree; some ranks of a job),
        written into the server's folder; answers the files written."""
        from ..slicing import Cut, parse_ranks, parse_window, slice_job, slice_linked

        if sum(x is not None for x in (step, window, select)) > 1:
            raise BadRequest("give one cut: step, window or select")
        cut = Cut(step=step, window=parse_window(window) if window else None, select=select)
        files, is_job = self._inputs(trace, et)
        wanted = parse_ranks(ranks) if ranks else None
        if is_job:
            report = slice_job(files, wanted, cut, self._new_name(files[0], folder=True))
        else:
            if wanted is not None:
                raise BadRequest("ranks needs a job folder")
            if cut == Cut():
                raise BadRequest(f"say what to keep: step, window (START:END, {units.US}) or select")
            report = slice_linked(self._kept(files).linked, cut, self._new_name(files[0]))
        doc = {"files": [{"path": p, "what": w} for p, w in report.files.items()], "warnings": report.warnings}
        return bound(plain(doc), tool="slice")

    def _new_name(self, source: str, folder: bool = False) -> str:
        """A new path in the server's folder: ``slice-<n>-<source name>`` (never one that exists)."""
        from ..slicing.write import et_output_path

        base = os.path.basename(source.rstrip(os.sep))
        stem = base if folder else base.split(".")[0]
        n = 1
        while True:
            name = f"slice-{n}-{stem}" + ("" if folder else ".json.gz")
            path = os.path.join(self.out_dir, name)
            if not os.path.lexists(path) and not os.path.lexists(et_output_path(path)):
                return path
            n += 1

    def session(self) -> dict[str, Any]:
        """What the server holds: roots, its folder, the loaded traces and how often each
        request reused one."""
        return {"roots": list(self.roots.folders), "slices_folder": self.out_dir, "query_timeout_s": self.timeout_s,
                "caps": {"max_chars": bounds.MAX_CHARS, "list_rows": bounds.LIST_ROWS, "max_rows": bounds.MAX_ROWS,
                         "query_rows": bounds.QUERY_ROWS, "tree_lines": bounds.TREE_LINES},
                **self.traces.state()}

    def close(self) -> None:
        self.traces.close()


def _window(linked: Any, step: int | None, annotation: str | None, instance: int, select: str | None) -> Any:
    """The critical path's window, as ``tracetui critical-path`` picks it (:func:`tracetui.api.critical_window`)."""
    from ..api import critical_window

    return critical_window(linked, step=step, annotation=annotation, instance=instance, select=select,
                           option="select")
