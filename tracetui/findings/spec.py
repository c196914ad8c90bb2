"""What a rule is (data: :class:`RuleSpec`, read from ``default_findings.toml``), what it
finds (:class:`Finding`), and the user's overrides (a TOML file of the same rule ids).

A rule's data: ``id``, ``title``, ``severity`` (info, warning, error), ``scope`` ("trace":
run on one trace; "job": run on a whole job), its thresholds (name, default, unit, what it
means), the method, how its time at stake is estimated, and a fix hint.  Its one function
lives in the rules modules (:data:`tracetui.findings.engine.CHECKS`).

User overrides (``--rules FILE``, else ``$TRACETUI_FINDINGS``, else
``$XDG_CONFIG_HOME/tracetui/findings.toml`` when it exists)::

    [pageable_copy]
    severity = "error"        # info | warning | error
    min_time_us = 100.0       # any threshold of the rule, by name (same type as its default)

    [trace_health]
    enabled = false

Unknown rules, unknown keys, values of the wrong type: one-line
:class:`~tracetui.errors.TraceFormatError` naming the file and the rule.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import IntEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..config import load_packaged_toml, load_toml, user_file
from ..errors import TraceFormatError

#: Environment variable naming a user findings file (used when no path is given).
ENV_VAR = "TRACETUI_FINDINGS"
_DEFAULTS_RESOURCE = "default_findings.toml"
_SPEC_KEYS = frozenset({"title", "severity", "scope", "method", "time_at_stake", "hint", "threshold"})
_THRESHOLD_KEYS = frozenset({"name", "default", "unit", "doc"})
SCOPES = ("trace", "job")


class Severity(IntEnum):
    """How much a finding matters; ``--fail-on`` compares with ``>=``."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def word(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[str(text).upper()]
        except KeyError:
            raise ValueError(f"severity {text!r} must be one of info, warning, error") from None


@dataclass(frozen=True)
class Threshold:
    """One tunable number (or text) of a rule: ``default`` gives its type."""

    name: str
    default: Any
    unit: str = ""
    doc: str = ""


@dataclass(frozen=True)
class RuleSpec:
    """A rule as data (see the module docstring)."""

    id: str
    title: str
    severity: Severity
    scope: str
    method: str
    time_at_stake: str
    hint: str
    thresholds: tuple[Threshold, ...] = ()

    def threshold(self, name: str) -> Threshold:
        for t in self.thresholds:
            if t.name == name:
                return t
        raise KeyError(f"rule {self.id} has no threshold {name!r}")


@dataclass(frozen=True)
class RuleConfig:
    """A rule with the user's overrides applied: effective severity, enabled, values."""

    spec: RuleSpec
    severity: Severity
    enabled: bool
    values: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


