"""``tracetui mcp``: a Model Context Protocol server over stdio, on the official ``mcp`` SDK.

The tools are the commands (:mod:`tracetui.mcp_server.tools` answers them); this module gives
each a JSON schema (from the typed arguments below), a description an agent can act on, and
one boundary: a bad request or a refusal is one line (the tool's error), a bug one line naming
the saved traceback (:mod:`tracetui.crash`), never a traceback.  The only module that imports
the SDK (``pip install 'tracetui[mcp]'``).
"""

# no `from __future__ import annotations`: the SDK reads the tools' annotations as objects

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from .. import __version__, units
from ..errors import TraceError, one_line
from . import bounds
from .resources import RESOURCES
from .tools import Tools

NAME = "tracetui"
INSTRUCTIONS = f"""\
tracetui answers questions about GPU profiler traces (PyTorch profiler / Kineto JSON, Execution
Traces, driver-call traces) and whole jobs (a folder of rank files) under the server's roots.
Start with list_traces; then check (what is wrong, findings sorted by the time fixing each would
save), summary (where the GPU time went), critical_path (why a step took as long as it did),
memory, diff (two runs), tree (the op tree), query (SQL over the trace's tables: read
tracetui://query-tables first) and slice (a smaller trace to share).  Paths are absolute or
relative to a root.  Every answer is JSON of at most {bounds.MAX_CHARS:,} characters; lists keep
{bounds.LIST_ROWS} items unless rows= asks for more (up to {bounds.MAX_ROWS}); what was cut is
listed under "truncated" with the call that asks for the rest (part= and offset=).  Times are
{units.US} unless a key says otherwise (_ms, _s); event ids are the `node:<id>` selectors of tree,
critical_path and slice.  Words: tracetui://glossary; rules of check: tracetui://findings-rules."""

Trace = Annotated[str, Field(description="a trace file (Kineto .json/.json.gz, driver-call .jsonl ...) or, where "
                                         "the tool says so, a job folder; absolute or relative to a root")]
Et = Annotated[str | None, Field(description="the Execution Trace recorded with the trace (optional)")]
Driver = Annotated[str | None, Field(description="a driver-call trace of the same run (optional)")]
Part = Annotated[str | None, Field(description="only this piece of the answer: a dotted path of keys and list "
                                               "indices, e.g. \"kernels\" or \"memory.devices.0.owners_at_peak\" "
                                               "(the truncated notes name it)")]
Offset = Annotated[int, Field(ge=0, description="the first item of the list that part names (paging)")]
Rows = Annotated[int | None, Field(ge=1, le=bounds.MAX_ROWS, description=f"items kept of each list (default "
                                                                         f"{bounds.LIST_ROWS})")]
Top = Annotated[int, Field(ge=0, le=1000, description="rows of the top-N tables the command computes")]
Step = Annotated[int | None, Field(description="a profiler step: N of ProfilerStep#N")]


