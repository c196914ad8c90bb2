"""What every rule function uses to build its findings."""

from __future__ import annotations

from typing import Any

import numpy as np

from .spec import Finding, RuleConfig

NOT_ESTIMATED = "not estimated"


def finding(cfg: RuleConfig, *, verdict: str, count: int, value: float | None, unit: str,
            stake_us: float | None, stake_label: str, evidence: np.ndarray, details: list[dict[str, Any]] | None = None,
            evidence_us: np.ndarray | None = None, check: str | None = None, title: str | None = None) -> Finding:
    """A finding of rule ``cfg`` (its id, severity and hint), evidence in time order."""
    ev = np.asarray(evidence, dtype=np.int64)
    return Finding(rule=cfg.spec.id, title=title or cfg.spec.title, severity=cfg.severity, verdict=verdict,
                   count=int(count), value=None if value is None else float(value), unit=unit,
                   time_at_stake_us=None if stake_us is None else float(stake_us),
                   stake_label=stake_label if stake_us is not None else NOT_ESTIMATED, evidence=ev,
                   hint=cfg.spec.hint, details=details or [],
                   evidence_us=None if evidence_us is None else np.asarray(evidence_us, dtype=np.float64),
                   check=check)


def in_time_order(ts: np.ndarray, events: np.ndarray, *per: np.ndarray) -> tuple[np.ndarray, ...]:
    """``events`` (and arrays aligned with it) sorted by ``ts[events]``."""
    events = np.asarray(events, dtype=np.int64)
    o = np.argsort(ts[events], kind="stable") if events.size else np.zeros(0, np.int64)
    return (events[o], *(np.asarray(p)[o] for p in per))


def group_rows(keys: list[tuple], columns: dict[str, np.ndarray], key_names: tuple[str, ...],
               sort_by: str, limit: int = 20) -> list[dict[str, Any]]:
    """Rows of summed ``columns`` (plus ``count``) per distinct key, largest ``sort_by`` first."""
    acc: dict[tuple, dict[str, Any]] = {}
    for i, k in enumerate(keys):
        row = acc.get(k)
        if row is None:
            row = acc[k] = {**dict(zip(key_names, k)), "count": 0, **{c: 0.0 for c in columns}}
        row["count"] += 1
        for c, arr in columns.items():
            v = float(arr[i])
            if v == v:
                row[c] += v
    rows = sorted(acc.values(), key=lambda r: (-r[sort_by], -r["count"], str(r[key_names[0]])))
    for r in rows:
        for c in columns:
            r[c] = round(r[c], 3)
    return rows[:limit]
