"""The on-disk cache: a cached reopen is the same trace; stale, corrupt or unwritable
caches are handled without errors; ``use_cache=False`` writes nothing."""

from __future__ import annotations

import dataclasses
import gzip
import mmap
import os
import shutil

import numpy as np
import pytest
from cache_helpers import assert_same_trace, cache_home  # noqa: F401 - the autouse fixture: a cache folder per test
from shared_traces import ET_DIR, kineto_path

import tracetui.store.traces as cache
from tracetui import formats
from tracetui.cli import main as cli_main
from tracetui.kineto.persist import (
    CacheFormatError,
    load_trace_file,
    read_header,
    save_trace,
)


@pytest.fixture
def count_parses(monkeypatch):
    """Count real (non-cache) loads done by load_cached."""
    calls = []
    real = formats.load

    def wrapped(path, progress=None, kind=None):
        calls.append(path)
        return real(path, progress, kind)

    monkeypatch.setattr(formats, "load", wrapped)
    return calls


TRACES = ["mi250_minitoy_train.json.gz", "h100_bert_inference.json.gz", "amd_vllm_hipgraph.json.gz",
          "v100_old_flow_format_cudagraph.json.gz", "large_integer_values.json.gz",
          "old_categories_inference.json.gz", "cpu_only_small.json.gz"]


@pytest.mark.parametrize("name", TRACES)
def test_cached_reload_is_identical(name, cache_home, count_parses):
    p = str(kineto_path(name))
    fresh = cache.load_cached([p], use_cache=True).kineto
    assert len(count_parses) == 1 and cache.entry_path(p).exists()
    again = cache.load_cached([p], use_cache=True).kineto
    assert len(count_parses) == 1  # served from the cache, no parse
    assert isinstance(again.args_blob, (mmap.mmap, bytes))
    assert again.path == p
    assert_same_trace(fresh, again)


def test_cached_facts_hold_on_graph_trace():
    # amd_vllm_hipgraph: 25 hipGraphLaunch owning their kernels (MANIFEST), same after a cached reopen
    p = str(kineto_path("amd_vllm_hipgraph.json.gz"))
    cache.load_cached([p])
    kt = cache.load_cached([p]).kineto
    assert kt.gpu_stats.graph_launches == 25
    assert kt.gpu_stats.graph_kernels > 25
    g = np.flatnonzero(kt.launch_of >= 0)
    assert all(kt.correlation[kt.launch_of[i]] == kt.correlation[i] for i in g[:200].tolist())


def test_truncated_trace_is_cached_with_its_warnings(tmp_path, count_parses):
    raw = gzip.decompress(kineto_path("h100_bert_inference.json.gz").read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: int(len(raw) * 0.7)])
    fresh = cache.load_cached([str(p)]).kineto
    assert any(w.kind == "truncated" for w in fresh.warnings) and fresh.bytes_lost > 0
    again = cache.load_cached([str(p)]).kineto
    assert len(count_parses) == 1
    assert_same_trace(fresh, again)
    assert again.bytes_lost == fresh.bytes_lost


def test_et_pair_reopened_from_the_cache(count_parses):
    folder = ET_DIR / "torch_cpu_pair"
    paths = [str(folder / "et.json.gz"), str(folder / "kineto.json.gz")]
    a = cache.load_cached(paths)
    b = cache.load_cached(paths)
    assert len(count_parses) == 2  # each file once: the reopen reads both from the cache
    assert b.et is not None and b.link is not None
    assert_same_trace(a.kineto, b.kineto)
    # FORMATS.md: all 3,200 ops with rf_id != 0 link, by rf_id
    assert dataclasses.asdict(a.link.stats) == dataclasses.asdict(b.link.stats)
    assert b.link.stats.linked == 3200 and b.link.stats.method == "rf_id"


