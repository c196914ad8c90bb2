"""Helpers of the Nsight Systems export tests: writable copies of the shared export changed by
SQL (made in the test's tmp_path), and the raw file read by ``sqlite3`` -- the independent
side every fact is checked against."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
from shared_traces import nsys_path

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"


def raw(path: Path | str) -> sqlite3.Connection:
    """The export opened read-only for the test's own queries."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def query(path: Path | str, sql: str, params: tuple = ()) -> list[tuple]:
    con = raw(path)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def copy_with(tmp_path: Path, *statements: str, name: str = "copy.sqlite", source: Path | None = None) -> Path:
    """A copy of the shared export (or ``source``) with ``statements`` run on it."""
    out = tmp_path / name
    shutil.copyfile(source or nsys_path(), out)
    out.chmod(0o644)
    con = sqlite3.connect(out)
    try:
        for s in statements:
            con.execute(s)
        con.commit()
    finally:
        con.close()
    return out


def abs_ns(trace, events: np.ndarray) -> np.ndarray:
    """The events' start in ns of the export's clock (the model keeps µs from its origin)."""
    return trace.origin_us * 1000 + np.rint(trace.ts[events] * 1000).astype(np.int64)


def end_ns(trace, events: np.ndarray) -> np.ndarray:
    return abs_ns(trace, events) + np.rint(trace.dur[events] * 1000).astype(np.int64)