def build(tools: Tools) -> Any:
    """The MCP server whose tools call ``tools``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
    from pydantic import ValidationError

    class TraceServer(MCPServer):
        """The SDK's server, with arguments that fail their schema told in one line."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(bad_arguments(name, exc.__cause__)) from exc.__cause__
                raise

    server = TraceServer(name=NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

    def answer(tool: str, files: list[str | None], run: Callable[[], Any]) -> str:
        """Run one request (one at a time) and give its JSON text, or raise its one line."""
        with tools.lock:
            try:
                return bounds.text(run())
            except TraceError as exc:
                raise ToolError(str(exc)) from None
            except MemoryError:
                raise ToolError(f"{tool}: not enough memory for this request") from None
            except Exception as exc:  # the boundary: a bug is one line naming the saved traceback
                from ..crash import report

                raise ToolError(report(exc, f"answering {tool} on", [f for f in files if f]).line()) from None

    @server.tool(annotations=reads, structured_output=False)
    def list_traces(folder: Annotated[str | None, Field(description="a folder under the roots (default: every "
                                                                    "root)")] = None,
                    part: Part = None, offset: Offset = 0, rows: Rows = None) -> str:
        """The trace files under the roots (path, bytes, format read from the content) and the
        folders holding two or more of them (a job: pass the folder as `trace` to summary,
        check, critical_path, query, slice).  Call this first to find what can be opened."""
        return answer("list_traces", [folder], lambda: tools.list_traces(folder, part=part, offset=offset,
                                                                          rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def check(trace: Trace, et: Et = None, driver: Driver = None, part: Part = None, offset: Offset = 0,
              rows: Rows = None) -> str:
        """What is wrong with this run (`tracetui check --json`): findings sorted by the time
        fixing each would save (`time_at_stake_us`, an estimate), each with a verdict in
        numbers, the fix to try (`hint`), evidence event ids (`node:<id>` for tree/slice/
        critical_path select) and details; `rules` lists every rule run.  `trace` may be a job
        folder (findings of every rank and the straggler rule).  The best first call on a
        trace: the first finding is the top one."""
        return answer("check", [trace, et, driver],
                      lambda: tools.check(trace, et, driver, part=part, offset=offset, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def summary(trace: Trace, et: Et = None, driver: Driver = None, top: Top = 15, part: Part = None,
                offset: Offset = 0, rows: Rows = None) -> str:
        """Where the GPU time went (`tracetui summary --json`): the GPU timeline (computation,
        exposed communication and memcpy, idle, in ms), kernel categories, top kernels and ops,
        ops by input shape, streams, idle gaps by class, launches, roofline, memory.  `trace`
        may be a job folder: per-rank breakdowns, collectives matched across ranks (skews,
        bus bandwidth) and stragglers."""
        return answer("summary", [trace, et, driver],
                      lambda: tools.summary(trace, et, driver, top=top, part=part, offset=offset, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def critical_path(trace: Trace, et: Et = None, step: Step = None,
                      annotation: Annotated[str | None, Field(description="the window of a user annotation (exact "
                                                                          "name, else the names starting with it)")]
                      = None,
                      instance: Annotated[int, Field(ge=1, description="with annotation: its K-th instance in "
                                                                       "time order")] = 1,
                      select: Annotated[str | None, Field(description="the window of one op: node:<id>, "
                                                                      "ext:<External id>, name:<op>[#n]")] = None,
                      method: Annotated[str, Field(description=f"elapsed (the window's elapsed time, every "
                                                               f"{units.US} named) or hta (HolisticTraceAnalysis' "
                                                               "definition)")]
                      = "elapsed",
                      shrink: Annotated[list[str] | None, Field(description="what-if: NAME=PCT, events whose name "
                                                                            "contains NAME run PCT% faster")] = None,
                      part: Part = None, offset: Offset = 0, rows: Rows = None) -> str:
        """Why a step took as long as it did (`tracetui critical-path --json`): the chain of
        host work, launches, GPU work and waits that set the window's length; `by_kind_us`
        (host, gpu, launch_delay, gpu_gap, stream_wait, sync_wait), `segments` in time order,
        `slack` (how much longer each other event could run), `what_if` with shrink.  Default
        window: the longest profiler step.  `trace` may be a job folder (the path crosses ranks
        at collectives; step or annotation only)."""
        return answer("critical_path", [trace, et], lambda: tools.critical_path(
            trace, et, step=step, annotation=annotation, instance=instance, select=select, method=method,
            shrink=shrink, part=part, offset=offset, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def memory(trace: Trace, et: Et = None, top: Top = 10, part: Part = None, offset: Offset = 0,
               rows: Rows = None) -> str:
        """Where the memory went (`tracetui memory --json`; needs profile_memory=True): per
        device, allocations and frees, the peak of allocated bytes with the blocks live then by
        the op that allocated them, the reserved peak, the ops that allocate most."""
        return answer("memory", [trace, et],
                      lambda: tools.memory(trace, et, top=top, part=part, offset=offset, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def diff(a: Annotated[str, Field(description="run A: a trace, or a job folder")],
             b: Annotated[str, Field(description="run B: a trace, or a job folder (as A)")],
             et_a: Annotated[str | None, Field(description="A's Execution Trace (optional)")] = None,
             et_b: Annotated[str | None, Field(description="B's Execution Trace (optional)")] = None,
             step_a: Annotated[int | None, Field(description="compare A's ProfilerStep#N instead of every "
                                                             "step's mean")] = None,
             step_b: Annotated[int | None, Field(description="B's step (default: step_a's number)")] = None,
             top: Top = 15, part: Part = None, offset: Offset = 0, rows: Rows = None) -> str:
        """Compare two runs (`tracetui diff A B --json`): steps paired, op trees aligned, step
        time and GPU time per step A / B / delta, the ops and kernels that changed most, the
        summary deltas.  Two job folders: every rank of A with the same rank of B."""
        return answer("diff", [a, b, et_a, et_b], lambda: tools.diff(
            a, b, et_a=et_a, et_b=et_b, step_a=step_a, step_b=step_b, top=top, part=part, offset=offset, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def query(trace: Trace,
              sql: Annotated[str, Field(description="DuckDB SQL over the tables of tracetui://query-tables, e.g. "
                                                    "SELECT name, sum(dur_us) AS gpu FROM kernels GROUP BY name "
                                                    "ORDER BY gpu DESC LIMIT 10")],
              et: Et = None, driver: Driver = None,
              rows: Annotated[int | None, Field(ge=1, le=bounds.QUERY_ROWS, description=f"rows answered at most "
                                                                                         f"(default and most: "
                                                                                         f"{bounds.QUERY_ROWS})")]
              = None) -> str:
        """SQL over the trace (`tracetui query --json`): tables events, kernels, gpu_events,
        ops, links, gaps, steps, counters, args (a job folder: the same with a rank column, and
        collectives); times in µs (`*_us`), event ids in `event`/`*_event`.  Answers row
        objects, their types, and `more: true` when rows were left out (page with LIMIT/OFFSET
        or aggregate).  The query cannot read or write files, reach the network or change
        settings, and is stopped after the server's time limit."""
        return answer("query", [trace, et, driver], lambda: tools.query(trace, sql, et, driver, rows=rows))

    @server.tool(annotations=reads, structured_output=False)
    def tree(trace: Trace, et: Et = None,
             depth: Annotated[int | None, Field(ge=0, description="deepest level (lane roots are level 0)")] = None,
             select: Annotated[str | None, Field(description="only this subtree: node:<id>, ext:<External id>, "
                                                             "name:<op>[#n]")] = None,
             hide_python: Annotated[bool, Field(description="skip python_function levels")] = False,
             part: Part = None, offset: Offset = 0,
             rows: Annotated[int | None, Field(ge=1, le=bounds.MAX_ROWS, description=f"lines answered (default "
                                                                                     f"{bounds.TREE_LINES})")]
             = None) -> str:
        """The op tree as indented lines (`tracetui tree`): each op with its duration, GPU time
        and kernel count under it; every lane, or one subtree (select).  Use depth to stay
        short; page with part="lines" offset=N."""
        return answer("tree", [trace, et], lambda: tools.tree(
            trace, et, depth=depth, select=select, hide_python=hide_python, part=part, offset=offset, rows=rows))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
                 structured_output=False)
    def slice(trace: Trace, et: Et = None, step: Step = None,
              window: Annotated[str | None, Field(description=f"START:END, {units.US} after the trace start")] = None,
              select: Annotated[str | None, Field(description="one subtree: node:<id>, ext:<External id>, "
                                                              "et:<ET node id>, name:<op>[#n]")] = None,
              ranks: Annotated[str | None, Field(description="a job folder: the ranks to keep, e.g. 0,3-5")] = None
              ) -> str:
        """A smaller, valid trace to share or to open again (`tracetui slice`): one step, a time
        window or a subtree (its ET cut the same way), or some ranks of a job folder.  Written
        only into the server's own folder (never a path of yours); answers the files written,
        which the other tools can open."""
        return answer("slice", [trace, et], lambda: tools.slice(trace, et, step=step, window=window, select=select,
                                                                ranks=ranks))

    for uri, (name, description, mime, read) in RESOURCES.items():
        server.resource(uri, name=name, description=description, mime_type=mime)(read)

    @server.resource("tracetui://session", name="session", mime_type="application/json",
                     description="What this server holds: its roots, the folder slices go to, the caps of an "
                                 "answer, the traces kept loaded and how many requests reused one")
    def session() -> str:
        with tools.lock:
            return bounds.text(tools.session())

    return server


def bad_arguments(tool: str, exc: Any) -> str:
    """Pydantic's validation errors of a call's arguments as one line: each argument and what
    is wrong with it."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        got = f" (got {err['input']!r:.60})" if err.get("type") != "missing" and "input" in err else ""
        parts.append(f"{where}: {err.get('msg', 'invalid')}{got}")
    return one_line(f"{tool}: bad arguments: " + "; ".join(parts))


def serve(tools: Tools) -> None:
    """Serve ``tools`` over stdio until the client closes the connection."""
    try:
        build(tools).run("stdio")
    finally:
        tools.close()
