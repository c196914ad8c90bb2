"""The findings of what the browser shows, computed once in a worker thread.

The app holds one :class:`FindingsRun` (``app.findings_run``) for the trace on screen, or for
the whole job (then it outlives the switches between ranks): the report, the rules as they
ran (the user's ``findings.toml`` applied), or why it failed: a bad rules file is its one-line
error, a bug is saved as a crash report (:mod:`tracetui.crash`) and named, and the browser
goes on.  The main screen starts it after its first paint and is told when it is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...crash import report as report_crash
from ...errors import TraceError
from ...findings.spec import rule_configs

if TYPE_CHECKING:
    from ...findings import FindingsReport, RuleConfig


class FindingsRun:
    """One computation of findings (see the module docstring).  ``key`` names what it
    checked (the trace or the job on screen); ``pending`` = (finding, evidence) to show once
    the rank it needs is on screen; ``open_on``: the screen that asked for the list before
    it was ready."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.report: FindingsReport | None = None
        self.configs: dict[str, RuleConfig] | None = None
        self.error: str | None = None
        self.done = False
        self.pending: tuple[int, int] | None = None
        self.open_on: Any = None
        self.seconds: tuple[float, float] | None = None  #: (wall, CPU of the process) the check took

    def compute(self, work: Callable[[dict[str, RuleConfig]], FindingsReport], paths: list[str]) -> None:
        """Run ``work(configs)`` (in a worker thread) and keep its report or its error."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            configs = rule_configs()
            report = work(configs)
            report.evidence_of(-1)  # builds the evidence index here, off the UI thread
        except TraceError as exc:
            self.error = str(exc)
        except MemoryError:
            self.error = "not enough memory to check the findings"
        except Exception as exc:  # noqa: BLE001 -- a bug in a rule must not end the browsing
            self.error = report_crash(exc, "checking findings", paths).line()
        else:
            self.report, self.configs = report, configs
        self.seconds = (time.perf_counter() - wall, time.process_time() - cpu)
        self.done = True
