"""Test-wide settings: the parsed-trace cache lives in a temporary folder, never in ~/.cache."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def _session_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tracetui-cache")


@pytest.fixture(autouse=True)
def _isolated_cache_dir(_session_cache_dir, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(_session_cache_dir))
