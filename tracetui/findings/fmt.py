"""How findings phrase numbers in verdicts, details and the ``check`` text.  Every unit is
spelled by :mod:`tracetui.units` (durations, bytes, percentages); this module adds what is
the findings' own: irregular plurals, factors and short kernel names.  Inputs: µs, bytes,
counts, percent."""

from __future__ import annotations

from .. import units
from ..names import head

US = units.US  #: the unit of every time a finding holds (value, time at stake, evidence)
PCT = units.PCT

#: a duration given in µs, in running text: ``812 ns``, ``3.4 µs``, ``12.3 ms``, ``1.52 s``
dur = units.duration_text
#: a size in bytes, SI: ``512 B``, ``8.2 kB``, ``1.5 MB``
nbytes = units.bytes_brief
#: a percentage: ``42%``, ``3.5%``, ``0.12%``
pct = units.pct_short


def count(n: int | float) -> str:
    """An integer count with thousands separators."""
    return f"{int(n):,}"


def ratio(x: float) -> str:
    """A factor: ``2.4x``."""
    return f"{float(x):.2g}x" if float(x) < 10 else f"{float(x):.0f}x"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``3 calls`` (count formatted); ``many`` for an irregular plural."""
    return f"{count(n)} {word if n == 1 else (many or word + 's')}"


#: the longest kernel name a verdict or a details row shows
NAME_CHARS = 40


def short_name(name: str) -> str:
    """A kernel name without its return type, anonymous namespaces and parameter list, cut to
    :data:`NAME_CHARS` characters."""
    name = head(name).removeprefix("void ").replace("(anonymous namespace)::", "")
    if not name.startswith(("Memcpy", "Memset")):  # "Memcpy HtoD (Pageable -> Device)" keeps its brackets
        name = name.split("(", 1)[0].rstrip() or name
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"
