"""The snapshot generators of the tests and the bench (``tests/memsnap_gen.py``) write what
they say: the streamed writer's file is a valid pickle (read here with the test's own walker and
with ``pickle.loads``, our own file) of the layout the builder makes, and tracetui reads the
numbers it reports."""

from __future__ import annotations

import pickle
from collections import Counter

from memsnap_count import count
from memsnap_gen import write_scaled
from snapshot_unpickle import read_snapshot

from tracetui.analysis.memory import memory_model
from tracetui.analysis.memory_peak import peak
from tracetui.session import load_trace


def test_the_streamed_writer_writes_a_snapshot(tmp_path):
    path = tmp_path / "scaled.pickle"
    info = write_scaled(path, 4000, frames_per_stack=6, unique_frames=300, stacks=40)
    snap = read_snapshot(path)
    assert snap == pickle.loads(path.read_bytes())  # our own file: the stdlib reads it the same
    entries = snap["device_traces"][0]
    assert len(entries) == info["entries"]
    acts = Counter(e["action"] for e in entries)
    assert acts["alloc"] == acts["free_completed"] == acts["free_requested"]
    c = count(snap)
    assert (c["peak"], c["end_allocated"], c["start_allocated"]) == (info["peak"], 0, 0)
    # shared as torch shares them: frame dicts across entries, one frames list per free pair
    frees = [e for e in entries if e["action"].startswith("free")]
    assert all(a["frames"] is b["frames"] for a, b in zip(frees[::2], frees[1::2]))
    assert len({id(f) for e in entries for f in e["frames"]}) <= 300
    m = memory_model(load_trace(path))
    assert peak(m, m.devices[0]).value == info["peak"]
