"""One config module (``tracetui/config.py``): where config and cache live, every ``TRACETUI_*``
variable listed with its meaning (and in the README), and one TOML loader for the rule files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracetui import config
from tracetui.analysis.categories import get_categorizer, user_rules_location
from tracetui.analysis.devices import get_device_table, user_devices_location
from tracetui.errors import TraceFileError, TraceFormatError

REPO = Path(__file__).resolve().parents[2]


def test_every_tracetui_variable_read_anywhere_is_listed_and_in_the_readme():
    used = set()
    for folder in ("tracetui", "tests", "bench", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            used |= set(re.findall(r"\bTRACETUI_[A-Z_]+\b", path.read_text()))
    used.discard("TRACETUI_")
    assert used <= set(config.ENV_VARS), sorted(used - set(config.ENV_VARS))
    readme = (REPO / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in config.ENV_VARS), [n for n in config.ENV_VARS if n not in readme]
    with pytest.raises(KeyError, match="not a documented"):
        config.env("TRACETUI_" + "NO_SUCH_THING")  # spelled in two pieces: not a variable


def test_folders_follow_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("TRACETUI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert config.config_dir() == tmp_path / "cfg" / "tracetui"
    assert config.cache_dir() == tmp_path / "cache" / "tracetui"
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "mine"))
    assert config.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("TRACETUI_CACHE_MAX_MB", "12.5")
    assert config.env_megabytes("TRACETUI_CACHE_MAX_MB", 4096) == 12_500_000  # SI, like every byte count


def test_rule_files_are_found_in_the_config_folder_or_by_variable(tmp_path, monkeypatch):
    folder = tmp_path / "cfg" / "tracetui"
    folder.mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert user_rules_location() is None and user_devices_location() is None
    (folder / "categories.toml").write_text('[[rule]]\ncategory = "mine"\npattern = "^my_kernel"\n')
    (folder / "devices.toml").write_text('[[device]]\nname = "Mine"\nmatch = "MyGPU"\nmemory_gbps = 1000\n')
    assert user_rules_location() == folder / "categories.toml"
    assert get_categorizer().categorize("my_kernel_v2", "kernel") == "mine"
    assert get_device_table().find("MyGPU 9000").name == "Mine"
    monkeypatch.setenv("TRACETUI_CATEGORIES", str(tmp_path / "missing.toml"))
    with pytest.raises(TraceFileError, match="missing.toml: category rules file not found"):
        get_categorizer()


def test_one_toml_loader_gives_one_line_errors(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_bytes(b"a = \xff\n")
    with pytest.raises(TraceFormatError, match=r"x\.toml: not valid TOML: not UTF-8 text"):
        config.load_toml(bad, "rules file")
    bad.write_text("a = [")
    with pytest.raises(TraceFormatError, match=r"x\.toml: not valid TOML") as err:
        config.load_toml(bad, "rules file")
    assert "\n" not in str(err.value)
    data, name = config.load_packaged_toml("tracetui.analysis", "default_categories.toml")
    assert name == "<tracetui>/default_categories.toml" and data["rule"]
