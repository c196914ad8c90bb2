"""load_et on bad, truncated and pathological input: one-line errors or warnings, no crash."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tracetui.errors import TraceFileError, TraceFormatError, WrongTraceKindError
from tracetui.et import load_et

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
ET = TRACES / "et"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _one_line(exc: BaseException, path: Path) -> None:
    msg = str(exc)
    assert "\n" not in msg and str(path) in msg


def test_not_json(tmp_path: Path) -> None:
    p = _write(tmp_path, "trace.json", b"this is not json")
    with pytest.raises(TraceFormatError, match=r"not valid JSON") as info:
        load_et(p)
    _one_line(info.value, p)
    assert " at byte 4: " in str(info.value)  # "t" could start "true": "this" fails at byte 4


def test_empty_and_whitespace_files(tmp_path: Path) -> None:
    for name, data in (("empty.json", b""), ("blank.json", b" \n\t "), ("empty.json.gz", gzip.compress(b""))):
        p = _write(tmp_path, name, data)
        with pytest.raises(TraceFormatError, match="is empty|no JSON") as info:
            load_et(p)
        _one_line(info.value, p)


def test_missing_file() -> None:
    with pytest.raises(TraceFileError, match="no such file"):
        load_et(ET / "does_not_exist.json")


def test_kineto_trace_is_the_wrong_kind() -> None:
    p = TRACES / "kineto" / "cpu_only_small.json.gz"
    with pytest.raises(WrongTraceKindError, match="Kineto") as info:
        load_et(p)
    _one_line(info.value, p)


def test_truncated_kineto_trace_is_the_wrong_kind(tmp_path: Path) -> None:
    data = gzip.open(TRACES / "kineto" / "cpu_only_small.json.gz").read()
    cut = data.index(b'"traceEvents"') + 2000  # inside the events
    p = _write(tmp_path, "k.json", data[:cut])
    with pytest.raises(WrongTraceKindError, match="Kineto"):
        load_et(p)


def test_bare_array_of_events_is_the_wrong_kind(tmp_path: Path) -> None:
    p = _write(tmp_path, "events.json", b'[{"ph": "X", "name": "a", "ts": 1, "dur": 2}]')
    with pytest.raises(WrongTraceKindError):
        load_et(p)
    p = _write(tmp_path, "numbers.json", b"[1, 2, 3]")
    with pytest.raises(TraceFormatError, match="JSON array"):
        load_et(p)


def test_object_without_nodes_and_nodes_without_ids(tmp_path: Path) -> None:
    p = _write(tmp_path, "a.json", b'{"schema": "1.0.1", "pid": 3}')
    with pytest.raises(TraceFormatError, match="no nodes list"):
        load_et(p)
    p = _write(tmp_path, "b.json", b'{"schema": "1.0.1", "nodes": [{"name": "x"}]}')
    with pytest.raises(TraceFormatError, match=r"id") as info:
        load_et(p)
    assert "nodes[0]" in str(info.value)
    _one_line(info.value, p)
    p = _write(tmp_path, "c.json", b'{"schema": "1.0.1", "nodes": [{"id": "one", "name": "x"}]}')
    with pytest.raises(TraceFormatError, match="not a 64-bit integer"):
        load_et(p)


def _complete_nodes(data: bytes, closing: bytes) -> int:
    """Nodes fully present in ``data``: each ends with a line that is exactly ``closing``."""
    return len(re.findall(b"\n" + re.escape(closing) + b"(?=[,\n])", data)) + (
        1 if data.endswith(b"\n" + closing) else 0
    )


@pytest.mark.parametrize(
    "name,closing,total",
    [
        ("torch_cpu_pair/et.json.gz", b"      }", 3202),  # nested layout, 6-space indent
        ("param_linear_cuda_pair/et.json.gz", b"    }", 931),  # flat layout, 4-space indent
    ],
)
@pytest.mark.parametrize("frac", [0.003, 0.25, 0.5, 0.77, 0.999])
def test_truncated_plain_file(tmp_path: Path, name: str, closing: bytes, total: int, frac: float) -> None:
    data = gzip.open(ET / name).read()
    assert _complete_nodes(data, closing) == total
    cut = int(len(data) * frac)
    p = _write(tmp_path, "cut.json", data[:cut])
    tr = load_et(p)
    expected = _complete_nodes(data[:cut], closing)
    assert 0 < expected < total
    assert len(tr) == expected
    kinds = [w.kind for w in tr.warnings]
    assert "truncated" in kinds
    warning = tr.warnings[kinds.index("truncated")]
    assert f"byte {cut}" in warning.message and f"kept the {expected} complete nodes" in warning.message
    assert warning.count > 0  # bytes of the partial node
    assert tr.finish_ts is None  # written after the nodes: cut off
    # the process root (written last) is gone: thread roots and unfinished parents' children
    # are top-level now, and the loader says so
    assert 1 not in tr.ids
    assert "orphans" in kinds and len(tr.roots()) >= 1
    assert np.all(tr.depth[tr.roots()] == 0)
    # what was kept is exactly the file's first nodes (compare with the full load)
    full = load_et(ET / name)
    kept = full.positions_of_ids(tr.ids)
    assert np.all(kept >= 0)
    assert [tr.name(i) for i in range(len(tr))] == [full.name(int(k)) for k in kept]
    assert np.array_equal(tr.rf_id, full.rf_id[kept])


@pytest.mark.parametrize("frac", [0.1, 0.6, 0.95])
def test_truncated_gzip_file(tmp_path: Path, frac: float) -> None:
    name = "torch_cpu_pair/et.json.gz"
    raw = (ET / name).read_bytes()
    p = _write(tmp_path, "cut.json.gz", raw[: int(len(raw) * frac)])
    tr = load_et(p)
    full = load_et(ET / name)
    assert 0 < len(tr) < len(full)
    assert "truncated" in [w.kind for w in tr.warnings]
    kept = full.positions_of_ids(tr.ids)
    assert np.all(kept >= 0)
    assert [tr.name(i) for i in range(len(tr))] == [full.name(int(k)) for k in kept]
    # node details still decode on a recovered trace
    last = tr.node(len(tr) - 1)
    assert last.name == full.name(int(kept[-1]))


def test_cut_before_nodes_array(tmp_path: Path) -> None:
    data = gzip.open(ET / "torch_cpu_pair/et.json.gz").read()
    cut = data.index(b'"nodes"') - 3
    p = _write(tmp_path, "cut.json", data[:cut])
    with pytest.raises(TraceFormatError, match=f"file ends at byte {cut} before the nodes array") as info:
        load_et(p)
    _one_line(info.value, p)


def test_nul_padding_after_cut(tmp_path: Path) -> None:
    data = gzip.open(ET / "hta_simple_add_cuda_pair/et.json.gz").read()
    p = _write(tmp_path, "padded.json", data[: len(data) // 2] + b"\x00" * 4096)
    tr = load_et(p)
    assert 0 < len(tr) < 38 and "truncated" in [w.kind for w in tr.warnings]


def _et(nodes: list[dict]) -> bytes:
    return json.dumps({"schema": "9.9.9-test", "pid": 1, "nodes": nodes, "finish_ts": 2}).encode()


def _nested(i: int, parent: int, name: str = "op", **attrs) -> dict:
    base = {"rf_id": i, "seq_id": -1, "tid": 1}
    base.update(attrs)
    return {
        "id": i,
        "name": name,
        "ctrl_deps": parent,
        "inputs": {"values": [], "shapes": [], "types": []},
        "outputs": {"values": [], "shapes": [], "types": []},
        "attrs": [{"name": k, "type": "uint64", "value": v} for k, v in base.items()],
    }


def test_integers_beyond_64_bits(tmp_path: Path) -> None:
    big = 2**70 + 5
    nodes = [_nested(1, 1, "[pytorch|profiler|execution_trace|process]"), _nested(2, 1, rf_id=big, fw_parent=2**64 - 1)]
    nodes[1]["inputs"] = {"values": [big, [big]], "shapes": [[], [[]]], "types": ["Int", "GenericList[Int]"]}
    tr = load_et(_write(tmp_path, "big.json", _et(nodes)))
    assert len(tr) == 2 and tr.rf_id[1] == 0  # column default; exact value kept in attrs
    node = tr.node(1)
    assert node.attrs["rf_id"] == big and node.attrs["fw_parent"] == 2**64 - 1
    assert node.inputs[0].value == big and node.inputs[1].value[0].value == big
    bad = [w for w in tr.warnings if w.kind == "bad_values"]
    assert {w.count for w in bad} == {1} and len(bad) == 2


def test_deep_nesting_does_not_recurse(tmp_path: Path) -> None:
    n = 20_000
    nodes = [_nested(i, i - 1 if i > 1 else 1) for i in range(n, 0, -1)]  # post-order: deepest first
    tr = load_et(_write(tmp_path, "deep.json", _et(nodes)))
    assert len(tr) == n and tr.depth.max() == n - 1
    assert list(tr.children(0)) == [1] and list(tr.roots()) == [0]


def test_parent_cycle_is_broken(tmp_path: Path) -> None:
    nodes = [_nested(1, 1), _nested(2, 3), _nested(3, 4), _nested(4, 2), _nested(5, 4)]
    tr = load_et(_write(tmp_path, "cycle.json", _et(nodes)))
    assert "cycles" in [w.kind for w in tr.warnings]
    assert len(tr) == 5 and tr.depth.min() == 0
    assert tr.child_index.size + len(tr.roots()) == 5


def test_missing_optional_fields_and_odd_args(tmp_path: Path) -> None:
    """Nodes with only id/name, strides shorter than values, tensors of unknown shape."""
    nodes = [
        {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1},
        {
            "id": 2,
            "name": "op",
            "ctrl_deps": 1,
            "inputs": {
                "values": [[1, 2, 0, 6, 2, "cuda:0"], "<None>", [[3, 4, 0, 1, 8, "cpu"]], 7],
                "shapes": [[2, 3]],
                "types": ["Tensor(c10::BFloat16)", "None", "GenericList[Tensor(long)]"],
                "strides": [],
            },
        },
        {"id": 3, "name": "bare"},
    ]
    tr = load_et(_write(tmp_path, "odd.json", _et(nodes)))
    assert len(tr) == 3
    node = tr.node(tr.pos_of_id(2))
    t = node.inputs[0].value
    assert (t.dtype, t.shape, t.stride, t.nbytes) == ("c10::BFloat16", (2, 3), None, 12)
    assert node.inputs[1].value is None
    inner = node.inputs[2].value[0].value
    assert (inner.dtype, inner.shape, inner.nbytes) == ("long", None, 8)
    assert node.inputs[3].type == "" and node.inputs[3].value == 7
    bare = tr.node(tr.pos_of_id(3))
    assert bare.inputs == [] and bare.seq_id == -1 and bare.rf_id == 0
    assert "orphans" in [w.kind for w in tr.warnings]  # node 3 names no parent
