"""What the cache tests share (tests/core/test_cache.py, test_robust_cache.py): a cache
folder per test with a pinned code fingerprint, and the check that a cached reopen is the same
trace (every column, lazy args, tree, python-free view, lookups)."""

from __future__ import annotations

import dataclasses
import mmap

import numpy as np
import pytest

from tracetui.kineto import KinetoTrace


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(d))
    # parent and child processes must agree on the loader fingerprint even while sources change
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "tests")
    return d



def _same_value(x, y) -> bool:
    if isinstance(x, np.ndarray):
        return (isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
    if isinstance(x, (bytes, mmap.mmap)) or isinstance(y, mmap.mmap):
        return bytes(x[:]) == bytes(y[:])
    if dataclasses.is_dataclass(x):
        return type(x) is type(y) and all(_same_value(getattr(x, f.name), getattr(y, f.name))
                                          for f in dataclasses.fields(x))
    return type(x) is type(y) and x == y


def assert_same_trace(a: KinetoTrace, b: KinetoTrace) -> None:
    for f in dataclasses.fields(KinetoTrace):
        if f.name.startswith("_") or f.name == "warnings":
            continue
        assert _same_value(getattr(a, f.name), getattr(b, f.name)), f.name
    # behaviour on top of the columns: lazy args, tree, python-free view, lookups
    for i in np.linspace(0, a.n_events - 1, num=min(a.n_events, 50)).astype(int).tolist():
        assert a.args(i) == b.args(i)
        assert a.name(i) == b.name(i)
    for lane in a.lanes:
        assert np.array_equal(a.children(lane.node), b.children(lane.node))
        assert np.array_equal(a.nopy_children(lane.node), b.nopy_children(lane.node))
    assert a.kind_counts() == b.kind_counts() and a.category_counts() == b.category_counts()
    # a note that the cached copy was damaged (and the trace read again) is the only difference
    assert [w for w in a.warnings if w.kind != "cache"] == [w for w in b.warnings if w.kind != "cache"]
    assert a.gpu_stats == b.gpu_stats
