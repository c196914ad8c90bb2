"""How byte counts are written for people, in one place (the JSON keeps exact integers).

Binary units, as the caching allocator's sizes and PyTorch's memory tools use them:
``512 B``, ``1.50 KiB``, ``18.3 MiB``, ``1.94 GiB`` (three significant digits).  Imports
nothing, so the command line can format a stored summary without loading the analysis code.
"""

from __future__ import annotations

_UNITS = (("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40), ("PiB", 2**50))


def bytes_text(n: int | float | None) -> str:
    """``n`` bytes for people; "" for None.  Negative counts keep their sign."""
    if n is None:
        return ""
    sign, a = ("-" if n < 0 else ""), abs(n)
    if a < 1024:
        return f"{sign}{int(a):,} B"
    unit, scale = _UNITS[0]
    for unit, scale in _UNITS:
        if a < scale * 1024:
            break
    v = a / scale
    digits = 2 if v < 10 else 1 if v < 100 else 0
    return f"{sign}{v:.{digits}f} {unit}"


def blocks_text(n: int) -> str:
    """``1 block``, ``2,048 blocks``."""
    return f"{n:,} block" if n == 1 else f"{n:,} blocks"
