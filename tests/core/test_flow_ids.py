"""FlowIds (kineto/flow_ids.py): the ids of decoded rows kept compact, given back exactly."""

from __future__ import annotations

import pickle

from tracetui.kineto.flow_ids import FlowIds


def _round_trip(runs: list[list]) -> list:
    ids = FlowIds()
    for run in runs:
        ids.extend(list(run))
    return ids.to_list()


def test_ids_come_back_exactly_as_decoded():
    runs = [[None, 5, None, 2**40, -3], [], [None] * 4, ["0x1f", None, 7], [True, None, 1], [2**63, None],
            [-(2**63), 2**63 - 1, None], [1.5, None]]
    out = _round_trip(runs)
    want = [v for run in runs for v in run]
    assert out == want
    assert [type(v) for v in out] == [type(v) for v in want]  # True stays a bool, 2**63 an int


def test_integer_runs_are_compact_and_others_kept_as_lists():
    ids = FlowIds()
    ids.extend([None, 5, 2**40])
    ids.extend(["a", None])
    assert ids.runs[0][1].tolist() == [1, 2] and ids.runs[0][2].tolist() == [5, 2**40]
    assert ids.runs[1][1] is None and ids.runs[1][2] == ["a", None]
    assert len(ids) == 5


def test_a_workers_ids_are_appended_after_the_parents():
    parent, worker = FlowIds(), FlowIds()
    parent.extend([1, None, "x"])
    worker.extend([None, 9])
    worker.extend(["y", 10])
    parent.absorb(pickle.loads(pickle.dumps(worker)))  # what a decode worker sends
    assert parent.to_list() == [1, None, "x", None, 9, "y", 10]
