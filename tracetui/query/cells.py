"""Which query result columns hold numbers (right-aligned in the CLI's and the browser's
result tables).  How a value is written is :func:`tracetui.units.value_text`."""

from __future__ import annotations

#: DuckDB type names whose values are numbers
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")


def is_numeric(type_name: str) -> bool:
    """Is a column of this DuckDB type a number column?"""
    return type_name.split("(")[0] in NUMERIC_TYPES
