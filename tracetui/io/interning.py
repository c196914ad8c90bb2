"""String interning for columnar storage: a column of repeated values (names, categories,
pids) is kept as int32 codes into a list of distinct values, in first-seen order."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Codes", "compact", "intern"]


class Codes(dict):
    """value -> int code; a missing value gets the next code (one dict lookup per value)."""

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self)
        return code


def intern(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """(int32 codes, distinct values in first-seen order) of ``values``."""
    codes = Codes()
    out = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))
    return out, list(codes)


def compact(codes: np.ndarray, values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Renumber interned ``codes`` (a subset of rows) densely, in first-seen order of the subset.

    Returns (int32 codes, their values): the same as interning the subset's values."""
    if not codes.size:
        return np.zeros(0, dtype=np.int32), []
    used, first = np.unique(codes, return_index=True)
    order = np.argsort(first, kind="stable")
    remap = np.zeros(len(values), dtype=np.int32)
    remap[used[order]] = np.arange(used.size, dtype=np.int32)
    return remap[codes], [values[c] for c in used[order].tolist()]
