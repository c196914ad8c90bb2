"""The decode's fast paths give exactly what the general code gives.

- timestamps: ``_parse_fixed_point`` (one msgspec call for plain ``digits[.digits]``
  tokens) against the general vectorised parser, on generated tokens and on every shared
  trace's ``ts`` tokens;
- interning: ``Columns`` interns the (ph, cat, name, pid, tid) tuple once per event and
  derives each column's codes; the codes and values equal interning each column alone;
- the cache writer stores the lists the build interned from its codes (equal lists back);
- nesting: depth and the nearest non-python ancestor by pointer doubling
  (``tree/propagate.py``) equal a walk up the parents.
"""

from __future__ import annotations

import random
from operator import attrgetter

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.shared_traces import KINETO
from tracetui.io.files import read_trace_bytes
from tracetui.io.interning import intern
from tracetui.kineto import timestamps as T
from tracetui.kineto.columns import INTERNED, Columns, Tally, allocate_columns
from tracetui.kineto.decode import _split_top
from tracetui.kineto.schema import Event


def _general(tokens):
    saved = T._parse_fixed_point
    T._parse_fixed_point = lambda toks: None
    try:
        return T.parse_timestamps(tokens)
    finally:
        T._parse_fixed_point = saved


def _same(tokens) -> bool:
    a, b = _general(tokens), T.parse_timestamps(tokens)
    assert np.array_equal(a[0], b[0]), tokens
    assert np.array_equal(a[1], b[1], equal_nan=True), tokens
    return T._parse_fixed_point(tokens) is not None


_token = st.builds(
    lambda ip, frac: str(ip).encode() + (b"." + frac.encode() if frac else b""),
    st.integers(0, 10**19),
    st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=11)))
_odd = st.sampled_from([b"", b"-1.5", b"1.5e3", b"0.000", b"01.5", b"1.2.3", b'"NaN"', b"9" * 19, b"7" * 18 + b".5"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_token, _token, _token, _odd), min_size=1, max_size=40))
def test_fixed_point_timestamps_equal_the_general_parser(tokens):
    _same(tokens)


def test_fixed_point_takes_the_usual_layouts():
    assert _same([b"1419247332972.313", b"1419247333291.7", b"1419247333308.73"])
    assert _same([b"1669783687352244", b"1669783687352245"])
    assert _same([b"1712195495519689.047", b"2.5", b"12"])
    assert not _same([b"0.000", b"1.5"])  # a leading zero: the general parser
    assert not _same([b"1.5", b""])  # a missing ts
    assert not _same([b"1" + b"0" * 18])  # 19 digits: _slow_parse's rule applies


@pytest.mark.parametrize("name", ["h100_bert_inference.json.gz", "mtia_inference_rank0.json.gz",
                                  "v100_ns_timestamps_fwdbwd.json.gz", "b200x8_eager.json.gz"])
def test_fixed_point_on_shared_traces(name):
    path = str(KINETO / name)
    raw, _, _ = _split_top(path, read_trace_bytes(path).data)
    tokens = list(map(attrgetter("ts"), msgspec.json.decode(raw, type=list[Event])))
    _same(tokens)


def _columns(evs: list[Event], chunk: int) -> Columns:
    cols = Columns(allocate_columns(len(evs)), None, Tally())
    for s in range(0, len(evs), chunk):
        cols.add(evs[s:s + chunk])
    return cols


@pytest.mark.parametrize("chunk", [50, 1000])
def test_tuple_interning_equals_per_column_interning(chunk):
    rng = random.Random(3)
    pool = [(rng.choice("XXXif"), rng.choice(["cpu_op", "kernel", "cuda_runtime"]), f"op{rng.randrange(30)}",
             rng.choice([1, 2, "Traces"]), rng.choice([7, 8, "stream 7"])) for _ in range(60)]
    # new tuples (and new values) keep appearing in later chunks
    evs = [Event(*rng.choice(pool[:5 + i // 60]), ts=msgspec.Raw(b"1")) for i in range(3000)]
    # a tail of names unique per event: the chunks there switch to per-column interning
    evs += [Event(ph="X", cat="cpu_op", name=f"unique{i}", pid=1, tid=7, ts=msgspec.Raw(b"2")) for i in range(2000)]
    head = _columns(evs[:3000], chunk)
    assert not head.per_column  # the tuple path took all of these
    cols = _columns(evs, chunk)
    assert cols.per_column
    dec = cols.finish()
    for f in INTERNED:
        codes, values = intern(list(map(attrgetter(f), evs[:3000])))
        got = getattr(head.finish(), f)
        assert got.values == values and np.array_equal(got.codes, codes), f
    for f in INTERNED:
        codes, values = intern(list(map(attrgetter(f), evs)))
        got = getattr(dec, f)
        assert got.values == values, f
        assert np.array_equal(got.codes, codes), f


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.booleans()), min_size=1, max_size=200))
def test_ancestor_counts_and_nearest_kept_ancestor_equal_a_walk(spec):
    from tracetui.tree.propagate import ancestor_counts, nearest_kept_ancestor

    # node i's parent is an earlier node (or none), as in the nesting walk
    parent = np.array([(r % (i + 1)) - 1 for i, (r, _) in enumerate(spec)], dtype=np.int64)
    skip = np.array([s for _, s in spec], dtype=bool)
    depth, kept = [], []
    for i in range(len(spec)):
        d, p = 0, parent[i]
        while p >= 0:
            d, p = d + 1, parent[p]
        depth.append(d)
        p = parent[i]
        while p >= 0 and skip[p]:
            p = parent[p]
        kept.append(p)
    assert ancestor_counts(parent).tolist() == depth
    assert nearest_kept_ancestor(parent, skip).tolist() == kept


@pytest.mark.parametrize("name", ["v100_ns_timestamps_fwdbwd.json.gz", "mtia_inference_rank0.json.gz",
                                  "large_integer_values.json.gz"])
def test_lists_the_build_interned_come_back_from_the_cache_equal(tmp_path, name):
    """The cache writer stores pids, tids and the flow lists from the build's codes."""
    from tracetui.kineto import load_kineto
    from tracetui.kineto.persist import load_trace_file, save_trace

    kt = load_kineto(str(KINETO / name))
    assert kt._list_codes and id(kt.pids) in kt._list_codes
    save_trace(kt, tmp_path / "t.ttc")
    back = load_trace_file(tmp_path / "t.ttc")
    pairs = [(kt.pids, back.pids), (kt.tids, back.tids)]
    pairs += [(getattr(kt.flows, f), getattr(back.flows, f)) for f in ("cat", "flow_id", "pid", "tid")]
    for fresh, cached in pairs:
        assert fresh == cached
        assert list(map(type, fresh)) == list(map(type, cached))
