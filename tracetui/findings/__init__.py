"""Findings: what is wrong with a run, with the time at stake and the evidence (docs/findings.md).

``run_checks(linked)`` runs every enabled rule over a linked trace and gives a
:class:`FindingsReport`; ``check_job(inputs)`` does it for every rank of a job.  A rule is
data (``default_findings.toml``: id, title, severity, thresholds, method, hint) plus one
function (``engine.CHECKS``); users override severities and thresholds in TOML
(``spec.rule_configs``).
"""

from __future__ import annotations

from ..lazy import lazy_names

#: where each public name lives: the engine (its rules and their context import pandas and the
#: analysis) loads on first use, so the browser's screen, which names the findings' types, does
#: not import it before the tree is painted (the findings are computed in a worker after it)
_WHERE = {"CHECKS": "engine", "FindingsReport": "engine", "run_checks": "engine",
          "Finding": "spec", "RuleConfig": "spec", "RuleSpec": "spec", "Severity": "spec",
          "default_specs": "spec", "rule_configs": "spec"}

__all__ = ["CHECKS", "Finding", "FindingsReport", "RuleConfig", "RuleSpec", "Severity", "default_specs",
           "rule_configs", "run_checks"]

__getattr__ = lazy_names(__name__, {name: f".{home}" for name, home in _WHERE.items()})
