"""Kernel categories: ordered, user-overridable name rules for GPU events.

Every GPU event (kernel, memcpy, memset) gets one category, a short lowercase
identifier such as ``gemm``, ``attention_fwd`` or ``memory``.  Rules are tried in
order and the first one whose regex matches the event's *name* (searched
case-insensitively anywhere in its first :data:`tracetui.names.NAME_WORK_CHARS` characters:
a 10 MB name costs what its first 4 KB cost) and whose ``kinds`` include the event's kind wins;
no match gives :data:`FALLBACK_CATEGORY` (``"other"``).

The default rules live in the packaged ``default_categories.toml`` (NVIDIA and AMD
naming).  Users put their own rules in a TOML file of the same format; they are tried
before the defaults, or replace them (``replace_defaults = true``).  See
``docs/categories.md``.

Only names and kinds are involved here: no times (durations are summed elsewhere,
in microseconds, by whoever groups events by category).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import load_packaged_toml, load_toml, user_file
from ..errors import TraceFormatError
from ..names import head

#: Category of an event that no rule matches.
FALLBACK_CATEGORY = "other"

#: The categories the default rules produce, in a stable display order (fallback last).
DEFAULT_CATEGORIES: tuple[str, ...] = (
    "gemm",
    "attention_fwd",
    "attention_bwd",
    "conv",
    "communication",
    "memory",
    "normalization",
    "softmax",
    "reduction",
    "elementwise",
    "triton",
    FALLBACK_CATEGORY,
)

#: Event kinds a rule may be restricted to.
EVENT_KINDS = frozenset({"kernel", "memcpy", "memset"})

#: Environment variable naming a user rules file (used when no path is given).
ENV_VAR = "TRACETUI_CATEGORIES"

_DEFAULTS_RESOURCE = "default_categories.toml"
_CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_RULE_KEYS = frozenset({"category", "pattern", "kinds"})
_TOP_KEYS = frozenset({"rule", "replace_defaults"})


@dataclass(frozen=True)
class CategoryRule:
    """One rule: events whose name matches ``pattern`` get ``category``.

    ``pattern`` is a Python regex searched case-insensitively anywhere in the name.
    ``kinds`` restricts the rule to some event kinds (``"kernel"``, ``"memcpy"``,
    ``"memset"``); ``None`` means every kind.
    """

    category: str
    pattern: str
    kinds: frozenset[str] | None = None


def normalize_kind(kind: Any) -> str:
    """Map a kind given as a string or enum to ``"kernel"``, ``"memcpy"`` or ``"memset"``.

    Accepts the Kineto categories too (``"gpu_memcpy"``, ``"Kernel"``, ``"Memset"``) and
    enum members by their name (``Kind.MEMCPY``).  Anything else is returned lowercased,
    so only rules without a ``kinds`` restriction can match it.
    """
    text = getattr(kind, "name", kind)
    text = str(text).lower()
    if text.startswith("gpu_"):
        text = text[4:]
    return text


class KernelCategorizer:
    """Assigns categories to GPU event names with an ordered list of rules.

    Results are cached per (name, kind): traces hold few distinct names but up to
    millions of events.
    """

    def __init__(self, rules: Sequence[CategoryRule]):
        self._rules: tuple[CategoryRule, ...] = tuple(rules)
        self._compiled: list[tuple[str, re.Pattern[str], frozenset[str] | None]] = []
        for index, rule in enumerate(self._rules, start=1):
            try:
                regex = re.compile(rule.pattern, re.IGNORECASE)
            except re.error as exc:
                raise ValueError(f"rule {index} ({rule.category}): bad regex {rule.pattern!r}: {exc}") from exc
            self._compiled.append((rule.category, regex, rule.kinds))
        self._cache: dict[tuple[str, str], str] = {}

    @property
    def rules(self) -> tuple[CategoryRule, ...]:
        """The rules in the order they are tried."""
        return self._rules

    @property
    def categories(self) -> tuple[str, ...]:
        """Every category these rules can give, in first-rule order, ``"other"`` last."""
        seen: dict[str, None] = {}
        for rule in self._rules:
            seen.setdefault(rule.category, None)
        seen.pop(FALLBACK_CATEGORY, None)
        return (*seen, FALLBACK_CATEGORY)

    def categorize(self, name: str, kind: Any = "kernel") -> str:
        """Category of one event: the first matching rule's, else ``"other"``."""
        found = self._cache.get((name, kind))  # kind as given: no normalising on a hit
        if found is None:
            kind_s = normalize_kind(kind)
            found = self._cache.get((name, kind_s))
            if found is None:
                found = self._match(name or "", kind_s)
                self._cache[(name, kind_s)] = found
            self._cache[(name, kind)] = found
        return found

    def categorize_many(self, names: Sequence[str], kinds: Sequence[Any]) -> list[str]:
        """Categories of many events; ``names[i]`` has kind ``kinds[i]``."""
        if len(names) != len(kinds):
            raise ValueError(f"{len(names)} names but {len(kinds)} kinds")
        categorize = self.categorize
        return [categorize(name, kind) for name, kind in zip(names, kinds)]

    def _match(self, name: str, kind: str) -> str:
        name = head(name)  # bounded work per name (tracetui/names.py)
        for category, regex, kinds in self._compiled:
            if kinds is not None and kind not in kinds:
                continue
            if regex.search(name):
                return category
        return FALLBACK_CATEGORY