def test_stale_entry_rebuilt(tmp_path, count_parses):
    p = tmp_path / "t.json.gz"
    shutil.copyfile(kineto_path("mi250_minitoy_train.json.gz"), p)
    first = cache.load_cached([str(p)]).kineto
    cache.load_cached([str(p)])
    assert len(count_parses) == 1
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # touch
    cache.load_cached([str(p)])
    assert len(count_parses) == 2
    cache.load_cached([str(p)])
    assert len(count_parses) == 2  # rewritten entry is valid again
    # different content at the same path (and a restored mtime): rebuilt with the new content
    shutil.copyfile(kineto_path("cpu_only_small.json.gz"), p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    kt = cache.load_cached([str(p)]).kineto
    assert len(count_parses) == 3
    assert kt.n_events != first.n_events
    assert kt.n_events == cache.load_cached([str(p)], use_cache=False).kineto.n_events


def test_version_or_code_change_rebuilds(monkeypatch, count_parses):
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    cache.load_cached([p])
    monkeypatch.setattr(cache, "__version__", "999.0")
    cache.load_cached([p])
    assert len(count_parses) == 2
    monkeypatch.setenv("TRACETUI_CODE_FINGERPRINT", "other-code")
    cache.load_cached([p])
    assert len(count_parses) == 3
    assert read_header(cache.entry_path(p))["extra"]["code"] == "other-code"


@pytest.mark.parametrize("damage", ["garbage", "truncate", "empty", "header", "column", "size"])
def test_corrupt_entry_rebuilt(damage, count_parses):
    p = str(kineto_path("h100_bert_inference.json.gz"))
    fresh = cache.load_cached([p]).kineto
    entry = cache.entry_path(p)
    data = bytearray(entry.read_bytes())
    if damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = bytearray()
    elif damage == "header":
        data[20:40] = b"}}}}}}}}}}{{{{{{{{{{"
    elif damage == "column":
        # make a child_start section inconsistent by rewriting its offset in the header
        hdr = read_header(entry)
        k = hdr["fields"]["child_start"]["$a"]
        off = hdr["sections"][k]["off"]
        bad = np.full(hdr["sections"][k]["shape"][0], 7, dtype=np.int64).tobytes()
        data[off:off + len(bad)] = bad
    elif damage == "size":
        data += b"\0" * 100
    entry.write_bytes(bytes(data))
    with pytest.raises(CacheFormatError):
        load_trace_file(entry)
    again = cache.load_cached([p]).kineto  # no error: rebuilt
    assert len(count_parses) == 2
    assert_same_trace(fresh, again)
    load_trace_file(entry)  # and the entry was rewritten


def test_no_cache_writes_nothing(cache_home, count_parses):
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    cache.load_cached([p], use_cache=False)
    cache.load_cached([p], use_cache=False)
    assert len(count_parses) == 2
    assert not cache_home.exists()
    assert cli_main(["info", p, "--no-cache"]) == 0
    assert not cache_home.exists()
    assert cli_main(["info", p]) == 0
    assert cache.entry_path(p).exists()


def test_unwritable_cache_dir_still_loads(tmp_path, monkeypatch, count_parses):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(blocker / "cache"))
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    a = cache.load_cached([p]).kineto
    b = cache.load_cached([p]).kineto
    assert len(count_parses) == 2
    assert_same_trace(a, b)
    assert cache.write_cached(p, a) is False


