"""The spent history objects dropped from the unpickler's memo while a snapshot is read
(tracetui/memsnap/prune.py): the columns equal those of the file read whole, objects are
dropped, and a pickle that names a dropped object again is read again without dropping."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from memsnap_gen import T0, write_scaled

from tracetui.analysis.memory import _in_order
from tracetui.memsnap import prune
from tracetui.memsnap.reader import SnapshotReader, read_snapshot
from tracetui.memsnap.unpickle import _probe_read, load_plain


def _columns(snap) -> dict:
    h = snap.history
    return {"history": [getattr(h, k).tolist() for k in ("device", "action", "addr", "size", "stream", "time_us",
                                                         "stack", "device_free", "lo")],
            "blocks": snap.blocks.stack.tolist(), "frames": [snap.frames.text(f) for f in range(snap.frames.n)],
            "stacks": snap.stacks.frames.tolist()}


@pytest.fixture
def pruners(monkeypatch):
    """Prune every 1,000 entries (the default waits for 262,144); the pruners made, in order."""
    made = []

    class Recorded(prune.MemoPruner):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(prune, "EVERY", 1000)
    from tracetui.memsnap import stream, unpickle

    monkeypatch.setattr(unpickle, "MemoPruner", Recorded)
    assert stream.MemoPruner is prune.MemoPruner
    return made


def test_this_interpreter_prunes():
    assert prune.pruning_works(_probe_read)


def test_a_pruned_read_equals_the_whole_read(tmp_path, pruners):
    """A generated history of 30,000 entries (a free's two entries share a frames list) and the
    H200 snapshot with Python stacks (a fresh ``compile_context`` string per entry)."""
    from shared_traces import SAMPLES

    write_scaled(tmp_path / "scaled.pickle", 30_000)
    for path in (tmp_path / "scaled.pickle", SAMPLES / "h200" / "cuda_transformer_mem_snapshot.pickle"):
        pruners.clear()
        reader = SnapshotReader()
        plain = load_plain(path, stream=reader)
        assert plain.streamed_device == 0
        assert len(pruners) == 1 and pruners[0].prunes >= 1 and pruners[0].dropped > 0, path
        assert pruners[0].unpickler is None and not pruners[0].dead  # nothing held after the load
        assert _columns(reader.read(str(path), plain)) == _columns(read_snapshot(str(path), load_plain(path)))
    # the generated file: prunes at 1,000 entries and at a quarter of the entries read so far,
    # the last one at 23,000 or later; what they drop: entry dicts and frames lists (two a free)
    pruners.clear()
    load_plain(tmp_path / "scaled.pickle", stream=SnapshotReader())
    assert 23_000 <= pruners[0].dropped <= 30_000 * 5 // 3


def test_an_object_named_again_after_it_was_dropped_is_read_again(tmp_path, pruners, monkeypatch):
    """A frames list named by the first entry and again by the last, 10,000 entries later
    (torch never does this): the pruned read misses it, the file is read again streamed
    without dropping anything, and the columns are the whole read's."""
    shared = [{"filename": "a.py", "line": 1, "name": "f"}]
    entries = [{"action": "alloc", "addr": 4096 * i, "size": 512, "stream": 0, "time_us": T0 + i,
                "frames": shared if i in (0, 9999) else [{"filename": "b.py", "line": i, "name": "g"}]}
               for i in range(10_000)]
    path = tmp_path / "again.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [entries]}, protocol=4))
    from tracetui.memsnap import unpickle

    reads, real = [], unpickle._unpickle

    def counted(*a, **k):
        try:
            return real(*a, **k)
        finally:
            reads.append(sys.exc_info()[0])

    monkeypatch.setattr(unpickle, "_unpickle", counted)
    reader = SnapshotReader()
    plain = load_plain(path, stream=reader)
    assert plain.streamed_device == 0
    assert reads == [prune.PruneMiss, None]  # the pruned read missed; the second, streamed, did not prune
    assert [p.prunes >= 1 for p in pruners] == [True]
    got = reader.read(str(path), plain)
    assert _columns(got) == _columns(read_snapshot(str(path), load_plain(path)))
    assert got.history.stack[0] == got.history.stack[9999] != got.history.stack[1]


def test_rows_in_order_are_found_without_sorting():
    """``_in_order`` agrees with np.lexsort (stable) on random small cases: ties, NaN times."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(0, 9))
        dev = np.sort(rng.integers(0, 2, n)).astype(np.int32)
        ts = np.sort(rng.integers(0, 3, n)).astype(np.float64)
        if rng.random() < 0.5:
            ts = rng.permutation(ts)
        if n and rng.random() < 0.1:
            ts[rng.integers(0, n)] = np.nan
        tie = np.arange(n) if rng.random() < 0.7 else rng.integers(0, 4, n)
        expect = bool((np.lexsort((tie, ts, dev)) == np.arange(n)).all())
        if _in_order(dev, ts, tie):
            assert expect, (dev, ts, tie)
        elif not np.isnan(ts).any():
            assert not expect, (dev, ts, tie)


def test_odd_items_in_a_pruned_history_are_counted_as_in_the_whole_read(tmp_path, pruners):
    """Items that are no dict (ints, lists, strings), entries without frames or with a frames
    value that is no list, and a shared ``compile_context``: dropped with the batch, counted in
    the warnings exactly as the whole read counts them."""
    frame = {"filename": "a.py", "line": 1, "name": "f"}
    shared = "N/A"
    history = []
    for i in range(6000):
        kind = i % 7
        if kind == 0:
            history.append(i)
        elif kind == 1:
            history.append([i, "x"])
        elif kind == 2:
            history.append({"action": "alloc", "addr": i, "size": 8, "stream": 0, "time_us": T0 + i})
        elif kind == 3:
            history.append({"action": "alloc", "addr": i, "size": 8, "stream": 0, "time_us": T0 + i, "frames": "no"})
        else:
            history.append({"action": "alloc", "addr": i, "size": 8, "stream": 0, "time_us": T0 + i,
                            "frames": [frame], "compile_context": shared if kind == 4 else f"c{i}"})
    path = tmp_path / "odd.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [history]}, protocol=4))
    reader = SnapshotReader()
    plain = load_plain(path, stream=reader)
    assert plain.streamed_device == 0 and pruners[0].prunes >= 1
    got, whole = reader.read(str(path), plain), read_snapshot(str(path), load_plain(path))
    assert _columns(got) == _columns(whole)
    assert [w.message for w in got.warnings] == [w.message for w in whole.warnings]
    assert any("not dicts" in w.message for w in got.warnings)
    assert "857 frames values that are not lists" in [w.message for w in got.warnings]  # i % 7 == 3: 857 of 6,000
