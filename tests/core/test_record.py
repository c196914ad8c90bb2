"""The recording script and the committed sample pair in sample_traces/.

Most tests need no torch: the CLI's --help, the "torch is not installed" exit, and
facts about the committed CPU pair read directly with gzip + orjson (counts were
measured on the files when they were recorded; see sample_traces/README.md).
Only the last tests run the recorder, and only where torch is installed.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from tracetui.cli import record

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
ET_FILE = SAMPLES / "cpu_transformer_et.json.gz"
KINETO_FILE = SAMPLES / "cpu_transformer_kineto.json.gz"

OPTIONS = ("--out-dir", "--name", "--steps", "--device", "--seed")


def _load(path: Path) -> dict:
    return orjson.loads(gzip.decompress(path.read_bytes()))


def _attrs(node: dict) -> dict:
    return {a["name"]: a["value"] for a in node.get("attrs", [])}


def _rf(event: dict) -> int:
    return event.get("args", {}).get("Record function id", 0)


@pytest.fixture(scope="module")
def kineto() -> dict:
    return _load(KINETO_FILE)


@pytest.fixture(scope="module")
def et() -> dict:
    return _load(ET_FILE)


# --- CLI without torch -------------------------------------------------------


def test_help_lists_the_options_without_torch(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(SystemExit) as exc:
        record.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in OPTIONS:
        assert option in out
    assert "Execution Trace" in out


def test_module_help_runs_and_import_does_not_load_torch():
    code = (
        "import sys, runpy\n"
        "import tracetui.cli.record\n"
        "assert 'torch' not in sys.modules, 'importing tracetui.cli.record imported torch'\n"
        "sys.modules['torch'] = None\n"
        "sys.argv = ['tracetui.cli.record', '--help']\n"
        "runpy.run_module('tracetui.cli.record', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "--device {auto,cpu,cuda}" in proc.stdout


def test_main_without_torch_returns_2_with_install_hint(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    rc = record.main(["--out-dir", str(tmp_path / "out"), "--steps", "1"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err == "tracetui record: torch is not installed: pip install 'tracetui[record]'"
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_record_without_torch_raises_the_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(record.RecordUnavailableError, match=r"^torch is not installed: pip install"):
        record.record(tmp_path, steps=1)


def test_steps_below_one_is_refused(capsys, tmp_path):
    assert record.main(["--out-dir", str(tmp_path), "--steps", "0"]) == 2
    assert "--steps must be at least 1" in capsys.readouterr().err


# --- the committed CPU pair ----------------------------------------------------


def test_sample_files_exist_and_stay_small():
    assert ET_FILE.is_file() and KINETO_FILE.is_file()
    assert ET_FILE.stat().st_size + KINETO_FILE.stat().st_size < 1_500_000
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 5_000_000
    assert (SAMPLES / "README.md").is_file()
    # both are real gzip streams (magic bytes), not plain JSON named .gz
    assert ET_FILE.read_bytes()[:2] == b"\x1f\x8b" and KINETO_FILE.read_bytes()[:2] == b"\x1f\x8b"


def test_sample_kineto_counts(kineto):
    events = kineto["traceEvents"]
    assert len(events) == 2815
    cats = Counter(e.get("cat") for e in events)
    assert cats["cpu_op"] == 2580
    assert cats["user_annotation"] == 12
    assert cats["fwdbwd"] == 212
    assert cats["Trace"] == 1
    assert cats[None] == 10  # ph "M" metadata
    assert Counter(e["ph"] for e in events if e.get("cat") == "fwdbwd") == {"s": 106, "f": 106}
    steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]
    assert kineto["record_shapes"] == 1
    assert kineto["deviceProperties"] == []  # CPU only


def test_sample_kineto_ops_carry_record_function_ids(kineto):
    host = [e for e in kineto["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]
    assert len(host) == 2592
    ids = [_rf(e) for e in host]
    assert all(ids), "every cpu_op / user_annotation has a non-zero Record function id"
    assert len(set(ids)) == 2592


def test_sample_et_rf_ids_link_every_kineto_op_by_name(kineto, et):
    assert et["schema"] == "1.1.1-chakra.0.0.4"
    nodes = et["nodes"]
    assert len(nodes) == 2594
    by_rf = {}
    for node in nodes:
        rf_id = _attrs(node)["rf_id"]
        if rf_id:
            assert rf_id not in by_rf
            by_rf[rf_id] = node["name"]
    assert len(by_rf) == 2592
    roots = sorted(n["name"] for n in nodes if not _attrs(n)["rf_id"])
    assert roots == [
        "[pytorch|profiler|execution_trace|process]",
        "[pytorch|profiler|execution_trace|thread]",
    ]
    host = [e for e in kineto["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]
    linked = [e for e in host if _rf(e) in by_rf]
    assert len(linked) == 2592  # every Kineto op links ...
    assert set(by_rf) == {_rf(e) for e in host}  # ... and every ET op has its Kineto event
    assert all(by_rf[_rf(e)] == e["name"] for e in linked)


def test_sample_backward_ops_and_fwdbwd_links(kineto):
    cpu = [e for e in kineto["traceEvents"] if e.get("cat") == "cpu_op"]
    wrappers = [e for e in cpu if e["name"].startswith("autograd::engine::evaluate_function: ")]
    assert len(wrappers) == 148
    grad_fns = [e for e in cpu if e["name"].endswith("Backward0") and not e["name"].startswith("autograd::")]
    assert len(grad_fns) == 106
    assert sum(1 for e in cpu if e["name"] == "torch::autograd::AccumulateGrad") == 42
    # forward ops carry "Fwd thread id" 0, backward ops the forward thread's (non-zero) number
    assert Counter(e["args"].get("Fwd thread id") for e in cpu) == {None: 2204, 0: 164, 1: 212}
    fwd = [e for e in cpu if e["args"].get("Fwd thread id") == 0 and "Sequence number" in e["args"]]
    bwd = [e for e in cpu if e["args"].get("Fwd thread id")]
    assert len(fwd) == 164 and len(bwd) == 212
    # a backward op shares its forward op's Sequence number
    bwd_seq = {e["args"]["Sequence number"] for e in grad_fns}
    assert len(bwd_seq) == 106
    assert bwd_seq <= {e["args"]["Sequence number"] for e in fwd}
    # each fwdbwd flow starts on a forward op and ends on a backward op with the same number
    by_ts: dict[float, list[dict]] = {}
    for e in cpu:
        by_ts.setdefault(e["ts"], []).append(e)
    flows: dict[int, dict[str, dict]] = {}
    for e in kineto["traceEvents"]:
        if e.get("cat") == "fwdbwd":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    assert len(flows) == 106
    for pair in flows.values():
        starts = {e["args"]["Sequence number"] for e in by_ts[pair["s"]["ts"]] if e in fwd}
        ends = {e["args"]["Sequence number"] for e in by_ts[pair["f"]["ts"]] if e in bwd}
        assert starts & ends
    # on CPU the autograd engine runs backward on the calling thread: one host thread
    assert len({e["tid"] for e in cpu}) == 1


# --- running the recorder (only where torch is installed) ---------------------


def test_record_one_step_writes_a_linked_pair(tmp_path, capsys):
    pytest.importorskip("torch")
    rc = record.main(["--out-dir", str(tmp_path), "--name", "t", "--steps", "1", "--device", "cpu"])
    assert rc == 0
    et_path, kineto_path = tmp_path / "t_et.json.gz", tmp_path / "t_kineto.json.gz"
    assert capsys.readouterr().out.split() == [str(et_path), str(kineto_path)]
    assert sorted(os.listdir(tmp_path)) == ["t_et.json.gz", "t_kineto.json.gz"]  # no plain JSON left
    kin, et_doc = _load(kineto_path), _load(et_path)
    host = [e for e in kin["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]
    by_rf = {_attrs(n)["rf_id"]: n["name"] for n in et_doc["nodes"] if _attrs(n)["rf_id"]}
    assert host and all(_rf(e) in by_rf and by_rf[_rf(e)] == e["name"] for e in host)
    assert [e["name"] for e in host if e["name"].startswith("ProfilerStep#")] == ["ProfilerStep#2"]


def test_cuda_asked_for_without_cuda_returns_2(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert record.main(["--out-dir", str(tmp_path), "--device", "cuda"]) == 2
    assert "torch.cuda.is_available() is False" in capsys.readouterr().err