def test_source_fingerprint_hashes_every_core_source_file(monkeypatch, tmp_path):
    """The fingerprint covers whole folders of the package (all but ui/): a file added or
    moved anywhere in the core changes it; a UI file does not."""
    import shutil
    from pathlib import Path

    monkeypatch.delenv("TRACETUI_CODE_FINGERPRINT")
    fp = cache.code_fingerprint()
    assert fp == cache._source_fingerprint() and len(fp) == 24
    copy = tmp_path / "tracetui"
    shutil.copytree(Path(cache.__file__).parent.parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "__file__", str(copy / "store" / "traces.py"))
    assert cache.source_fingerprint() == fp
    (copy / "ui" / "new_widget.py").write_text("x = 1\n")
    (copy / "cli" / "new_command.py").write_text("x = 1\n")
    assert cache.source_fingerprint() == fp
    (copy / "kineto" / "schema.py").rename(copy / "kineto" / "schema2.py")
    moved = cache.source_fingerprint()
    assert moved != fp
    (copy / "tree" / "new_algorithm.py").write_text("x = 1\n")
    assert cache.source_fingerprint() != moved


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("TRACETUI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "tracetui"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tracetui"


def test_bad_input_errors_unchanged(tmp_path):
    from tracetui.errors import TraceFileError, TraceFormatError

    with pytest.raises(TraceFileError):
        cache.load_cached([str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("hello")
    with pytest.raises(TraceFormatError):
        cache.load_cached([str(bad)])


def test_prune_removes_least_recent(cache_home):
    cache_home.mkdir(parents=True)
    for k in range(4):
        f = cache_home / f"kineto-{k}.ttc"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1000 + k, 1000 + k))
    assert cache.prune(max_bytes=2500) == 2
    assert sorted(f.name for f in cache_home.iterdir()) == ["kineto-2.ttc", "kineto-3.ttc"]
    assert cache.clear() == 2


def test_prune_looks_at_the_folder_only_when_due(cache_home, monkeypatch):
    # a look at the folder reads every entry's size: once per write made a job's open
    # quadratic in its ranks; a process looks on its first write, then when its own writes
    # may have passed the cap, or a sixteenth of it (other processes write too)
    cache_home.mkdir(parents=True)
    monkeypatch.setenv("TRACETUI_CACHE_MAX_MB", "0.016")  # 16,000 bytes: a look again after 1,000
    looks = []
    real = cache.prune
    monkeypatch.setattr(cache, "prune", lambda *a, **k: looks.append(1) or real(*a, **k))

    def write(name: str, size: int) -> int:
        f = cache_home / name
        f.write_bytes(b"x" * size)
        return cache.prune_if_due(f)

    assert write("a.ttc", 400) == 0 and len(looks) == 1  # the first write: a look
    assert write("b.ttc", 400) == 0 and len(looks) == 1  # 400 bytes written since: no look
    assert write("c.ttc", 700) == 0 and len(looks) == 2  # 1,100 > 16,000 / 16: a look
    old = cache_home / "a.ttc"
    os.utime(old, (1000, 1000))
    assert write("d.ttc", 14_800) == 1 and len(looks) == 3  # 16,300 past the cap: a look, the oldest removed
    assert not old.exists() and (cache_home / "d.ttc").exists()


def test_save_refuses_unknown_values(tmp_path):
    kt = cache.load_cached([str(kineto_path("mi250_minitoy_train.json.gz"))], use_cache=False).kineto
    kt.metadata = dict(kt.metadata, odd=object())
    with pytest.raises(CacheFormatError):
        save_trace(kt, tmp_path / "x.ttc")
    assert not list(tmp_path.glob("*.ttc"))


# ------------------------------------------------------------------ parsing in a child process
def test_child_process_load_is_identical(monkeypatch, count_parses):
    monkeypatch.setenv("TRACETUI_LOAD_SUBPROCESS", "1")
    p = str(kineto_path("h100_bert_inference.json.gz"))
    seen = []
    kt = cache.load_cached([p], progress=lambda m, f: seen.append(m)).kineto
    assert count_parses == []  # parsed by the child, mapped here
    assert any(m.endswith(": building") for m in seen) and any(m.endswith("writing cache") for m in seen)
    assert cache.entry_path(p).exists() and kt.path == p
    assert_same_trace(cache.load_cached([p], use_cache=False).kineto, kt)


def test_child_process_runs_this_code_whatever_the_working_directory(tmp_path, monkeypatch, count_parses):
    """The child imports the tracetui of the process that starts it, not one in the working
    directory (``python -c`` puts the working directory first on its path: a benchmark run
    from one checkout's root timed another checkout's parse with its own code)."""
    other = tmp_path / "tracetui"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('the tracetui of the working directory')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRACETUI_LOAD_SUBPROCESS", "1")
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    kt = cache.load_cached([p]).kineto
    assert count_parses == []  # parsed by the child (it falls back to a load here when it fails)
    assert kt.n_events


def test_child_process_bad_input_raises_the_same_error(tmp_path, monkeypatch, count_parses):
    from tracetui.errors import TraceFormatError

    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": 5}')
    with pytest.raises(TraceFormatError) as direct:
        cache.load_cached([str(bad)], use_cache=False)
    monkeypatch.setenv("TRACETUI_LOAD_SUBPROCESS", "1")
    with pytest.raises(TraceFormatError) as child:
        cache.load_cached([str(bad)])
    assert str(child.value) == str(direct.value)
    assert len(count_parses) == 1  # only the use_cache=False load ran here


def test_child_process_without_writable_cache(tmp_path, monkeypatch, count_parses):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setenv("TRACETUI_LOAD_SUBPROCESS", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    kt = cache.load_cached([p]).kineto
    assert count_parses == []
    assert list((tmp_path / "tmp").iterdir()) == []  # the hand-over file is gone once mapped
    assert_same_trace(cache.load_cached([p], use_cache=False).kineto, kt)


def test_sniff_and_threshold(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACETUI_LOAD_SUBPROCESS", raising=False)
    small = str(kineto_path("mi250_minitoy_train.json.gz"))
    kind = formats.detect(small)
    assert kind == formats.FileKind.KINETO and kind.spec.child_process
    et = str(ET_DIR / "torch_cpu_pair" / "et.json.gz")
    assert not cache._use_subprocess(et, formats.detect(et))  # the ET format is never parsed in a child
    assert not cache._use_subprocess(small, kind)  # 7 KB: loaded in-process
    monkeypatch.setenv("TRACETUI_SUBPROCESS_MB", "0")
    assert cache._use_subprocess(small, kind)
    monkeypatch.setenv("TRACETUI_LOAD_SUBPROCESS", "0")
    assert not cache._use_subprocess(small, kind)