@dataclass
class Finding:
    """One thing wrong with the run.

    ``verdict``: one line in numbers.  ``count``: how many occurrences (calls, copies,
    steps ...).  ``value`` (in ``unit``): the rule's measured number (e.g. the GPU idle inside
    DataLoader spans, µs).  ``time_at_stake_us``: what the step/trace would save if fixed,
    an estimate (``stake_label`` says how it was estimated; None: not estimated).
    ``evidence``: event ids (the model's node ids, ``--select node:N``), in time order;
    ``evidence_us``: µs at stake per evidence event where the rule has one.  ``details``:
    small JSON-ready rows (by direction, by op, per collective ...).  ``rank``: set for a
    finding of one rank of a job.  ``check``: the sub-check of a rule with several
    (``trace_health``)."""

    rule: str
    title: str
    severity: Severity
    verdict: str
    count: int
    value: float | None
    unit: str
    time_at_stake_us: float | None
    stake_label: str
    evidence: np.ndarray
    hint: str
    details: list[dict[str, Any]] = field(default_factory=list)
    evidence_us: np.ndarray | None = None
    check: str | None = None
    rank: int | None = None

    def sort_key(self) -> tuple:
        """Largest time at stake first (not estimated last), then severity, then rule id."""
        stake = self.time_at_stake_us
        return (stake is None, -(stake or 0.0), -int(self.severity), self.rule, self.check or "",
                self.rank if self.rank is not None else -1)

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` form (see docs/findings.md)."""
        out: dict[str, Any] = {
            "rule": self.rule, "title": self.title, "severity": self.severity.word, "check": self.check,
            "count": int(self.count), "value": _num(self.value), "unit": self.unit,
            "time_at_stake_us": _num(self.time_at_stake_us), "time_at_stake_is": self.stake_label,
            "verdict": self.verdict, "evidence": [int(x) for x in np.asarray(self.evidence).tolist()],
            "evidence_us": None if self.evidence_us is None else np.round(self.evidence_us, 3).tolist(),
            "hint": self.hint, "details": self.details,
        }
        if self.rank is not None:
            out = {"rank": self.rank, **out}
        return out


    @classmethod
    def from_json(cls, d: dict[str, Any], rank: int | None = None) -> "Finding":
        """A finding back from :meth:`as_json` (a job's worker sends its findings that way)."""
        ev_us = d.get("evidence_us")
        return cls(rule=d["rule"], title=d["title"], severity=Severity.parse(d["severity"]), verdict=d["verdict"],
                   count=int(d["count"]), value=d["value"], unit=d["unit"], time_at_stake_us=d["time_at_stake_us"],
                   stake_label=d["time_at_stake_is"], evidence=np.asarray(d["evidence"], dtype=np.int64),
                   hint=d["hint"], details=list(d["details"]), check=d.get("check"),
                   evidence_us=None if ev_us is None else np.asarray(ev_us, dtype=np.float64),
                   rank=rank if rank is not None else d.get("rank"))


def _num(v: float | None) -> float | None:
    if v is None:
        return None
    f = float(v)
    return None if f != f else round(f, 3)


# ---- the packaged specs ----------------------------------------------------------------------

def _table(raw: Any, allowed: frozenset[str], path: str, where: str, needs: tuple[str, ...] = ()) -> dict[str, Any]:
    """``raw`` when it is a table with only ``allowed`` keys and every key of ``needs``."""
    problem = "must be a table" if not isinstance(raw, dict) else None
    if problem is None and (extra := sorted(set(raw) - allowed)):
        problem = f"unknown key {extra[0]!r}"
    if problem is None and (missing := [k for k in needs if k not in raw]):
        problem = f"missing {missing[0]!r}"
    if problem is not None:
        raise TraceFormatError(path, problem, position=where)
    return raw


def _severity(text: Any, path: str, where: str) -> Severity:
    try:
        return Severity.parse(text)
    except ValueError as exc:
        raise TraceFormatError(path, str(exc), position=where) from None


def parse_specs(data: dict[str, Any], path: str) -> dict[str, RuleSpec]:
    """Rule specs from parsed TOML (the packaged defaults' format)."""
    out: dict[str, RuleSpec] = {}
    for rid, raw in data.items():
        where = f"rule {rid}"
        raw = _table(raw, _SPEC_KEYS, path, where, ("title",))
        scope = raw.get("scope", "trace")
        if scope not in SCOPES:
            raise TraceFormatError(path, f"scope {scope!r} must be trace or job", position=where)
        ths = tuple(Threshold(str(t["name"]), t["default"], str(t.get("unit", "")), str(t.get("doc", "")).strip())
                    for t in (_table(t, _THRESHOLD_KEYS, path, where, ("name", "default"))
                              for t in raw.get("threshold", [])))
        text = {k: str(raw.get(k, "")).strip() for k in ("method", "time_at_stake", "hint")}
        out[rid] = RuleSpec(rid, str(raw["title"]), _severity(raw.get("severity", "warning"), path, where), scope,
                            text["method"], text["time_at_stake"], text["hint"], ths)
    return out


@lru_cache(maxsize=1)
def _default_specs() -> dict[str, RuleSpec]:
    return parse_specs(*load_packaged_toml(__package__, _DEFAULTS_RESOURCE))


def default_specs() -> dict[str, RuleSpec]:
    """Every rule's spec, in the order of ``default_findings.toml``."""
    return dict(_default_specs())


# ---- user overrides ---------------------------------------------------------------------------

def _same_type(default: Any, value: Any) -> Any | None:
    """``value`` converted to the type of ``default``; None when it does not fit."""
    if isinstance(default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(default, int):
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(default, float):
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(default, str):
        return value if isinstance(value, str) else None
    return None


def parse_overrides(data: dict[str, Any], path: str, specs: dict[str, RuleSpec]) -> dict[str, RuleConfig]:
    """Every rule's config: the defaults with the user's overrides (``data``) applied."""
    out = {rid: RuleConfig(s, s.severity, True, {t.name: t.default for t in s.thresholds})
           for rid, s in specs.items()}
    for rid, raw in data.items():
        if rid not in specs:
            raise TraceFormatError(path, f"unknown rule {rid!r} (rules: {', '.join(specs)})")
        where = f"rule {rid}"
        raw = _table(raw, frozenset(raw) if isinstance(raw, dict) else frozenset(), path, where)
        spec, cfg = specs[rid], out[rid]
        sev, enabled, values = cfg.severity, cfg.enabled, dict(cfg.values)
        for key, value in raw.items():
            if key == "severity":
                sev = _severity(value, path, where)
            elif key == "enabled":
                if not isinstance(value, bool):
                    raise TraceFormatError(path, "'enabled' must be true or false", position=where)
                enabled = value
            elif key in values:
                got = _same_type(spec.threshold(key).default, value)
                if got is None:
                    kind = type(spec.threshold(key).default).__name__
                    raise TraceFormatError(path, f"{key!r} must be a {kind}, not {value!r}", position=where)
                if spec.threshold(key).unit == "regex":
                    try:
                        re.compile(got)
                    except re.error as exc:
                        raise TraceFormatError(path, f"{key!r}: bad regex {got!r}: {exc}", position=where) from None
                values[key] = got
            else:
                names = ", ".join(["severity", "enabled", *values])
                raise TraceFormatError(path, f"unknown key {key!r} (expected {names})", position=where)
        out[rid] = RuleConfig(spec, sev, enabled, values)
    return out


def user_findings_location() -> Path | None:
    """``$TRACETUI_FINDINGS`` if set, else ``$XDG_CONFIG_HOME/tracetui/findings.toml`` if it
    exists (``~/.config`` when ``XDG_CONFIG_HOME`` is unset), else None."""
    return user_file(ENV_VAR, "findings.toml")


def rule_configs(path: str | os.PathLike[str] | None = None) -> dict[str, RuleConfig]:
    """Every rule's config: the packaged defaults, with the overrides of ``path`` (default:
    :func:`user_findings_location`) applied."""
    specs = _default_specs()
    where = Path(path) if path is not None else user_findings_location()
    if where is None:
        return parse_overrides({}, "", specs)
    return parse_overrides(load_toml(where, "findings rules file"), os.fspath(where), specs)


def overrides_as_data(configs: dict[str, RuleConfig]) -> dict[str, dict[str, Any]]:
    """The configs as plain override data (picklable; :func:`parse_overrides` reads it back),
    to hand to job workers."""
    return {rid: {"severity": c.severity.word, "enabled": c.enabled, **c.values} for rid, c in configs.items()}


# ---- documentation ---------------------------------------------------------------------------

def _para(text: str) -> str:
    return " ".join(text.split())


def rules_markdown(specs: dict[str, RuleSpec] | None = None) -> str:
    """Every rule as Markdown (method, time at stake, thresholds, hint): the generated part of
    docs/findings.md (``python scripts/findings_doc.py`` rewrites it; a test compares)."""
    specs = default_specs() if specs is None else specs
    out: list[str] = []
    for s in specs.values():
        out += [f"### `{s.id}`: {s.title}", "",
                f"Severity **{s.severity.word}**" + (", runs on a whole job." if s.scope == "job" else "."), "",
                f"**Method.** {_para(s.method)}", "", f"**Time at stake.** {_para(s.time_at_stake)}", ""]
        if s.thresholds:
            out += ["| threshold | default | unit | meaning |", "|---|---|---|---|"]
            for t in s.thresholds:
                default = f"`{t.default}`" if isinstance(t.default, str) else f"{t.default:g}" \
                    if isinstance(t.default, float) else str(t.default)
                out.append(f"| `{t.name}` | {default} | {t.unit} | {t.doc} |")
            out.append("")
        out += [f"**Fix hint.** {_para(s.hint)}", ""]
    return "\n".join(out)
