"""How a query result's values are written as text: the one place (to move to the shared
``units`` module), used by ``tracetui query``'s table and CSV and by the browser's result table.

- NULL is "" (an empty cell);
- integers in full, without separators (ids and counts stay copyable);
- floats with 3 decimals (µs to the ns), or 3 significant digits when smaller than 0.001;
  NaN and infinities as ``nan``/``inf``;
- booleans ``true``/``false``; everything else ``str``.
"""

from __future__ import annotations

import math
from typing import Any

#: DuckDB type names whose values are numbers (right-aligned in tables)
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


def is_numeric(type_name: str) -> bool:
    """Is a column of this DuckDB type a number column?"""
    return type_name.split("(")[0] in NUMERIC_TYPES


def cell_text(v: Any) -> str:
    """One value as text (see the module docstring)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.3g}"
        return f"{v:.3f}"
    return str(v)
