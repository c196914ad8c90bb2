"""Test-wide settings: the parsed-trace cache lives in a temporary folder, never in ~/.cache."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def _session_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tracetui-cache")


@pytest.fixture(autouse=True)
def _isolated_cache_dir(_session_cache_dir, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(_session_cache_dir))


def pytest_collection_modifyitems(config, items):
    """In the run on the oldest declared Textual (tests/ui/test_textual_floor.py), SVG snapshots
    are skipped: they are recorded with the newest Textual, whose rendering differs.  In a
    run that collects the floor test, the floor run starts now, beside the suite, and its check goes last."""
    import os

    from textual_floor import FLOOR_TEST, start_floor_run

    if os.environ.get("TRACETUI_TEXTUAL_FLOOR") == "1":
        skip = pytest.mark.skip(reason="snapshots are recorded with the newest Textual")
        for item in items:
            if "snap_compare" in getattr(item, "fixturenames", ()):
                item.add_marker(skip)
        return
    floor = [item for item in items if item.name == FLOOR_TEST]
    if floor:
        items[:] = [item for item in items if item.name != FLOOR_TEST] + floor
        start_floor_run(config._tmp_path_factory.getbasetemp())


def pytest_sessionfinish(session, exitstatus):
    from textual_floor import stop_floor_run

    stop_floor_run()
