"""The critical path of one trace's window: the graph built, the path read off it, the slack
and the what-if (the package's entry points, :mod:`tracetui.critical`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..kineto.trace import KinetoTrace
from . import METHODS
from .graph import Graph, build_graph
from .model import CriticalPath, carried_in_time, path_event_ids, segments_of, slack_of
from .solve import Shrink, event_slack, latest_times, path_edges, what_if
from .window import Window, default_window


def trace_rank(trace: KinetoTrace) -> int:
    """The trace's rank from its ``distributedInfo`` (-1 when it has none)."""
    r = trace.distributed_info.get("rank")
    return r if isinstance(r, int) and not isinstance(r, bool) else -1


def critical_path(trace: KinetoTrace, window: Window | None = None, *, shrink: Sequence[Shrink] = (),
                  slack: bool = True, rank: int | None = None, method: str = "elapsed") -> CriticalPath:
    """The critical path of ``window`` (default: the longest profiler step, else the whole trace).

    ``shrink``: what-if rules (``cp.what_if``: the projected path length); ``slack``:
    compute every event's slack (one more pass over the graph); ``method`` "hta": HTA
    0.5.0's heaviest path instead (no slack, no what-if: ValueError with ``shrink``)."""
    cp, _ = path_graph(trace, window, shrink=shrink, slack=slack, rank=rank, method=method)
    return cp


def check_method(method: str, shrink: Sequence[Shrink] = ()) -> None:
    """ValueError when ``method`` is unknown, or is "hta" with what-if rules (they project the
    elapsed time)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    if method == "hta" and shrink:
        raise ValueError("--shrink projects the elapsed time: it does not combine with --method hta")


def path_graph(trace: KinetoTrace, window: Window | None = None, *, shrink: Sequence[Shrink] = (),
               slack: bool = True, rank: int | None = None, method: str = "elapsed") -> tuple[CriticalPath, Graph]:
    """:func:`critical_path` and the graph it was read from."""
    check_method(method, shrink)
    window = window or default_window(trace)
    r = trace_rank(trace) if rank is None else rank
    g = build_graph(trace, window)
    if method == "hta":
        return _hta_path(trace, window, g, r), g
    edges = path_edges(g)
    segs = segments_of(g, edges, r)
    table = slack_of(g, event_slack(g, latest_times(g)), r) if slack else None
    total = float(g.node_t[g.sink] - window.start_us)
    cp = CriticalPath(window, float(trace.origin_us), total, segs, table, {r: path_event_ids(g, edges)},
                      dict(g.stats), trace_path=trace.path, carried_in_us=carried_in_time(g, edges))
    if shrink:
        cp.what_if = what_if(g, list(shrink))
    return cp, g


def _hta_path(trace: KinetoTrace, window: Window, g: Graph, rank: int) -> CriticalPath:
    """HTA's heaviest path of the window's graph as a :class:`CriticalPath` (method "hta")."""
    from .hta_method import heaviest_path, hta_weights

    w = hta_weights(g)
    edges, total = heaviest_path(g, w)
    segs = segments_of(g, edges, rank, weight=w)
    span = (float(g.node_t[g.src[edges[0]]]), float(g.node_t[g.dst[edges[-1]]])) if edges.size else None
    return CriticalPath(window, float(trace.origin_us), total, segs, None, {rank: path_event_ids(g, edges)},
                        dict(g.stats), trace_path=trace.path, method="hta", span_us=span)
