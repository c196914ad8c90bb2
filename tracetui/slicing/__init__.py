"""``tracetui slice``: a smaller, valid trace to share: one profiler step, a time window or a
subtree of a Kineto trace (its ET cut to the same ops), or some ranks of a job.

Which events are kept: :mod:`tracetui.slicing.events`; how the files are written:
:mod:`tracetui.slicing.write`.  The result opens in tracetui, Perfetto, HTA and TraceLens
(``bench/bench_query.py`` checks the last two).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TraceError
from ..io.files import write_atomically
from ..session import LinkedTrace
from .events import parse_window, step_events, subtree_events, window_events
from .write import et_output_path, kineto_slice_pieces, write_et_slice, write_kineto_slice

__all__ = ["Cut", "SliceReport", "slice_linked", "slice_job", "slice_pieces", "parse_ranks", "parse_window"]


@dataclass(frozen=True)
class Cut:
    """What to keep: one of ``step`` (N of ProfilerStep#N), ``window`` (µs after the trace
    start, [start, end)) or ``select`` (a subtree selector); none of them: everything."""

    step: int | None = None
    window: tuple[float, float] | None = None
    select: str | None = None

    def describe(self) -> dict[str, Any]:
        if self.step is not None:
            return {"step": self.step}
        if self.window is not None:
            return {"window_us": list(self.window)}
        if self.select is not None:
            return {"select": self.select}
        return {}


@dataclass
class SliceReport:
    """What a slice wrote: ``files`` (path -> what it holds, e.g. "1,234 events"), and
    ``warnings`` (files of a job's folder left out)."""

    files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def events_of(linked: LinkedTrace, cut: Cut) -> np.ndarray:
    """The Kineto events ``cut`` keeps from ``linked`` (sorted event indices)."""
    kt = linked.kineto
    if kt is None:
        raise TraceError(linked.et.path if linked.et else None, "slicing needs a Kineto trace")
    if cut.step is not None:
        return step_events(kt, cut.step)
    if cut.window is not None:
        return window_events(kt, *cut.window)
    if cut.select is not None:
        from ..export.selectors import resolve_selector

        root = resolve_selector(linked, cut.select)
        if root is not None:
            return subtree_events(kt, root)
    return np.arange(kt.n_events, dtype=np.int64)


def _sliceable(linked: LinkedTrace) -> None:
    from ..driver import DriverTrace

    kt = linked.kineto
    if isinstance(kt, DriverTrace):
        raise TraceError(kt.driver_path or kt.path, "slicing a driver-call trace is not supported; "
                                                    "slice its Kineto trace alone")


def slice_pieces(linked: LinkedTrace, cut: Cut) -> Iterator[bytes]:
    """The slice of one Kineto trace as JSON pieces, for a stream (``slice -o -``: the ET's
    slice needs a file beside it, so ``linked`` holds no ET here)."""
    _sliceable(linked)
    return kineto_slice_pieces(linked.kineto, events_of(linked, cut), cut.describe())


def slice_linked(linked: LinkedTrace, cut: Cut, out: str, report: SliceReport | None = None) -> SliceReport:
    """Write the slice of one trace (and of its ET, beside ``out``)."""
    report = report or SliceReport()
    kt = linked.kineto
    _sliceable(linked)
    ev = events_of(linked, cut)
    write_kineto_slice(kt, ev, out, cut.describe())
    report.files[out] = f"{ev.size:,} of {kt.n_events:,} events"
    if linked.et is not None and linked.link is not None:
        et_out = et_output_path(out)
        n = write_et_slice(linked.et, linked.link, ev, et_out)
        report.files[et_out] = f"{n:,} of {len(linked.et.ids):,} ET nodes"
    return report


def parse_ranks(text: str) -> list[int]:
    """``"0,3-5"`` -> [0, 3, 4, 5]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            a, sep, b = part.strip().partition("-")
            out += list(range(int(a), int(b) + 1)) if sep else [int(a)]
    except ValueError:
        raise TraceError(None, f"--ranks {text!r}: expected rank numbers and ranges, e.g. 0,3-5") from None
    return sorted(set(out))


def slice_job(inputs: list[str], ranks: list[int] | None, cut: Cut, out_dir: str, *,
              use_cache: bool = True, follow_links: bool = False) -> SliceReport:
    """A smaller job folder: the files of ``ranks`` (all when None), each cut by ``cut``
    (copied byte for byte when ``cut`` keeps everything); ``follow_links``: read a folder's
    files that lead outside it (see ``expand_inputs``)."""
    from ..job.discover import expand_inputs
    from ..job.layout import group_ranks
    from ..job.worker import identify
    from ..store.traces import load_cached

    skipped: list[str] = []
    layout = group_ranks([identify(f) for f in expand_inputs(inputs, skipped, follow_links)])
    have = {r.rank: r for r in layout.ranks}
    if not have:
        raise TraceError(inputs[0] if inputs else None, "no Kineto trace with a rank among the files of this job")
    wanted = sorted(have) if ranks is None else ranks
    missing = [r for r in wanted if r not in have]
    if missing:
        raise TraceError(inputs[0], f"no rank {', '.join(map(str, missing))} in this job "
                                    f"(ranks: {', '.join(map(str, sorted(have)))})")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise TraceError(out_dir, f"cannot create the folder: {exc.strerror or exc}") from None
    report = SliceReport(warnings=skipped)
    whole = not cut.describe()
    for r in wanted:
        rf = have[r]
        target = os.path.join(out_dir, os.path.basename(rf.kineto))
        if whole:
            for src in [rf.kineto] + ([rf.et] if rf.et else []):
                dst = os.path.join(out_dir, os.path.basename(src))
                copy_file(src, dst)
                report.files[dst] = f"rank {r}: copied"
            continue
        linked = load_cached([rf.kineto] + ([rf.et] if rf.et else []), use_cache=use_cache)
        sub = SliceReport()
        slice_linked(linked, cut, target, sub)
        if rf.et and linked.link is not None:  # the ET keeps its own name in a job folder
            et_tmp = et_output_path(target)
            et_dst = os.path.join(out_dir, os.path.basename(rf.et))
            os.replace(et_tmp, et_dst)
            sub.files[et_dst] = sub.files.pop(et_tmp)
        report.files.update({k: f"rank {r}: {v}" for k, v in sub.files.items()})
    return report


def copy_file(src: str, dst: str) -> None:
    """Copy ``src`` to ``dst`` byte for byte, atomically."""
    try:
        with open(src, "rb") as fh:
            write_atomically(dst, iter(lambda: fh.read(1 << 20), b""))
    except OSError as exc:
        raise TraceError(src, f"cannot copy to {dst}: {exc.strerror or exc}") from None
