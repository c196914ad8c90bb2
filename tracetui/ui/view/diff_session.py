"""What the diff browser shows, built off the UI thread and without Textual: the diff of two
runs (:func:`tracetui.diff.runs.open_diff`), the merged tree's row source, its detail model,
both runs' timeline tracks, and for each side the single-trace browser's row source and
detail (the side's event detail in the diff's pane, and the browser ``A`` / ``B`` open)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...analysis.categories import get_categorizer
from ...diff.compare import TraceDiff
from ...diff.runs import DiffRequest, Progress, open_diff
from ...session import LinkedTrace
from .diff_detail import DiffDetail
from .diff_row_source import DiffRowSource
from .diff_tracks import DiffTracks, diff_tracks
from .trace_detail import TraceDetail
from .trace_row_source import TraceRowSource


@dataclass
class DiffSession:
    """The diff and its views (module docstring); ``sides`` maps "a"/"b" to (the loaded
    trace, its row source, its detail model)."""

    request: DiffRequest
    diff: TraceDiff
    source: DiffRowSource
    detail: DiffDetail
    tracks: DiffTracks
    sides: dict[str, tuple[LinkedTrace, TraceRowSource, TraceDetail]]
    categorizer: Any

    def warnings(self) -> list[str]:
        """Both sides' load and link warnings, each prefixed with its side's label."""
        out = []
        for which, (linked, _, _) in self.sides.items():
            label = self.diff.tree.side(which).label
            out += [f"{label}: {w}" for w in linked.all_warnings()]
        return out


def load_diff_session(request: DiffRequest, progress: Progress | None = None) -> DiffSession:
    """Load both runs of ``request``, diff them and build the views; raises
    :class:`~tracetui.errors.TraceError` for bad input (a step a side lacks, a file that is
    not a trace)."""
    report = progress or (lambda msg, frac: None)
    categorizer = get_categorizer(request.rules)
    d = open_diff(request, report, categorizer)
    report("building the views", 0.97)
    tree = d.tree
    source = DiffRowSource(tree)
    sides = {}
    for which in ("a", "b"):
        linked = tree.side(which).linked
        src = TraceRowSource(linked)
        sides[which] = (linked, src, TraceDetail(src, categorizer))
    detail = DiffDetail(source, (sides["a"][2], sides["b"][2]))
    return DiffSession(request, d, source, detail, diff_tracks(d), sides, categorizer)
