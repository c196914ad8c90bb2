"""How findings write numbers (verdicts, details, the ``check`` text): the one place, to be
switched to the shared ``units`` module.  Inputs: µs, bytes, counts, percent."""

from __future__ import annotations

US = "µs"  #: the unit of every time a finding holds (value, time at stake, evidence)
PCT = "%"


def dur(us: float | None) -> str:
    """A duration given in µs: ``812 ns``, ``3.4 µs``, ``12.3 ms``, ``1.52 s``."""
    if us is None:
        return "-"
    v = float(us)
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g} s" if a < 1e8 else f"{v / 1e6:,.0f} s"
    if a >= 1e3:
        return f"{v / 1e3:.3g} ms"
    if a >= 1.0 or a == 0.0:
        return f"{v:.3g} {US}"
    return f"{v * 1e3:.3g} ns"


def count(n: int | float) -> str:
    """An integer count with thousands separators."""
    return f"{int(n):,}"


def nbytes(b: float | None) -> str:
    """A size in bytes: ``512 B``, ``8.2 kB``, ``1.5 MB``, ``3.1 GB`` (powers of 1000)."""
    if b is None or b != b:
        return "-"
    v = float(b)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:,.0f} B"


def pct(p: float) -> str:
    """A percentage: ``42%``, ``3.5%``, ``0.12%``."""
    v = float(p)
    return f"{v:.0f}%" if abs(v) >= 10 else f"{v:.2g}%"


def ratio(x: float) -> str:
    """A factor: ``2.4x``."""
    return f"{float(x):.2g}x" if float(x) < 10 else f"{float(x):.0f}x"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``3 calls`` (count formatted)."""
    return f"{count(n)} {word if n == 1 else (many or word + 's')}"


#: the longest kernel name a verdict or a details row shows
NAME_CHARS = 40


def short_name(name: str) -> str:
    """A kernel name without its return type, anonymous namespaces and parameter list, cut to
    :data:`NAME_CHARS` characters."""
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    if not name.startswith(("Memcpy", "Memset")):  # "Memcpy HtoD (Pageable -> Device)" keeps its brackets
        name = name.split("(", 1)[0].rstrip() or name
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"
