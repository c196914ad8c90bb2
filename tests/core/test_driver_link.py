"""A driver-call trace linked to the Kineto trace of the same run (link/driver_kineto.py,
link/driver_merge.py), on real Kineto traces and driver files written from their calls
(``tracetui/driver/synthetic.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shared_traces import ET_DIR, kineto_path

from tracetui.analysis.summary import build_summary
from tracetui.cli import main
from tracetui.driver import DriverTrace, What
from tracetui.driver.synthetic import CLOCK_GAP_US, DELAY_US, linked_calls, write_driver_trace
from tracetui.errors import WrongTraceKindError
from tracetui.session import load_trace, open_traces

BERT = kineto_path("h100_bert_inference.json.gz")


@pytest.fixture(scope="module")
def bert():
    return load_trace(BERT)


@pytest.fixture(scope="module")
def bert_driver(bert, tmp_path_factory):
    path = tmp_path_factory.mktemp("drv") / "trace_bert.jsonl"
    written = write_driver_trace(bert, path)
    return path, written


def test_every_call_links_to_the_driver_call_it_made(bert, bert_driver):
    path, written = bert_driver
    merged = open_traces([str(BERT), str(path)]).kineto
    assert isinstance(merged, DriverTrace) and merged.first == bert.n_events
    link = merged.link
    assert len(written) == 86 and link.kineto_calls == 86
    assert link.linked == 86 and link.rejected_by_time == 0 and link.heuristic
    for k, name in written.items():
        d = int(link.kineto_to_driver[k])
        assert d >= merged.first and merged.name(d) == name
        assert int(link.driver_to_kineto[d - merged.first]) == k
    # the tracer saw 5 launches before the profiler's window: the shift
    assert [t.shift for t in link.threads] == [5]
    # launches whose kernel is in the trace are confirmed by grid and block
    kernels = {int(x) for x in bert.launch_of if x >= 0}
    launches = [k for k in written if written[k] == "cuLaunchKernel" and k in kernels]
    assert link.by_grid_block and link.confirmed == len(launches) == 60


def test_clock_offset_and_its_uncertainty(bert, bert_driver):
    path, _ = bert_driver
    link = open_traces([str(path), str(BERT)]).kineto.link  # either order
    # the file's clock starts CLOCK_GAP_US before the trace; each driver call DELAY_US later
    assert link.offset_us == pytest.approx(bert.origin_us - CLOCK_GAP_US - DELAY_US, abs=1e-3)
    assert link.uncertainty_us == pytest.approx(0.0, abs=1e-3)


def test_merged_times_sit_inside_their_runtime_calls(bert, bert_driver):
    path, written = bert_driver
    m = open_traces([str(BERT), str(path)]).kineto
    for k in written:
        d = int(m.link.kineto_to_driver[k])
        # (µs on a clock of ~1.4e12 µs: equal to a thousandth of a µs)
        assert m.ts[k] - 1e-3 <= m.ts[d] <= m.ts[k] + m.dur[k] + 1e-3
        # every driver call starts DELAY_US after its runtime call: the offset absorbs that
        assert m.ts[d] - m.ts[k] == pytest.approx(0.0, abs=1e-3)
        # the driver call and its launch record take the runtime call's cpu_op
        assert int(m.cpu_op_of[d]) == int(bert.cpu_op_of[k])
        for c in m.children(d).tolist():
            assert int(m.cpu_op_of[c]) == int(bert.cpu_op_of[k])
    labels = [ln.label for ln in m.lanes]
    assert labels[: len(bert.lanes)] == [ln.label for ln in bert.lanes]
    assert labels[len(bert.lanes):] == ["driver calls: thread 19392"]


def test_kineto_numbers_do_not_change_with_a_driver_trace(bert, bert_driver):
    path, _ = bert_driver
    alone = build_summary(open_traces([str(BERT)]))
    both = build_summary(open_traces([str(BERT), str(path)]))
    for key in ("gpu_timeline", "kernel_categories", "kernels", "ops", "streams", "idle", "launches", "roofline"):
        assert json.dumps(alone[key], sort_keys=True, default=str) == json.dumps(both[key], sort_keys=True, default=str)


@pytest.mark.parametrize("name", ["a100_triton.json.gz", "b200x8_eager.json.gz"])
def test_driver_api_launches_link_too(name, tmp_path):
    """cuLaunchKernel / cuLaunchKernelEx recorded by Kineto itself (cuda_driver)."""
    kt = load_trace(kineto_path(name))
    path = tmp_path / "trace.jsonl"
    written = write_driver_trace(kt, path)
    m = open_traces([str(kineto_path(name)), str(path)]).kineto
    assert m.link.linked == len(written) == len(linked_calls(kt)) > 0
    assert all(m.name(int(m.link.kineto_to_driver[k])) == nm for k, nm in written.items())


def test_preload_layout_links_by_order_without_grid_and_block(bert, tmp_path):
    path = tmp_path / "cuda_trace.jsonl"
    written = write_driver_trace(bert, path, layout="preload")
    link = open_traces([str(BERT), str(path)]).kineto.link
    assert not link.by_grid_block and link.confirmed == 0
    assert link.linked == len(written) == 86
    assert link.offset_us == pytest.approx(bert.origin_us - CLOCK_GAP_US - DELAY_US, abs=0.01)


def test_a_driver_trace_of_another_run_links_little_and_says_so(bert, tmp_path):
    other = load_trace(kineto_path("a100_triton.json.gz"))
    path = tmp_path / "other.jsonl"
    write_driver_trace(other, path)
    m = open_traces([str(BERT), str(path)]).kineto
    assert m.link.linked < 10
    assert any(w.kind in ("driver_link", "driver_unlinked") for w in m.link.warnings)


def test_info_reports_the_link(bert_driver, capsys):
    path, _ = bert_driver
    assert main(["info", str(BERT), "--driver", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["files"] == [str(BERT), str(path)]
    assert list(info["driver"]["layouts"]) == ["bpftrace"]
    d = info["driver_link"]
    assert (d["linked"], d["kineto_calls"], d["heuristic"]) == (86, 86, True)
    assert main(["info", str(BERT), "--driver", str(path)]) == 0
    assert "Driver link" in capsys.readouterr().out


def test_two_driver_traces_or_a_driver_trace_with_an_et_alone_are_refused(bert_driver):
    path, _ = bert_driver
    with pytest.raises(WrongTraceKindError, match="both files are driver-call traces"):
        open_traces([str(path), str(path)])
    et = ET_DIR / "param_linear_cuda_pair" / "et.json.gz"
    with pytest.raises(WrongTraceKindError, match="links to a PyTorch profiler trace"):
        open_traces([str(et), str(path)])


def test_driver_events_of_a_merged_trace_keep_their_columns(bert_driver):
    path, _ = bert_driver
    alone = load_trace(path)
    m = open_traces([str(BERT), str(path)]).kineto
    assert m.n_driver == alone.n_driver
    assert np.array_equal(m.what, alone.what) and np.array_equal(m.grid, alone.grid)
    launches = np.flatnonzero(alone.what == What.LAUNCH)
    for e in launches[:5].tolist():
        assert m.args(m.first + e) == alone.args(e)
        assert m.dur[m.first + e] == alone.dur[e]
