"""Findings: what is wrong with a run, with the time at stake and the evidence (docs/findings.md).

``run_checks(linked)`` runs every enabled rule over a linked trace and gives a
:class:`FindingsReport`; ``check_job(inputs)`` does it for every rank of a job.  A rule is
data (``default_findings.toml``: id, title, severity, thresholds, method, hint) plus one
function (``engine.CHECKS``); users override severities and thresholds in TOML
(``spec.rule_configs``).
"""

from .engine import CHECKS, FindingsReport, run_checks
from .spec import Finding, RuleConfig, RuleSpec, Severity, default_specs, rule_configs

__all__ = ["CHECKS", "Finding", "FindingsReport", "RuleConfig", "RuleSpec", "Severity", "default_specs",
           "rule_configs", "run_checks"]