def _parse_rules(data: dict[str, Any], path: str) -> tuple[list[CategoryRule], bool]:
    """Validate parsed TOML; return (rules, replace_defaults).  Errors name file and rule."""
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise TraceFormatError(path, f"unknown top-level key {unknown[0]!r} (expected 'rule' or 'replace_defaults')")
    replace = data.get("replace_defaults", False)
    if not isinstance(replace, bool):
        raise TraceFormatError(path, "'replace_defaults' must be true or false")
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        raise TraceFormatError(path, "'rule' must be an array of tables: write each rule as [[rule]]")
    rules: list[CategoryRule] = []
    for index, raw in enumerate(raw_rules, start=1):
        where = f"rule {index}"
        if not isinstance(raw, dict):
            raise TraceFormatError(path, "a rule must be a table ([[rule]])", position=where)
        extra = sorted(set(raw) - _RULE_KEYS)
        if extra:
            raise TraceFormatError(path, f"unknown key {extra[0]!r} (expected category, pattern, kinds)",
                                   position=where)
        for field in ("category", "pattern"):
            if field not in raw:
                raise TraceFormatError(path, f"missing {field!r}", position=where)
            if not isinstance(raw[field], str):
                raise TraceFormatError(path, f"{field!r} must be a string", position=where)
        category, pattern = raw["category"], raw["pattern"]
        if not _CATEGORY_RE.match(category):
            raise TraceFormatError(
                path, f"category {category!r} must be a lowercase identifier (a-z, 0-9, _)", position=where
            )
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise TraceFormatError(path, f"bad regex {pattern!r}: {exc}", position=where) from exc
        kinds = raw.get("kinds")
        if kinds is not None:
            if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
                raise TraceFormatError(path, "'kinds' must be a non-empty list of strings", position=where)
            bad = sorted(set(kinds) - EVENT_KINDS)
            if bad:
                raise TraceFormatError(
                    path, f"unknown kind {bad[0]!r} (expected {', '.join(sorted(EVENT_KINDS))})", position=where
                )
            kinds = frozenset(kinds)
        rules.append(CategoryRule(category, pattern, kinds))
    return rules, replace


def _load_rule_file(path: str | os.PathLike[str]) -> tuple[list[CategoryRule], bool]:
    return _parse_rules(load_toml(path, "category rules file"), os.fspath(path))


def load_rules(path: str | os.PathLike[str]) -> list[CategoryRule]:
    """Rules from a user TOML file, in file order.

    Raises :class:`~tracetui.errors.TraceFileError` if the file cannot be read and
    :class:`~tracetui.errors.TraceFormatError` (one line naming the file and the rule
    number, counted from 1) for bad TOML, a bad regex, a missing or unknown field.
    Whether the file sets ``replace_defaults`` is read by :func:`get_categorizer`.
    """
    return _load_rule_file(path)[0]


@lru_cache(maxsize=1)
def _default_rules() -> tuple[CategoryRule, ...]:
    rules, _ = _parse_rules(*load_packaged_toml(__package__, _DEFAULTS_RESOURCE))
    return tuple(rules)


def default_rules() -> list[CategoryRule]:
    """The packaged default rules (``default_categories.toml``), in order."""
    return list(_default_rules())


def user_rules_location() -> Path | None:
    """The user rules file to use when none is given explicitly, or None.

    ``$TRACETUI_CATEGORIES`` if set and non-empty (it must exist), else
    ``$XDG_CONFIG_HOME/tracetui/categories.toml`` (``~/.config/...`` when
    ``XDG_CONFIG_HOME`` is unset) if that file exists.
    """
    return user_file(ENV_VAR, "categories.toml")


def get_categorizer(user_rules_path: str | os.PathLike[str] | None = None) -> KernelCategorizer:
    """A categorizer with the user's rules first, then the defaults.

    With ``user_rules_path`` None, the file comes from :func:`user_rules_location`
    (environment variable, then the XDG config file); with none found, the defaults
    alone.  A file that sets ``replace_defaults = true`` drops the defaults.
    """
    path = Path(user_rules_path) if user_rules_path is not None else user_rules_location()
    if path is None:
        return KernelCategorizer(_default_rules())
    user, replace = _load_rule_file(path)
    rules = list(user) if replace else [*user, *_default_rules()]
    return KernelCategorizer(rules)
