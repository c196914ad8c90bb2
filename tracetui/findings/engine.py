"""Run the rules over a linked trace: :func:`run_checks` gives a :class:`FindingsReport`
(findings sorted by time at stake, the rules that ran, the evidence lookup the browser's
detail pane uses).  Every rule is data (``default_findings.toml``) plus one function
(:data:`CHECKS`); job-scope rules (``straggler``) run over a whole job
(:mod:`tracetui.findings.jobs`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..analysis.categories import KernelCategorizer
from ..errors import WrongTraceKindError
from ..session import LinkedTrace
from .context import CheckContext
from .rules_gpu import exposed_comm, launch_bound, low_occupancy
from .rules_health import trace_health
from .rules_host import blocking_sync, input_stall, pageable_copy, scalar_sync
from .rules_model import recompute, slow_step
from .spec import Finding, RuleConfig, Severity, rule_configs

Check = Callable[[CheckContext, RuleConfig], list[Finding]]

#: rule id -> its function (trace-scope rules); the data of each is in default_findings.toml
CHECKS: dict[str, Check] = {
    "pageable_copy": pageable_copy,
    "scalar_sync": scalar_sync,
    "blocking_sync": blocking_sync,
    "input_stall": input_stall,
    "launch_bound": launch_bound,
    "exposed_comm": exposed_comm,
    "low_occupancy": low_occupancy,
    "recompute": recompute,
    "slow_step": slow_step,
    "trace_health": trace_health,
}


@dataclass
class FindingsReport:
    """What ``tracetui check`` found in one trace or one job.

    ``findings``: sorted by time at stake (largest first, not estimated last), then
    severity.  ``rules``: per rule, ``id``, ``title``, ``severity``, ``enabled``,
    ``findings`` (how many).  ``ranks``: for a job, the ranks checked (``errors`` names the
    ranks that failed)."""

    source: str
    findings: list[Finding]
    rules: list[dict[str, Any]]
    ranks: list[int] | None = None
    errors: list[str] = field(default_factory=list)
    _index: dict[tuple[int, int], list[int]] | None = None

    def by_severity(self) -> dict[str, int]:
        """Findings per severity, every severity present (error, warning, info)."""
        out = {s.word: 0 for s in sorted(Severity, reverse=True)}
        for f in self.findings:
            out[f.severity.word] += 1
        return out

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def at_or_above(self, level: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity >= level]

    def evidence_of(self, event: int, rank: int | None = None) -> list[Finding]:
        """The findings ``event`` (of ``rank`` in a job) is evidence of, in report order."""
        if self._index is None:
            idx: dict[tuple[int, int], list[int]] = {}
            for k, f in enumerate(self.findings):
                r = -1 if f.rank is None else f.rank
                for e in np.asarray(f.evidence).tolist():
                    idx.setdefault((r, int(e)), []).append(k)
            self._index = idx
        hits = self._index.get((-1 if rank is None else rank, int(event)), [])
        return [self.findings[k] for k in dict.fromkeys(hits)]

    def as_json(self) -> dict[str, Any]:
        """The ``tracetui check --json`` document (docs/findings.md)."""
        out: dict[str, Any] = {"source": self.source, "counts": self.by_severity(),
                               "findings": [f.as_json() for f in self.findings], "rules": self.rules}
        if self.ranks is not None:
            out["ranks"] = self.ranks
            out["errors"] = self.errors
        return out


def trace_rule_configs(configs: dict[str, RuleConfig] | None) -> list[RuleConfig]:
    """The enabled trace-scope rules, in the defaults' order."""
    configs = rule_configs() if configs is None else configs
    return [c for c in configs.values() if c.spec.scope == "trace" and c.enabled]


def rules_table(configs: dict[str, RuleConfig], findings: list[Finding]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    return [{"id": c.spec.id, "title": c.spec.title, "severity": c.severity.word, "scope": c.spec.scope,
             "enabled": c.enabled, "findings": counts.get(c.spec.id, 0)} for c in configs.values()]


def check_findings(linked: LinkedTrace, configs: dict[str, RuleConfig] | None = None,
                   categorizer: KernelCategorizer | None = None, only: Iterable[str] | None = None) -> list[Finding]:
    """Every finding of the enabled trace-scope rules (or of the rules ``only``), unsorted."""
    if linked.kineto is None:
        raise WrongTraceKindError(linked.et.path if linked.et is not None else None,
                                  "`check` needs a Kineto trace or a driver-call trace (this is an Execution Trace "
                                  "only)")
    ctx = CheckContext(linked, categorizer)
    wanted = set(only) if only is not None else None
    out: list[Finding] = []
    for cfg in trace_rule_configs(configs):
        if wanted is not None and cfg.spec.id not in wanted:
            continue
        out.extend(CHECKS[cfg.spec.id](ctx, cfg))
    return out


def run_checks(linked: LinkedTrace, configs: dict[str, RuleConfig] | None = None,
               categorizer: KernelCategorizer | None = None) -> FindingsReport:
    """Check one linked trace with every enabled rule (``configs``: :func:`rule_configs`,
    the defaults with the user's overrides when None)."""
    configs = rule_configs() if configs is None else configs
    findings = sorted(check_findings(linked, configs, categorizer), key=Finding.sort_key)
    title = linked.title or (os.path.basename(linked.kineto.path) if linked.kineto is not None else "")
    return FindingsReport(title, findings, rules_table(configs, findings))
