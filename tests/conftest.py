"""Test-wide settings: the parsed-trace cache lives in a temporary folder, never in ~/.cache, and no
user config is read; markers (slow, snapshot, whole_suite, quick)."""

from __future__ import annotations

import pytest

_USER_CONFIG_VARIABLES = ("TRACETUI_CONFIG", "TRACETUI_CATEGORIES", "TRACETUI_DEVICES", "TRACETUI_FINDINGS")


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory):
    """Set for the whole session before any fixture runs: module- and session-scoped fixtures
    (an opened job, a loaded trace) are made before the function-scoped ones below, and must not
    read or write the user's ~/.cache/tracetui (entries of other tracetui versions live there)."""
    import os

    folder = tmp_path_factory.mktemp("tracetui-cache")
    saved = {name: os.environ.get(name) for name in ("TRACETUI_CACHE_DIR", "XDG_CONFIG_HOME", *_USER_CONFIG_VARIABLES)}
    os.environ["TRACETUI_CACHE_DIR"] = str(folder)
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.getbasetemp() / "no-user-config")
    for name in _USER_CONFIG_VARIABLES:
        os.environ.pop(name, None)
    yield folder
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _isolated_cache_dir(_session_cache_dir, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(_session_cache_dir))


@pytest.fixture(autouse=True)
def _no_background_work(monkeypatch):
    """The browser computes a screen's tables when the screen is first opened, not in the
    background after every open (tests that check the background work set it back)."""
    monkeypatch.setenv("TRACETUI_BACKGROUND", "0")


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory, monkeypatch):
    """The user's own config (theme, keymap, category rules, device peaks, findings rules) never reaches a test:
    an empty config folder, and none of the variables that name config files."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-user-config"))
    for name in _USER_CONFIG_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Markers, set before ``-m`` selects: ``snapshot`` on the SVG snapshot tests, ``whole_suite``
    on the floor test, and ``quick`` on every test that is neither of them nor ``slow``
    (``pytest -m quick``: the one-minute loop).  In the run on the oldest declared Textual
    (tests/ui/test_textual_floor.py), SVG snapshots are skipped: they are recorded with the
    newest Textual, whose rendering differs."""
    import os

    from textual_floor import FLOOR_TEST

    for item in items:
        if "snap_compare" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snapshot)
        if item.name == FLOOR_TEST:
            item.add_marker(pytest.mark.whole_suite)
        if not any(item.get_closest_marker(m) for m in ("slow", "snapshot", "whole_suite")):
            item.add_marker(pytest.mark.quick)
    if os.environ.get("TRACETUI_TEXTUAL_FLOOR") == "1":
        skip = pytest.mark.skip(reason="snapshots are recorded with the newest Textual")
        for item in items:
            if "snap_compare" in getattr(item, "fixturenames", ()):
                item.add_marker(skip)


class _FloorRun:
    """Once ``-m``/``-k`` have selected the tests: in a run that still holds the floor test,
    the floor run starts now, beside the suite, and its check goes last (a quick or filtered
    run that leaves it out starts nothing)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        import os

        from textual_floor import FLOOR_TEST, start_floor_run, starts_the_run

        if os.environ.get("TRACETUI_TEXTUAL_FLOOR") == "1":
            return
        floor = [item for item in items if item.name == FLOOR_TEST]
        if floor:
            items[:] = [item for item in items if item.name != FLOOR_TEST] + floor
            if starts_the_run():
                start_floor_run(config._tmp_path_factory.getbasetemp())


def pytest_configure(config):
    """Under pytest-xdist, the controller names the run before its workers start, so it
    can find (and stop) the floor run they start; see tests/textual_floor.py."""
    import os

    config.pluginmanager.register(_FloorRun(), "tracetui-floor-run")
    import uuid

    from textual_floor import XDIST_RUN_ID

    if os.environ.get("TRACETUI_TEXTUAL_FLOOR") == "1":
        return
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        if config.option.testrunuid is None:
            config.option.testrunuid = uuid.uuid4().hex
        os.environ[XDIST_RUN_ID] = config.option.testrunuid


def pytest_sessionfinish(session, exitstatus):
    """The process that ends last (xdist's controller, or pytest without xdist) stops a
    floor run still going; a worker leaves it to the worker that waits for it."""
    import os

    if hasattr(session.config, "workerinput") or os.environ.get("TRACETUI_TEXTUAL_FLOOR") == "1":
        return
    from textual_floor import stop_floor_run

    stop_floor_run(session.config._tmp_path_factory.getbasetemp())
