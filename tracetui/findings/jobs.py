"""``tracetui check JOB``: every rank of a job checked in parallel processes (or on a Dask
cluster), each through the per-file cache like ``tracetui summary JOB``; the findings come
back tagged with their rank (evidence ids are that rank's event ids).  Job-scope rules
(``straggler``) will run here over the joined ranks."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..job.job import run_per_rank
from ..job.worker import guarded
from .engine import FindingsReport, rules_table
from .spec import Finding, RuleConfig, default_specs, overrides_as_data, parse_overrides, rule_configs

Progress = Callable[[str, float], None]


def check_rank(task: dict[str, Any]) -> dict[str, Any]:
    """Load one rank (``task``: ``rank``, ``kineto``, ``et``, ``use_cache``, ``overrides``
    (:func:`~tracetui.findings.spec.overrides_as_data`), ``categories``) and check it:
    ``{"rank", "findings": [as_json ...], "error"}``.  Never raises for bad input."""
    out: dict[str, Any] = {"rank": task["rank"], "findings": [], "error": None}

    def work() -> None:
        from ..analysis.categories import get_categorizer
        from ..store.traces import load_cached
        from .engine import check_findings

        paths = [task["kineto"]] + ([task["et"]] if task.get("et") else [])
        linked = load_cached(paths, use_cache=task.get("use_cache", True))
        configs = parse_overrides(task["overrides"], "<job task>", default_specs())
        found = check_findings(linked, configs, get_categorizer(task.get("categories")))
        out["findings"] = [f.as_json() for f in found]

    return guarded(task, out, work)


def _failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    return {"rank": task["rank"], "findings": [], "error": message}


def check_job(inputs: list[str], configs: dict[str, RuleConfig] | None = None, *, categories: str | None = None,
              use_cache: bool = True, workers: int | None = None, scheduler: str | None = None,
              progress: Progress | None = None) -> FindingsReport:
    """Check every rank of the job named by ``inputs``; findings of all ranks, sorted by time
    at stake.  Ranks that fail are named in ``errors`` (the others are checked)."""
    configs = rule_configs() if configs is None else configs
    report = progress or (lambda msg, frac: None)
    fields = {"use_cache": use_cache, "overrides": overrides_as_data(configs), "categories": categories}
    layout, outs = run_per_rank(inputs, check_rank, fields, _failed, workers=workers, scheduler=scheduler,
                                progress=report, verb="checked")
    findings = [Finding.from_json(f, rank=o["rank"]) for o in outs for f in o["findings"]]
    findings.sort(key=Finding.sort_key)
    errors = list(layout.warnings) + [f"rank {o['rank']}: {o['error']}" for o in outs if o["error"]]
    where = inputs[0] if len(inputs) == 1 else f"{len(inputs)} inputs"
    source = f"job {os.path.basename(os.path.normpath(where))} ({len(layout.ranks)} ranks)"
    return FindingsReport(source, findings, rules_table(configs, findings), ranks=[r.rank for r in layout.ranks],
                          errors=errors)
