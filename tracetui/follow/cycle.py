"""One profiling cycle: the numbers of its trace, the change against the cycle before, and the
regression rule of ``tracetui follow --fail-above`` (docs/follow.md).

**Which cycle a file is.**  ``torch.profiler.tensorboard_trace_handler`` names each trace
``<worker>.<time_ns>.pt.trace.json[.gz]`` (``worker``: ``<hostname>_<pid>`` unless given), one
file per cycle and worker; the ranks of a job are different workers.  So the files of one
worker are its *series*, in the order of the time in their names, and the k-th is its cycle k;
each cycle is compared with the cycle before it and with the first of its own series (a rank
with the same rank).  Files named otherwise make one series, in the order they were written
(their modification time).

**The numbers**, each from the analysis ``tracetui summary`` uses, so a line equals what
``summary --json`` and ``check --json`` say of the same file:

- ``steps``, ``step_us``: the steps (:func:`tracetui.analysis.steps.find_steps`: ``ProfilerStep#N``,
  else the repeated top-level annotation, else the whole trace) and their mean duration (µs);
- ``gpu_busy_pct``: the summary's ``gpu_timeline`` busy time over the GPU span
  (:mod:`tracetui.analysis.gpu_breakdown`), None without GPU work;
- ``top_kernel``: the summary's first kernel (most total time) and its total;
- ``findings``: the count per severity of :func:`tracetui.findings.run_checks`;
- ``change``: the diff engine (:func:`tracetui.diff.runs.diff_files`) against the previous cycle
  of the series: step time, GPU time and GPU events per step, the op whose own GPU time changed
  most.

**The regression rule** (:func:`regressed`): a cycle regresses when its step time is more than
``PCT`` percent above the first cycle's of its series, or above the previous cycle's; both are
checked and each is said (a slow drift shows against the first, a sudden jump against the
previous).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..diff import numbers as fmt
from ..errors import one_line
from ..names import is_cut, shown

#: the JSON line's layout version (docs/follow.md)
LINE_FORMAT = 1
#: ``tensorboard_trace_handler``'s names: ``<worker>.<time_ns>.pt.trace.json[.gz]``
HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<time>\d{9,})\.pt\.trace\.json(?:\.gz)?$")
#: what a cycle is compared with, in the order the rule checks them
AGAINST = ("first", "previous")


def series_of(name: str) -> tuple[str, int | None]:
    """The series of a file named ``name`` (its worker; "" for a name of another form) and the
    time in its name (ns; None for another form)."""
    m = HANDLER_NAME.match(name)
    return (m["worker"], int(m["time"])) if m else ("", None)


def pct_change(a: float | None, b: float | None) -> float | None:
    """(b - a) in percent of a; None when either is missing or a is 0."""
    if a is None or b is None or not a:
        return None
    return (b - a) * 100.0 / a


def kernel_short(name: str) -> str:
    """A kernel's name for a narrow column: without a leading ``void`` and the parameter list;
    a name over :data:`~tracetui.names.NAME_WORK_CHARS` characters is only cut there, with its
    mark (the walk back through its brackets is a Python step per character)."""
    name = name.removeprefix("void ")
    if is_cut(name):
        return shown(name)
    if name.endswith(")") and "(" in name:
        depth = 0
        for k in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[k], 0)
            if depth == 0:
                return name[:k] or name
    return name


@dataclass
class Numbers:
    """What one trace's row shows (module docstring)."""

    steps: int
    steps_found: str
    step_us: float
    gpu_busy_pct: float | None
    top_kernel: str | None
    top_kernel_us: float | None
    findings: dict[str, int]
    rank: int | None
    load_warnings: int


