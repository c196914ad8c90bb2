"""Findings on the main screen: the ``F`` key, the worker that computes them after the first
paint, the status line's count by severity, the "Evidence of" section of the detail pane,
and going to a finding's evidence (``n``/``N`` then cycle it as search matches).

:class:`FindingsActions` is a mixin of the browser screen (as
:class:`~tracetui.ui.job.job_actions.JobActions`); the computation is a
:class:`~.findings_run.FindingsRun` held by the app, so a job's findings (every rank, then
the straggler rule over the ranks joined) are computed once and survive rank switches.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..notify import show_note
from ..view.evidence_detail import EvidenceDetail
from ..view.status_parts import Part, findings_part
from .findings_run import FindingsRun
from .findings_screen import FindingsScreen


class FindingsActions:
    """Mixin for the browser screen (see the module docstring)."""

    evidence_detail: EvidenceDetail
    #: the findings (or why they failed) are on screen; True at once when there is nothing to check
    findings_shown = False

    def findings_pane_model(self) -> EvidenceDetail:
        """The detail pane's model: the trace's detail, plus the findings a node is evidence of."""
        self.evidence_detail = EvidenceDetail(self.detail_model, self.source.kineto_of)
        return self.evidence_detail

    def _findings_key(self) -> tuple:
        job = self.app.job
        return ("job", id(job)) if job is not None else ("trace", id(self.linked))

    def findings_run(self) -> FindingsRun | None:
        """The app's findings computation for what this screen shows (None: none started, or
        an Execution Trace alone, which has nothing to check)."""
        run = self.app.findings_run
        return run if run is not None and run.key == self._findings_key() else None

    def start_findings(self) -> None:
        """Start the worker (once per trace or job; the browser is painted by now)."""
        if not self.is_attached:
            return
        if self.linked.kineto is None:
            self.findings_shown = True
            return
        app = self.app
        run = self.findings_run()
        if run is None:
            run = app.findings_run = FindingsRun(self._findings_key())
            if app.job is not None:
                work = partial(_check_job, app.job_inputs, app.use_cache, app.job_options)
                paths = list(app.job_inputs)
            else:
                work = partial(_check_trace, self.linked, self.detail_model.categorizer)
                paths = list(app.paths)
            app.run_worker(partial(_compute, app, run, work, paths), thread=True, exclusive=True,
                           group="findings", name="findings")
        self.findings_ready()

    def findings_ready(self) -> None:
        """The findings are known (or still being computed): the status line, the detail
        pane, then what the user asked for meanwhile (the list; evidence on another rank)."""
        run = self.findings_run()
        self.update_status()
        if run is None or not run.done:
            return
        self.findings_shown = True
        if run.report is not None and self.evidence_detail.report is not run.report:
            self.evidence_detail.report = run.report
            self.evidence_detail.rank = self.app.rank if self.app.job is not None else None
            self.detail.rebuild()
        if run.pending is not None:
            (i, k), run.pending = run.pending, None
            self.show_evidence(i, k)
        if run.open_on is self:
            run.open_on = None
            self.action_findings()

    def findings_parts(self) -> list[Part]:
        """The status line's findings part (none for an Execution Trace alone)."""
        run = self.findings_run()
        if run is None:
            return []
        report = run.report
        return [findings_part(report.by_severity() if report is not None else None, failed=run.error is not None,
                              job=self.app.job is not None)]

    def action_findings(self) -> None:
        """``F``: the findings screen (:mod:`~tracetui.ui.findings.findings_screen`)."""
        run = self.findings_run()
        if run is None:
            show_note(self, "findings need a Kineto trace (this is an Execution Trace alone)", severity="warning")
            return
        if not run.done:
            run.open_on = self
            show_note(self, "checking for findings: the list opens when they are known")
            return
        if run.report is None:
            show_note(self, f"findings failed: {run.error}", severity="error", timeout=10)
            return
        job = self.app.job is not None
        self.app.push_screen(FindingsScreen(run.report, run.configs, kt=self.source.kt,
                                            rank=self.app.rank if job else None, event_detail=self.detail_model),
                             self._finding_chosen)

    def _finding_chosen(self, choice: tuple[int, int] | None) -> None:
        run = self.findings_run()
        if choice is None or run is None or run.report is None or not self.is_attached:
            return
        i, k = choice
        f = run.report.findings[i]
        job = self.app.job
        if job is not None and f.rank is not None and f.rank != self.app.rank:
            result = job.results.get(f.rank)
            if result is None or not result.ok:
                show_note(self, f"rank {f.rank} could not be loaded: cannot show its evidence", severity="warning")
                return
            run.pending = (i, k)
            self.app.show_rank(f.rank)
            return
        self.show_evidence(i, k)

    def show_evidence(self, i: int, k: int) -> None:
        """Select evidence ``k`` of finding ``i`` in the tree (``k`` -1: the first in tree
        order); its evidence becomes the match list (``n``/``N``)."""
        run = self.findings_run()
        kt = self.source.kt
        if run is None or run.report is None or kt is None:
            return
        f = run.report.findings[i]
        ev = f.evidence
        nodes = ev[(ev >= 0) & (ev < kt.n_events)]
        label = f.rule + (f" ({f.check})" if f.check else "") + (f" on rank {f.rank}" if f.rank is not None else "")
        self.show_matches(nodes, label, "evidence event", first=int(ev[k]) if 0 <= k < ev.size else None)


def _check_trace(linked: Any, categorizer: Any, configs: dict) -> Any:
    """In the worker: the engine (pandas, the analysis) is imported there, not while the
    browser's screen is being painted."""
    from ...findings import run_checks

    return run_checks(linked, configs, categorizer=categorizer)


def _check_job(inputs: list[str], use_cache: bool, options: dict[str, Any], configs: dict) -> Any:
    from ...findings.jobs import check_job

    return check_job(inputs, configs, use_cache=use_cache, **options)


def _compute(app: Any, run: FindingsRun, work: Any, paths: list[str]) -> None:
    """The worker: compute, then tell the browser screens (on the UI thread)."""
    run.compute(work, paths)
    try:
        app.call_from_thread(_deliver, app, run)
    except RuntimeError:  # the app stopped meanwhile
        pass


def _deliver(app: Any, run: FindingsRun) -> None:
    for screen in list(app.screen_stack):
        if isinstance(screen, FindingsActions) and screen.is_attached:
            screen.findings_ready()
