"""Issue 44, headless: the call tree behind the icicle and the bottom-up table, the folded-stack
export, and the series the plots draw, each against a number read from the raw file (gzip +
json, tests/core/raw_kineto.py) or the table that prints the same fact.

Folded values are integer ns: a subtree's CPU lines add up to its root's ``dur`` (the raw
file's, in ns), its GPU lines to the summed durations of the raw GPU events its launches
started."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stdout

import numpy as np
import pytest
from raw_kineto import CALL_CATS, GPU_CATS, Threads, complete_events, corr, end
from shared_traces import SHARED, kineto_path, load_shared_kineto

from tracetui.analysis.bottom_up import caller_rows, row_events, top_rows
from tracetui.analysis.stacks import CPU, GPU, PYTHON, call_tree, folded_lines

BERT = "h100_bert_inference.json.gz"
V100 = "v100x2_nccl_216k.json.gz"
MI300 = "mi300_resnet_train_checkpointing.json.gz"
V100_STEPS = "v100_old_flow_format_cudagraph.json.gz"
BERT_MODULE = "nn.Module: BertLMHeadModel_0"


def _ns(us: float) -> int:
    return int(round(us * 1000))


def _raw_subtree_gpu_ns(path, root: dict) -> tuple[int, int]:
    """(GPU events, their summed ns) launched by runtime/driver calls inside ``root`` on its
    thread, matched by correlation id (the raw file's own link)."""
    evs = complete_events(path)
    inside = Threads(evs).inside(root)
    launches = {corr(e) for e in inside if e.get("cat") in CALL_CATS and corr(e) is not None}
    gpu = [e for e in evs if e.get("cat") in GPU_CATS and corr(e) in launches]
    return len(gpu), sum(_ns(float(e["dur"])) for e in gpu)


def _folded(name: str, *args: str) -> list[tuple[list[str], int]]:
    from tracetui.cli.entry import main

    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8")
    with redirect_stdout(out):
        assert main(["export", str(kineto_path(name)), "--format", "folded", "-o", "-", *args]) == 0
        out.flush()
    lines = buf.getvalue().decode("utf-8").splitlines()
    rows = []
    for line in lines:
        stack, value = line.rsplit(" ", 1)
        rows.append((stack.split(";"), int(value)))
    return rows


@pytest.mark.parametrize("mode_args", [[], ["--python-frames"]], ids=["cpu", "python"])
def test_folded_cpu_lines_add_up_to_the_subtree_duration(mode_args):
    raw = next(e for e in complete_events(kineto_path(BERT)) if e["name"] == BERT_MODULE)
    rows = _folded(BERT, "--select", f"name:{BERT_MODULE}", *mode_args)
    assert sum(v for _, v in rows) == _ns(float(raw["dur"])) == 4_216_941
    assert all(stack[0] == BERT_MODULE and v > 0 for stack, v in rows)
    python = any(".py(" in f for stack, _ in rows for f in stack)
    assert python == bool(mode_args)  # python frames only when asked for


def test_folded_gpu_lines_add_up_to_the_subtree_gpu_time():
    path = kineto_path(BERT)
    raw = next(e for e in complete_events(path) if e["name"] == BERT_MODULE)
    n, ns = _raw_subtree_gpu_ns(path, raw)
    assert n == 61 and ns == 309_437
    rows = _folded(BERT, "--select", f"name:{BERT_MODULE}", "--by", "gpu")
    assert sum(v for _, v in rows) == ns
    # the top kernel of the file (17 launches, 98,718 ns) sits under aten::addmm, its launching op
    cutlass = [(s, v) for s, v in rows if "wmma_tensorop_bf16_s161616gemm" in s[-1]]
    assert sum(v for _, v in cutlass) == 98_718 and {s[-2] for s, _ in cutlass} == {"aten::addmm"}
    assert not any(s[-2].startswith("cuda") for s, _ in rows)  # launches are not frames


@pytest.mark.slow
def test_folded_stacks_of_no_time_are_an_empty_file_and_say_so(tmp_path, capsys):
    """cpu_only_small has no GPU event (0 of its events is a kernel, memcpy or memset): by GPU
    time the folded file is written empty, the command says why on stderr and exits 0 (a loop
    over ranks goes on); by CPU time it is not empty and says nothing."""
    from tracetui.cli.entry import main

    path = str(kineto_path("cpu_only_small.json.gz"))
    assert not [e for e in complete_events(path) if e.get("cat") in GPU_CATS]
    out = tmp_path / "gpu.folded"
    assert main(["export", path, "--format", "folded", "--by", "gpu", "-o", str(out)]) == 0
    assert out.exists() and out.stat().st_size == 0
    assert capsys.readouterr().err == ("tracetui export: no GPU time under the selection: "
                                       "the folded stacks are empty\n")
    assert main(["export", path, "--format", "folded", "-o", str(tmp_path / "cpu.folded")]) == 0
    assert (tmp_path / "cpu.folded").stat().st_size > 0 and capsys.readouterr().err == ""


def test_folded_each_step_of_a_216k_trace_adds_up():
    """Every ProfilerStep of the 2-GPU NCCL trace: CPU lines = the step's raw dur, GPU lines =
    the raw GPU events its launches started."""
    path = kineto_path(V100)
    kt = load_shared_kineto(V100)
    steps = [e for e in complete_events(path) if e["name"].startswith("ProfilerStep#")]
    assert len(steps) == 5
    for raw in steps:
        node = next(i for i in range(kt.n_events) if kt.name(i) == raw["name"] and kt.kind[i] == 2)
        cpu = call_tree(kt, node, CPU)
        assert int(cpu.total[0]) == sum(int(line.rsplit(" ", 1)[1]) for line in folded_lines(cpu)) \
            == _ns(float(raw["dur"]))
        gpu = call_tree(kt, node, GPU)
        n, ns = _raw_subtree_gpu_ns(path, raw)
        assert int(gpu.total[0]) == ns and int(gpu.calls[gpu.self_ns > 0].sum()) == n


def test_whole_trace_gpu_tree_holds_every_gpu_event_once():
    path = kineto_path(V100)
    raw = [e for e in complete_events(path) if e.get("cat") in GPU_CATS]
    kt = load_shared_kineto(V100)
    t = call_tree(kt, None, GPU)
    assert int(t.total[0]) == sum(_ns(float(e["dur"])) for e in raw)
    leaves = t.self_ns > 0
    assert int(t.calls[leaves].sum()) == len(raw) == 22_290
    # the tree's GPU column (summed durations of the GPU events under a node) is the icicle's total
    op = next(i for i in range(kt.n_events) if kt.name(i) == "ProfilerStep#3" and kt.kind[i] == 2)
    sub = call_tree(kt, op, GPU)
    assert int(sub.total[0]) == _ns(float(kt.dur[kt.gpu_events_of(op)].sum()))


def test_a_merged_node_holds_its_events_and_its_children_fit_in_it():
    kt = load_shared_kineto(BERT)
    root = next(i for i in range(kt.n_events) if kt.name(i) == BERT_MODULE)
    t = call_tree(kt, root, CPU)
    # 26 aten::linear calls in the file, all on one path under the module (host nesting)
    linear = [c for c in range(t.n) if t.name(c) == "aten::linear"]
    assert sum(int(t.calls[c]) for c in linear) == 26
    evs = np.concatenate([t.events(c) for c in linear])
    assert {kt.name(int(e)) for e in evs} == {"aten::linear"} and evs.size == 26
    for c in range(t.n):  # a node's children hold no more than it; self is what is left
        kids = t.children(c)
        assert int(t.total[kids].sum()) + int(t.self_ns[c]) == int(t.total[c])
        assert list(t.total[kids]) == sorted(t.total[kids], reverse=True)
    assert t.path(linear[0])[0] == 0 and t.is_under(linear[0], 0)


def test_bottom_up_totals_are_the_op_tables_host_time():
    """By name, a cpu_op's total (outermost calls) is the op table's host time (every time
    counted once); self times add up to the root; callers split a row's self time."""
    from tracetui.analysis.frames import cpu_ops_frame
    from tracetui.analysis.tables import op_table

    kt = load_shared_kineto(MI300)
    t = call_tree(kt, None, CPU)
    rows = top_rows(t)
    assert sum(r.self_ns for r in rows) == int(t.total[0])
    by_name = {t.label_text(r.label): r for r in rows}
    table = op_table(cpu_ops_frame(kt)).set_index("name")
    checked = 0
    for name in table.index[:40]:
        r = by_name[name]
        assert r.calls == int(table.loc[name, "count"])
        assert r.total_ns == pytest.approx(table.loc[name, "host_us"] * 1000, abs=r.calls + 1)
        checked += 1
    assert checked == 40
    top = rows[0]
    callers = caller_rows(t, top)
    assert sum(c.self_ns for c in callers) <= top.self_ns
    assert sum(c.calls for c in callers) == sum(int(t.calls[x]) for x in top.leaves if t.parent[x] >= 0)
    ev = row_events(t, callers[0])
    assert ev.size == callers[0].calls and {kt.name(int(e)) for e in ev} == {t.label_text(top.label)}


def test_python_mode_keeps_python_frames_and_the_same_total():
    kt = load_shared_kineto(BERT)
    root = next(i for i in range(kt.n_events) if kt.name(i) == BERT_MODULE)
    cpu, py = call_tree(kt, root, CPU), call_tree(kt, root, PYTHON)
    assert int(cpu.total[0]) == int(py.total[0])
    assert py.n > cpu.n and any(".py(" in py.name(c) for c in range(py.n))
    assert not any(".py(" in cpu.name(c) for c in range(cpu.n))


# ---------------------------------------------------------------- plot series
def test_step_series_is_the_summary_steps_table():
    from tracetui.analysis.frames import gpu_events_frame
    from tracetui.analysis.launches import launch_frame, step_table
    from tracetui.analysis.series import step_series

    kt = load_shared_kineto(V100)
    s = step_series(kt)
    table = step_table(kt, launch_frame(kt, gpu_events_frame(kt)))  # the summary's "Profiler steps"
    assert s.names == list(table["step"]) == [f"ProfilerStep#{i}" for i in range(2, 7)]
    assert s.dur.tolist() == pytest.approx(table["dur"].tolist())
    assert s.gpu_us.tolist() == pytest.approx(table["gpu_us"].tolist())
    raw = {e["name"]: float(e["dur"]) for e in complete_events(kineto_path(V100))
           if e["name"].startswith("ProfilerStep#")}
    assert s.dur.tolist() == pytest.approx([raw[n] for n in s.names])
    assert s.names[s.slowest] == max(raw, key=raw.get)


def test_busy_bins_add_up_to_the_gpu_timeline_busy():
    from tracetui.analysis.frames import gpu_events_frame
    from tracetui.analysis.gpu_breakdown import timeline_frame
    from tracetui.analysis.series import busy_runs

    for name in (BERT, V100):
        kt = load_shared_kineto(name)
        tl = timeline_frame(gpu_events_frame(kt))
        runs = busy_runs(kt)
        busy_ms = tl.set_index("scope")["busy_ms"]
        for r in runs:
            scope = "all" if len(runs) == 1 else f"device {r.device}"
            assert r.busy / 1e3 == pytest.approx(busy_ms[scope], rel=1e-9)
            for bins in (7, 80, 333):
                edges = np.linspace(r.lo, r.hi, bins + 1)
                assert r.busy_in(edges).sum() == pytest.approx(r.busy, rel=1e-9)
                pct = r.busy_pct(edges)
                assert pct.min() >= 0 and pct.max() <= 100 + 1e-9
    # raw: the bert trace's one stream, by the file's own union of its GPU events
    from raw_kineto import gpu_work, length, union

    raw = gpu_work(kineto_path(BERT))  # absolute float µs: below-ns digits are lost
    assert busy_runs(load_shared_kineto(BERT))[0].busy == pytest.approx(length(union((float(e["ts"]), end(e))
                                                                                      for e in raw)), abs=0.01)


JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
def test_lateness_matrix_is_the_collectives_and_stragglers_tables():
    from tracetui.job import job_summary, open_job
    from tracetui.job.stragglers import lateness_matrix

    job = open_job([JOB], workers=1)
    doc = job_summary(job)
    ranks = sorted(job.results)
    late, last = lateness_matrix(job.collectives, ranks)
    assert late.shape == (8, 8)
    for i, c in enumerate(doc["collectives"]):
        assert np.nanmax(late[i]) == pytest.approx(c["start_skew_us"])
        assert last[i] == c["last_rank"]
    for s in doc["stragglers"]:
        k = ranks.index(s["rank"])
        lasts = sum(1 for i, lr in enumerate(last) if lr == s["rank"] and np.nanmax(late[i]) > 0)
        assert lasts == s["times_last"]
        assert float(np.median(late[:, k])) == pytest.approx(s["median_late_us"])


@pytest.mark.slow
def test_html_report_plots_are_the_raw_steps_busy_and_memory():
    """The HTML report's SVG plots keep the numbers they draw: the six steps' raw durations
    (V100), the busy bins adding up to the union of the raw GPU events (BERT), the highest raw
    ``Total Allocated`` / ``Total Reserved`` (BERT's cuda:0); one ``<svg>`` per plot."""
    import gzip
    import json

    from raw_kineto import length, union

    from tracetui.export import export_bytes
    from tracetui.export.figures import report_figures
    from tracetui.export.report import build_report
    from tracetui.session import LinkedTrace

    steps_path = kineto_path(V100_STEPS)
    raw_steps = sorted((e for e in complete_events(steps_path) if e["name"].startswith("ProfilerStep#")),
                       key=lambda e: e["ts"])
    assert len(raw_steps) == 6
    figs = report_figures(build_report(LinkedTrace(load_shared_kineto(V100_STEPS)), None))
    step = next(f for f in figs if f.title == "Step time per step")
    assert step.chart.bars.tolist() == pytest.approx([float(e["dur"]) / 1e3 for e in raw_steps])  # ms
    slowest = max(range(6), key=lambda k: raw_steps[k]["dur"])
    assert step.chart.marks == [(slowest, "▲")] and raw_steps[slowest]["name"] in step.note

    path = kineto_path(BERT)
    lt = LinkedTrace(load_shared_kineto(BERT))
    figs = report_figures(build_report(lt, None))
    assert [f.title for f in figs] == ["GPU0 busy over time", "cuda:0 memory over time", "cpu memory over time"]
    busy, mem = figs[0].chart, figs[1].chart
    gpu = [e for e in complete_events(path) if e.get("cat") in GPU_CATS]
    runs = union([(float(e["ts"]), end(e)) for e in gpu])
    lo, hi = min(a for a, _ in runs), max(b for _, b in runs)
    width = (hi - lo) / busy.bars.size
    # 309.437 µs; within 1 ns (the raw file's absolute µs timestamps carry ~1e-3 µs of float error)
    assert float((busy.bars / 100.0 * width).sum()) == pytest.approx(length(runs), abs=1e-3)
    assert length(runs) == pytest.approx(309.437, abs=1e-3)
    doc = json.loads(gzip.open(path).read())["traceEvents"]
    cuda = [e["args"] for e in doc if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
    assert mem.bars.max() == max(a["Total Allocated"] for a in cuda) == 101_305_344
    assert dict(mem.lines)["reserved"].max() == max(a["Total Reserved"] for a in cuda) == 121_634_816
    page = export_bytes(lt, None, "html").decode()
    assert page.count("<svg ") == len(figs) and all(f.title in page for f in figs)
