"""Stored summaries: ``tracetui summary`` answers an unchanged trace from the cache, and
computes again whenever the trace, an ET, the rules, ``--top`` or the entry changed."""

from __future__ import annotations

import os
import shutil

import orjson
import pytest
from shared_traces import kineto_path

import tracetui.store.traces as cache
from tracetui.cli import main
from tracetui.store import summaries as summary_cache

BERT = kineto_path("h100_bert_inference.json.gz")


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(d))
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "tests")
    monkeypatch.delenv("TRACETUI_CATEGORIES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return d


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "bert.json.gz"
    shutil.copyfile(BERT, p)
    return str(p)


@pytest.fixture
def loads(monkeypatch):
    """Paths that ``tracetui summary`` actually opened (cache or file)."""
    calls: list[list[str]] = []
    real = cache.load_cached

    def wrapped(paths, **kw):
        calls.append(list(paths))
        return real(paths, **kw)

    monkeypatch.setattr(cache, "load_cached", wrapped)
    return calls


def _summary(capsys, *args: str) -> dict:
    assert main(["summary", *args, "--json"]) == 0
    return orjson.loads(capsys.readouterr().out)


def test_second_run_answers_from_the_stored_summary(trace, loads, capsys, cache_home):
    first = _summary(capsys, trace, "--top", "5")
    assert loads == [[trace]]
    assert len(list(cache_home.glob("summary-*.json"))) == 1
    second = _summary(capsys, trace, "--top", "5")
    assert loads == [[trace]]  # not opened again
    assert second == first
    assert second["gpu_timeline"]["total_ms"] == pytest.approx(3.907825)
    assert second["kernel_categories"][0] == {**second["kernel_categories"][0], "category": "gemm", "count": 26}


def test_tables_from_the_stored_summary_match(trace, capsys):
    assert main(["summary", trace, "--top", "3"]) == 0
    computed = capsys.readouterr().out
    assert main(["summary", trace, "--top", "3"]) == 0
    assert capsys.readouterr().out == computed
    assert "aten::addmm" in computed and "3.908" in computed


def test_other_top_or_changed_file_computes_again(trace, loads, capsys):
    _summary(capsys, trace, "--top", "5")
    assert len(_summary(capsys, trace, "--top", "2")["kernels"]) == 2
    assert len(loads) == 2
    st = os.stat(trace)
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched: identity changed
    _summary(capsys, trace, "--top", "5")
    assert len(loads) == 3


def test_rules_are_part_of_the_key(trace, tmp_path, loads, capsys):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ncategory = "my_gemm"\npattern = "cutlass"\n')
    cats = {c["category"] for c in _summary(capsys, trace, "--rules", str(rules))["kernel_categories"]}
    assert "my_gemm" in cats
    rules.write_text('[[rule]]\ncategory = "other_gemm"\npattern = "cutlass"\n')
    cats = {c["category"] for c in _summary(capsys, trace, "--rules", str(rules))["kernel_categories"]}
    assert "other_gemm" in cats and "my_gemm" not in cats
    cats = {c["category"] for c in _summary(capsys, trace)["kernel_categories"]}
    assert "other_gemm" not in cats
    assert len(loads) == 3


def test_corrupt_entry_is_computed_again_and_rewritten(trace, loads, capsys, cache_home):
    first = _summary(capsys, trace)
    (entry,) = cache_home.glob("summary-*.json")
    entry.write_bytes(b'{"key": 1, "summ')
    assert _summary(capsys, trace) == first
    assert len(loads) == 2
    assert orjson.loads(entry.read_bytes())["summary"] == first


def test_no_cache_neither_reads_nor_writes(trace, loads, capsys, cache_home):
    _summary(capsys, trace, "--no-cache")
    _summary(capsys, trace, "--no-cache")
    assert len(loads) == 2
    assert not cache_home.exists() or not list(cache_home.iterdir())


def test_prune_removes_stored_summaries(trace, capsys, cache_home):
    _summary(capsys, trace)
    assert list(cache_home.glob("summary-*.json")) and list(cache_home.glob("*.ttc"))
    assert cache.clear() == 2
    assert not list(cache_home.iterdir())


def test_unreadable_input_is_not_keyed(tmp_path):
    assert summary_cache.summary_key([str(tmp_path / "missing.json")], None, 15) is None


def test_missing_trace_still_gets_the_one_line_error(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracetui: ") and "missing.json" in err and len(err.strip().splitlines()) == 1


def test_unwritable_cache_folder_still_prints_the_summary(trace, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(blocker))
    first = _summary(capsys, trace)
    assert first["gpu_timeline"]["total_ms"] == pytest.approx(3.907825)
    assert _summary(capsys, trace) == first  # computed again, same answer
