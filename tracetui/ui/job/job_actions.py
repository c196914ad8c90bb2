"""Whole jobs in the browser: the job keys of the main screen.

:class:`JobActions` gives the browser screen its job keys: ``r`` pick a rank
(:class:`~.rank_picker.RankPicker`), ``x`` the same collective on another rank (from a NCCL
kernel or a collective op), ``X`` the cross-rank screen.  The app holds the job (``app.job``,
``app.rank``) and switches ranks (``app.show_rank``): only the rank on screen is loaded, from
the cache the job's workers filled.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.text import Text

from ... import units
from ...job.nav import collective_at, member_offsets
from ..notify import show_note
from ..shown import show_when_computed
from .rank_picker import RankPicker

#: the name of a job's cross-rank tables in the app's ``job_once``
JOB_SUMMARY = "job summary"


def job_summary(job: Any) -> dict:
    """The cross-rank document (:func:`tracetui.job.job_summary`), imported when first asked for."""
    from ...job import job_summary as summary

    return summary(job)


def precompute_job_summary(screen: Any, app: Any) -> None:
    """In a job: compute the cross-rank tables now (a background worker thread)."""
    job = getattr(app, "job", None)
    if job is not None and app.job_once is not None:
        app.job_once.future(JOB_SUMMARY, partial(job_summary, job))


def rank_label(rank: int, result: Any, current: int | None) -> Text:
    """One picker row: rank, its GPU span and exposed communication, or why it failed."""
    t = Text(f"rank {rank:>4}", style="bold" if rank == current else "")
    if result is None or not result.ok:
        t.append("  failed: ", style="red")
        t.append((result.error if result is not None else "not loaded") or "")
        return t
    tl = result.summary["gpu_timeline"]
    t.append(f"  GPU span {tl['total_ms']:9.3f} {units.MS}  exposed comm {tl['exposed_comm_ms']:8.3f} {units.MS}"
             f"  collectives {len(result.collectives)}")
    if rank == current:
        t.append("  (shown)", style="dim")
    return t


class JobActions:
    """Mixin for the browser screen: the job keys (see the module docstring)."""

    #: the job keys' actions: they do something only in a job (key bar and help leave them out elsewhere)
    JOB_ACTIONS = frozenset({"pick_rank", "collective_other_rank", "job_summary"})

    def job_key_applies(self) -> bool:
        """Do the job keys do something here (a job is shown)?"""
        return getattr(self.app, "job", None) is not None

    def _job(self) -> Any:
        job = getattr(self.app, "job", None)
        if job is None:
            show_note(self, "not a job: open a folder or several rank files to switch ranks", severity="warning")
        return job

    def action_pick_rank(self) -> None:
        """``r``: choose the rank to show."""
        job = self._job()
        if job is None:
            return
        cur = self.app.rank
        rows = [(r, rank_label(r, job.results.get(r), cur), job.results[r].ok) for r in job.ranks]
        self.app.push_screen(RankPicker(f"Rank to show ({len(job.ranks)} of world size {job.world_size})", rows, cur),
                             self._rank_chosen)

    def _rank_chosen(self, rank: int | None) -> None:
        if rank is not None and rank != self.app.rank:
            self.app.show_rank(rank)

    def action_collective_other_rank(self) -> None:
        """``x``: from a NCCL kernel or a collective op, the same collective on another rank."""
        job = self._job()
        if job is None:
            return
        node = self.current if self.current is not None else -1
        k = self.source.kineto_of(node) if node >= 0 else -1
        i = collective_at(job.collectives, self.app.rank, self.source.kt, k) if self.source.kt is not None else None
        if i is None:
            show_note(self, "not a collective: select a NCCL kernel or a collective op (record_param_comms, "
                            "nccl:*, c10d::*)", severity="warning")
            return
        c = job.collectives[i]
        rows = []
        for r, offset, dur in sorted(member_offsets(c), key=lambda x: x[0]):
            label = Text(f"rank {r:>4}  starts +{offset:10.1f} {units.US}  runs {dur:10.1f} {units.US}")
            if r == c["last_rank"]:
                label.append("  last to arrive", style="yellow")
            if r == self.app.rank:
                label.append("  (shown)", style="dim")
            rows.append((r, label, r != self.app.rank))
        others = [r for r, _, ok in rows if ok]
        title = (f"{c['name']} #{c['seq'] if c['seq'] is not None else c['index']} on {c['ranks']} ranks: "
                 f"start skew {c['start_skew_us']:.1f} {units.US}; go to rank")
        self.app.push_screen(RankPicker(title, rows, c["last_rank"] if c["last_rank"] in others else
                                        (others[0] if others else None)),
                             lambda r: self._collective_rank_chosen(i, r))

    def _collective_rank_chosen(self, index: int, rank: int | None) -> None:
        if rank is None or rank == self.app.rank:
            return
        c = self.app.job.collectives[index]
        m = c["members"][rank]
        note = Text(f"x {c['name']} on rank {rank}: starts +{m['start_us'] - c['start_us']:.1f} {units.US}, "
                    f"runs {m['dur_us']:.1f} {units.US}", style="bold")
        self.app.show_rank(rank, select=(int(m["kernel"]), note))

    def action_job_summary(self) -> None:
        """``X``: the cross-rank screen (per-rank breakdown, collectives, stragglers); its tables
        are computed once per job (in the background once a rank's tree is shown)."""
        job = self._job()
        if job is None:
            return
        from .job_summary_screen import JobSummaryScreen

        app = self.app
        show_when_computed(self, partial(job_summary, job),
                           lambda doc: app.push_screen(JobSummaryScreen(job, app.rank, doc), self._summary_choice),
                           "job_summary", once=app.job_once, name=JOB_SUMMARY)

    def _summary_choice(self, choice: tuple[str, Any] | None) -> None:
        if choice is None:
            return
        what, value = choice
        if what == "arrival":  # the arrivals plot: a rank's kernel of a collective
            index, rank = value
            if rank == self.app.rank:
                self.select(int(self.app.job.collectives[index]["members"][rank]["kernel"]))
            else:
                self._collective_rank_chosen(index, rank)
            return
        if what == "rank" and value != self.app.rank:
            self.app.show_rank(value)
        elif what == "collective":
            m = self.app.job.collectives[value]["members"].get(self.app.rank)
            if m is not None:
                self.select(int(m["kernel"]))
