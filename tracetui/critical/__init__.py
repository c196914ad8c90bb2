"""Critical path of a window (a profiler step, an annotation instance, one op, or the
whole trace) on one rank, and across the ranks of a job (:mod:`tracetui.job.critical`).

    from tracetui.critical import critical_path, step_window
    cp = critical_path(trace, step_window(trace, 16), shrink=[Shrink.parse("gemm=30")])
    cp.total_us, cp.by_kind_us, cp.segments, cp.slack, cp.what_if

See docs/critical_path.md for the graph, its edges, what is inferred, how time is
attributed, slack and the what-if.
"""

from __future__ import annotations

from ..lazy import lazy_names

#: what a path's ``method`` may be: "elapsed" (tracetui's answer: the window's elapsed time,
#: every microsecond named) or "hta" (HolisticTraceAnalysis 0.5.0's heaviest path, to compare
#: the two tools: :mod:`tracetui.critical.hta_method`)
METHODS = ("elapsed", "hta")

#: where each public name lives: loaded on first use, so the command line's parser (which imports
#: ``tracetui.critical.numbers``) does not import the graph, the analysis and pandas
_WHERE = {
    "KIND_NAMES": "graph", "Graph": "graph", "SegKind": "graph", "build_graph": "graph",
    "CriticalPath": "model", "Segments": "model", "Slack": "model", "carried_in_time": "model",
    "path_event_ids": "model", "segments_of": "model", "slack_of": "model",
    "Shrink": "solve", "earliest_times": "solve", "event_slack": "solve", "latest_times": "solve",
    "path_edges": "solve", "what_if": "solve",
    "Window": "window", "annotation_window": "window", "default_window": "window", "event_window": "window",
    "profiler_steps": "window", "step_window": "window", "trace_window": "window", "window_at": "window",
    "critical_path": "path", "path_graph": "path", "trace_rank": "path", "check_method": "path",
}

__all__ = [
    "KIND_NAMES", "METHODS", "CriticalPath", "Graph", "SegKind", "Segments", "Shrink", "Slack", "Window",
    "annotation_window", "build_graph", "check_method", "critical_path", "default_window", "earliest_times",
    "event_window", "path_graph", "profiler_steps", "step_window", "trace_rank", "trace_window", "window_at",
]


__getattr__ = lazy_names(__name__, {name: f".{home}" for name, home in _WHERE.items()})
