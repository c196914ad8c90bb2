"""The parsed Execution Trace is cached like a Kineto trace (issue 23): a cached reopen of
an ET + Kineto pair parses neither file and runs no link, and gives the same arrays, node
details and link; a damaged ET entry is found by its checksums, an edited ET is parsed
again, a cut ET keeps its warnings."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from shared_traces import ET_DIR
from test_cache import assert_same_trace, cache_home  # noqa: F401 - the autouse fixture: a cache folder per test

import tracetui.et.loader as et_loader
import tracetui.kineto.loader as kineto_loader
import tracetui.session as session_mod
import tracetui.store.links as links_mod
import tracetui.store.traces as cache
from tracetui.cli import main as cli_main
from tracetui.et.trace import STATE
from tracetui.io.colfile import read_header

#: the shared pairs without Record function ids (issue 23's done-when), and one with them (the
#: two marked slow take 2-3 s: every node's details compared three ways)
PAIRS = [pytest.param("param_linear_cuda_pair", marks=pytest.mark.slow), "param_dlrm_rank0_cuda_pair",
         "hta_simple_add_cuda_pair", pytest.param("torch_cpu_pair", marks=pytest.mark.slow)]


@pytest.fixture
def calls(monkeypatch):
    """Counts of parses (per kind) and of link runs, whoever calls them."""
    seen: dict[str, int] = {"kineto": 0, "et": 0, "link": 0}
    real_kineto, real_et, real_link = kineto_loader.load_kineto, et_loader.load_et, links_mod.link_et_kineto

    def kineto(*a, **k):
        seen["kineto"] += 1
        return real_kineto(*a, **k)

    def et(*a, **k):
        seen["et"] += 1
        return real_et(*a, **k)

    def link(*a, **k):
        seen["link"] += 1
        return real_link(*a, **k)

    monkeypatch.setattr(kineto_loader, "load_kineto", kineto)
    monkeypatch.setattr(et_loader, "load_et", et)
    for mod in (links_mod, session_mod, cache):
        monkeypatch.setattr(mod, "link_et_kineto", link)
    return seen


def _same_value(x, y) -> bool:
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
    return type(x) is type(y) and x == y


def assert_same_et(a, b) -> None:
    """Every attribute and every node's details are the same."""
    for k in STATE:
        if k == "_raw":
            assert bytes(a._raw.blob[:]) == bytes(b._raw.blob[:])
            assert _same_value(a._raw.offsets, b._raw.offsets)
        else:
            assert _same_value(getattr(a, k), getattr(b, k)), k
    assert a.path == b.path and len(a) == len(b)
    for pos in range(len(a)):
        assert a.node(pos) == b.node(pos)
        assert a.input_shapes_types(pos) == b.input_shapes_types(pos)


@pytest.mark.parametrize("folder", PAIRS)
def test_cached_reopen_of_a_pair_parses_and_links_nothing(folder, calls):
    paths = [str(ET_DIR / folder / "et.json.gz"), str(ET_DIR / folder / "kineto.json.gz")]
    first = cache.load_cached(paths)
    assert calls == {"kineto": 1, "et": 1, "link": 1}
    names = sorted(p.name.split("-")[0] for p in cache.cache_dir().iterdir())
    assert names == ["link", "trace", "trace"]
    again = cache.load_cached(paths)
    assert calls == {"kineto": 1, "et": 1, "link": 1}  # the reopen read three cache entries, nothing else
    assert_same_et(first.et, again.et)
    assert_same_trace(first.kineto, again.kineto)
    for name in ("et_to_kineto", "kineto_to_et", "found_by"):
        assert _same_value(getattr(first.link, name), getattr(again.link, name))
    assert again.link.stats == first.link.stats and again.link.warnings == first.link.warnings
    # the same answers as a load without the cache
    fresh = cache.load_cached(paths, use_cache=False)
    assert_same_et(fresh.et, again.et)
    assert again.link.stats == fresh.link.stats


def test_param_linear_links_counted_by_method_after_a_cached_reopen(calls):
    # the counts of test_link_evidence.py (159 ET ops with a unique (name, Sequence number)
    # key in both files, 769 more by order, all 928 ops of the 931 nodes) after a cached reopen
    folder = ET_DIR / "param_linear_cuda_pair"
    paths = [str(folder / "et.json.gz"), str(folder / "kineto.json.gz")]
    cache.load_cached(paths)
    again = cache.load_cached(paths)
    assert len(again.et) == 931 and calls["link"] == 1
    s = again.link.stats
    assert (s.method, s.by_sequence, s.by_order, s.linked, s.et_ops) == ("sequence", 159, 769, 928, 928)
    assert again.link.found_by_name(int(np.flatnonzero(again.link.found_by == 2)[0])) == "sequence number"


def test_an_et_alone_reopens_from_the_cache(calls, capsys):
    p = str(ET_DIR / "et_only" / "resnet_1gpu_schema_1.0.3.json.gz")
    assert cli_main(["info", p]) == 0
    first = capsys.readouterr().out
    assert cli_main(["info", p]) == 0
    assert capsys.readouterr().out == first
    assert calls["et"] == 1
    assert read_header(cache.entry_path(p))["kind"] == "et"


def test_a_damaged_et_entry_is_found_or_harmless():
    p = str(ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz")
    fresh = cache.load_cached([p]).et
    entry = cache.entry_path(p)
    good = entry.read_bytes()
    header = read_header(entry)
    sections = [(s["off"], s["off"] + s["nbytes"]) for s in header["sections"] if s["nbytes"]]
    spots = sorted(set(range(0, 64)) | set(np.linspace(64, len(good) - 1, 300).astype(int).tolist()))
    found = 0
    for at in spots:
        data = bytearray(good)
        data[at] ^= 0xFF
        entry.write_bytes(data)
        damaged: list = []
        et = cache.read_cached(p, damaged=damaged)
        if et is None:
            assert len(damaged) == 1 and damaged[0].kind == "cache" and not entry.exists(), at
            found += 1
            continue
        assert_same_et(fresh, et)
        assert not any(a <= at < b for a, b in sections), at  # only padding is outside the checksums
    assert found >= 0.5 * len(spots)
    # a damaged entry: the trace is read again, and the user is told
    data = bytearray(good)
    data[sections[0][0]] ^= 0xFF
    entry.write_bytes(data)
    linked = cache.load_cached([p])
    assert [w.kind for w in linked.warnings] == ["cache"]
    assert_same_et(fresh, linked.et)


def test_an_edited_et_is_parsed_again(tmp_path, calls):
    raw = gzip.decompress((ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz").read_bytes())
    p = tmp_path / "et.json"
    p.write_bytes(raw)
    st = os.stat(p)
    first = cache.load_cached([str(p)]).et
    assert "aten::uniform_" in first.names
    # same size, same mtime, one name changed
    p.write_bytes(raw.replace(b'"aten::uniform_"', b'"aten::uniformX"', 1))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = cache.load_cached([str(p)]).et
    assert calls["et"] == 2 and "aten::uniformX" in again.names


def test_a_cut_et_is_cached_with_its_warnings(tmp_path, calls):
    raw = gzip.decompress((ET_DIR / "param_dlrm_rank0_cuda_pair" / "et.json.gz").read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: len(raw) // 2])
    first = cache.load_cached([str(p)]).et
    assert [w.kind for w in first.warnings][:1] == ["truncated"]
    again = cache.load_cached([str(p)]).et
    assert calls["et"] == 1
    assert_same_et(first, again)