def measure(linked: Any, categorizer: Any = None, configs: Any = None) -> Numbers:
    """The :class:`Numbers` of a loaded trace (a :class:`~tracetui.session.LinkedTrace` with a
    Kineto or driver-call trace)."""
    from ..analysis.steps import find_steps
    from ..analysis.summary import build_summary
    from ..findings import run_checks
    from ..io import jsonout

    kt = linked.kineto
    steps = find_steps(kt)
    durations = [s.dur for s in steps.steps]
    summary = jsonout.loads(jsonout.dumps(build_summary(linked, categorizer)))  # JSON types, as `summary --json`
    tl = summary["gpu_timeline"]
    busy = tl["busy_ms"] * 100.0 / tl["total_ms"] if tl.get("total_ms") else None
    top = summary["kernels"][0] if summary["kernels"] else None
    rank = kt.distributed_info.get("rank")
    return Numbers(
        steps=len(durations), steps_found=steps.how, step_us=sum(durations) / len(durations),
        gpu_busy_pct=busy, top_kernel=top["name"] if top else None, top_kernel_us=top["total_us"] if top else None,
        findings=run_checks(linked, configs, categorizer).by_severity(),
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        load_warnings=len(linked.all_warnings()))


def change_of(doc: dict[str, Any], against: str) -> dict[str, Any]:
    """The ``change`` of a cycle from the diff document of (previous, this one)."""
    tree = doc.get("tree") or []
    largest = {"path": tree[0]["path"], "delta_gpu_us": tree[0]["delta_gpu_us"]} if tree else None
    return {"against": against, "step_time": doc["step_time"], "gpu_time_per_step": doc["gpu_time_per_step"],
            "gpu_events_per_step": doc["gpu_events_per_step"], "largest_change": largest}


@dataclass
class Cycle:
    """One trace of the run, read once complete: where it is, which cycle of which series, its
    numbers, and how it compares with the first and the previous cycle of its series."""

    path: str
    size: int
    series: str
    number: int
    written_ns: int
    numbers: Numbers
    first: Cycle | None = None
    previous: Cycle | None = None
    change: dict[str, Any] | None = None
    #: position in the follower's list of cycles
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def against(self, which: str) -> Cycle | None:
        return self.first if which == "first" else self.previous

    def vs(self, which: str) -> float | None:
        """The step time's change against the first or the previous cycle (% of its)."""
        other = self.against(which)
        return pct_change(other.numbers.step_us, self.numbers.step_us) if other is not None else None

    def regressed(self, threshold_pct: float) -> list[str]:
        """Which of "first", "previous" this cycle's step time grew on by more than ``threshold_pct``."""
        return [w for w in AGAINST if (p := self.vs(w)) is not None and p > threshold_pct]

    def verdict(self, threshold_pct: float) -> list[str]:
        """One line per regression: what grew, against which cycle, by how much."""
        out = []
        for which in self.regressed(threshold_pct):
            other = self.against(which)
            assert other is not None
            out.append(f"{one_line(self.path)}: step time regressed by {fmt.pct_value(self.vs(which))} against the "
                       f"{which} cycle (more than {fmt.threshold(threshold_pct)}): "
                       f"{fmt.us(other.numbers.step_us)} ({one_line(other.name)}) -> {fmt.us(self.numbers.step_us)}")
        return out

    def line(self, threshold_pct: float | None = None) -> dict[str, Any]:
        """The JSON line of ``tracetui follow --json`` (docs/follow.md)."""
        n = self.numbers
        out: dict[str, Any] = {
            "format": LINE_FORMAT, "file": self.path, "size": self.size, "worker": self.series or None,
            "cycle": self.number, "rank": n.rank, "steps": n.steps, "steps_found": n.steps_found,
            "step_us": n.step_us, "gpu_busy_pct": n.gpu_busy_pct,
            "top_kernel": {"name": n.top_kernel, "total_us": n.top_kernel_us} if n.top_kernel is not None else None,
            "findings": n.findings, "load_warnings": n.load_warnings,
        }
        for which in AGAINST:
            other = self.against(which)
            out[f"vs_{which}"] = None if other is None else {
                "file": other.path, "cycle": other.number, "step_us": other.numbers.step_us,
                "delta_pct": self.vs(which)}
        out["change"] = self.change
        if threshold_pct is not None:
            out["regressed"] = self.regressed(threshold_pct)
        return out
