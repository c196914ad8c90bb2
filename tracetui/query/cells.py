"""Which query result columns hold numbers (right-aligned in the CLI's and the browser's
result tables), and a cell as a JSON value (``tracetui query --json``, ``tracetui mcp``).
How a value is written as text is :func:`tracetui.units.value_text`."""

from __future__ import annotations

import math
from typing import Any

#: DuckDB type names whose values are numbers
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


def is_numeric(type_name: str) -> bool:
    """Is a column of this DuckDB type a number column?"""
    return type_name.split("(")[0] in NUMERIC_TYPES


def json_value(v: Any) -> Any:
    """A cell as a JSON value: numbers, text, booleans and NULL as they are (NaN and infinities
    as null), lists and structs member by member, anything else (dates, decimals ...) as text."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    return str(v)
