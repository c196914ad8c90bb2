"""Column builders for the SQL tables: numpy columns handed to DuckDB without a Python object
per row.

DuckDB scans a pandas DataFrame column by column: numeric numpy arrays in place, a masked
integer array (``pandas.arrays.IntegerArray``) as a nullable integer, NaN in a float column
as NULL, and a ``pandas.Categorical`` (int codes + one string table) as an ``ENUM``, so a
name column costs one small code per row and each distinct string once.  ``-1`` (the
model's "none") becomes NULL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

#: the view that unnests a table of (event, args JSON text) into one row per key
ARGS_VIEW = """CREATE OR REPLACE TEMP VIEW args AS
SELECT a.event{rank}, j.key AS key,
       CASE WHEN json_type(j.value) = 'VARCHAR' THEN j.value ->> '$' ELSE CAST(j.value AS VARCHAR) END AS value,
       lower(json_type(j.value)) AS type
FROM {raw} AS a, json_each(a.args) AS j"""


def ids(values: np.ndarray, none_below: int = 0) -> pd.arrays.IntegerArray:
    """int64 ids with every value below ``none_below`` (the model's -1) as NULL."""
    v = np.asarray(values).astype(np.int64, copy=False)
    return pd.arrays.IntegerArray(v, v < none_below)


def ids_where(values: np.ndarray, none: np.ndarray) -> pd.arrays.IntegerArray:
    """int64 values, NULL where ``none`` is True."""
    return pd.arrays.IntegerArray(np.asarray(values).astype(np.int64, copy=False), np.asarray(none, dtype=bool))


def coded(codes: np.ndarray, strings: Sequence[str]) -> pd.Categorical:
    """Strings as codes into ``strings`` (an ENUM in DuckDB); a negative code is NULL.
    ``strings`` must be distinct (the model's interned tables are)."""
    c = np.asarray(codes)
    dtype = np.int32 if len(strings) < 2**31 else np.int64
    return pd.Categorical.from_codes(c.astype(dtype, copy=False), categories=pd.Index(list(strings), dtype=object),
                                     validate=False)


def text_codes(values: Sequence[Any]) -> pd.Categorical:
    """A categorical of arbitrary values (None stays NULL, others as text), interned once
    per distinct value: for columns the model keeps as a few repeated objects."""
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    texts = [str(u) for u in uniq]
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(t, len(first)) for t in texts] + [-1], dtype=np.int64)
    return coded(remap[codes], list(first))  # 1 and "1" are one text


def frame(columns: dict[str, Any]) -> pd.DataFrame:
    """A DataFrame of the given columns, not copied into blocks."""
    return pd.DataFrame(columns, copy=False)


def lane_text(lanes: Sequence[Any], lane_of: np.ndarray, attr: str) -> pd.Categorical:
    """Per row, the text of attribute ``attr`` (``pid``, ``tid``, ``label``) of its lane
    (``lane_of`` indexes ``lanes``; -1: NULL), each distinct text stored once."""
    texts: dict[str, int] = {}
    codes = np.array([texts.setdefault(str(getattr(ln, attr)), len(texts)) for ln in lanes] + [-1], dtype=np.int64)
    li = np.asarray(lane_of, dtype=np.int64)
    return coded(codes[np.where(li >= 0, li, len(lanes))], list(texts))


def parent_ids(parent: np.ndarray, n_events: int) -> pd.arrays.IntegerArray:
    """Parent node ids as event ids: lane roots (ids >= ``n_events``) and -1 are NULL."""
    p = np.asarray(parent).astype(np.int64, copy=False)
    return ids_where(p, (p < 0) | (p >= n_events))
