"""`tracetui diff` headless: alignment, per-op and summary deltas, HTA-style tables.

Expected numbers are read from the raw JSON here (step windows, kernels by ``External id``,
launches by ``correlation``), never from tracetui's own model.
"""

from __future__ import annotations

import numpy as np
import pytest
from diff_files import (
    BERT,
    FACTOR,
    GPU_CATS,
    JOB,
    MI300,
    NVJET,
    REMOVED_EXT,
    RENAMED_EXT,
    SLOWED_EXT,
    raw_events,
    raw_gpu_in_step,
    raw_kernels,
    raw_step,
    write_modified_bert,
    write_renamed_bert,
)
from shared_traces import SHARED, kineto_path

from tracetui.diff import (
    Match,
    RowKind,
    by_abs_gpu_delta,
    diff_traces,
    kernel_changes,
    regression_mask,
    sorted_preorder,
    with_ancestors,
)
from tracetui.diff.numbers import regressions
from tracetui.diff.report import diff_document
from tracetui.session import open_traces


def load(*paths) -> object:
    return open_traces([str(p) for p in paths])


# ----------------------------------------------------------------------------- self
@pytest.mark.parametrize("name", [BERT, pytest.param(MI300, marks=pytest.mark.slow)])
def test_a_trace_against_itself_has_zero_deltas_everywhere(name):
    path = kineto_path(name)
    d = diff_traces(load(path), load(path))
    t = d.tree
    assert not t.added.any() and not t.removed.any()
    for a, b in ((t.host_a, t.host_b), (t.gpu_a, t.gpu_b), (t.gpu_n_a, t.gpu_n_b)):
        np.testing.assert_array_equal(a, b)
    assert (t.ev_a == t.ev_b).all()  # every op paired with itself
    doc = diff_document(d)
    assert doc["step_time"]["delta_us"] == 0 and doc["gpu_time_per_step"]["delta_us"] == 0
    assert all(v["delta_us"] == 0 for v in doc["gpu_timeline"].values())
    for key, col in (("kernel_categories", "delta_us"), ("kernels", "delta_us"), ("top_ops", "delta_direct_gpu_us"),
                     ("idle", "delta_us"), ("ops", "delta_direct_gpu_us")):
        assert all(r[col] == 0 for r in doc[key]), key
    for table in ("cpu", "gpu"):
        rows = doc["by_name"][table]
        assert rows and all(r["count_a"] == r["count_b"] and r["dur_us_a"] == r["dur_us_b"] for r in rows)
    assert doc["tree"] == [] and doc["kernel_changes"] == []
    assert all(v["delta"] == 0 for c in doc["launches"].values() for v in c.values())


def test_bert_step_numbers_match_the_raw_file():
    path = kineto_path(BERT)
    t = diff_traces(load(path), load(path)).tree
    ts, dur = raw_step(str(path), "ProfilerStep#6")
    n, us = raw_gpu_in_step(str(path), "ProfilerStep#6")
    assert (n, round(us, 3)) == (61, 309.437)
    assert t.host_a[0] == pytest.approx(dur) and t.gpu_a[0] == pytest.approx(us) and t.gpu_n_a[0] == n
    assert RowKind(int(t.kind[0])) == RowKind.STEP and t.name(0) == "ProfilerStep#6"


# ----------------------------------------------------------------------------- modified copy
@pytest.fixture(scope="module")
def modified_bert(tmp_path_factory):
    return write_modified_bert(tmp_path_factory.mktemp("diff") / "bert_modified.json.gz")


def test_removed_and_slowed_kernels_are_found_exactly(modified_bert):
    src = kineto_path(BERT)
    d = diff_traces(load(src), load(modified_bert))
    t = d.tree
    assert not t.added.any() and not t.removed.any()  # the same ops on both sides
    own = t.self_gpu_b - t.self_gpu_a
    changed = np.flatnonzero(np.abs(own) > 1e-9)
    kt = t.a.linked.kineto
    assert sorted(int(kt.external_id[t.ev_a[r]]) for r in changed) == sorted([REMOVED_EXT, SLOWED_EXT])
    removed = raw_kernels(src, REMOVED_EXT)
    slowed = raw_kernels(src, SLOWED_EXT)
    x, y = sum(e["dur"] for e in removed), sum(e["dur"] for e in slowed)
    (rx,) = [r for r in changed if kt.external_id[t.ev_a[r]] == REMOVED_EXT]
    (ry,) = [r for r in changed if kt.external_id[t.ev_a[r]] == SLOWED_EXT]
    assert own[rx] == pytest.approx(-x) and t.self_gpu_b[rx] == 0
    assert own[ry] == pytest.approx((FACTOR - 1) * y)
    assert t.gpu_n_a[rx] - t.gpu_n_b[rx] == len(removed)
    assert t.d_gpu[0] == pytest.approx((FACTOR - 1) * y - x)  # the step row: everything launched in the step
    # every ancestor of the two carries their change, nothing else does
    expect = np.zeros(t.n_rows)
    for r, v in ((rx, -x), (ry, (FACTOR - 1) * y)):
        for p in t.path(r)[1:]:  # the step row's own number comes from the launches, checked above
            expect[p] += v
    np.testing.assert_allclose(t.d_gpu[1:], expect[1:], atol=1e-9)
    # kernel changes: the removed op lost its kernels by name, the slowed op kept the same ones
    kc = kernel_changes(t, rx)
    assert [c.status for c in kc] == ["removed"] * len(removed)
    assert [c.a.name for c in kc] == [e["name"] for e in removed]
    assert kc[0].a.grid == ",".join(map(str, removed[0]["args"]["grid"]))
    kc = kernel_changes(t, ry)
    assert [c.status for c in kc] == ["same"] * len(slowed)
    assert [c.b.dur_us for c in kc] == pytest.approx([e["dur"] * FACTOR for e in slowed])
    # views: sorted by |Δ GPU|, regressions filter
    assert by_abs_gpu_delta(t)[0] == 0 or abs(t.d_gpu[by_abs_gpu_delta(t)[0]]) >= abs(t.d_gpu[0])
    order = sorted_preorder(t)
    assert sorted(order.tolist()) == list(range(t.n_rows))
    pos = np.empty(t.n_rows, dtype=np.int64)
    pos[order] = np.arange(t.n_rows)
    assert (pos[t.parent[1:]] < pos[1:]).all()  # parents before children
    reg = regression_mask(t)
    assert reg[ry] and not reg[rx]
    view = with_ancestors(t, reg)
    assert all(view[p] for p in t.path(ry))
    # the document: the slowed op tops the tree table, the removed one has its kernel change
    doc = diff_document(d)
    assert doc["tree"][0]["event_a"] == int(t.ev_a[ry]) and doc["tree"][0]["method"] == "shapes"
    (kdoc,) = [k for k in doc["kernel_changes"] if k["event_a"] == int(t.ev_a[rx])]
    assert [k["status"] for k in kdoc["kernels"]] == ["removed"]
    gpu = {r["name"]: r for r in doc["by_name"]["gpu"]}
    assert gpu[removed[0]["name"]]["count_a"] - gpu[removed[0]["name"]]["count_b"] == len(removed)
    pct = doc["gpu_time_per_step"]["delta_pct"]
    assert pct == pytest.approx(((FACTOR - 1) * y - x) * 100 / 309.437)
    assert regressions(doc, pct - 1) and not regressions(doc, pct + 1)


def test_a_kernel_replaced_by_another_is_listed_with_both_launches(tmp_path):
    src = kineto_path(BERT)
    t = diff_traces(load(src), load(write_renamed_bert(tmp_path / "renamed.json.gz"))).tree
    kt = t.a.linked.kineto
    (old,) = raw_kernels(src, RENAMED_EXT)
    from tracetui.diff.kernels import rows_with_kernel_changes

    (row,) = rows_with_kernel_changes(t)
    assert kt.external_id[t.ev_a[row]] == RENAMED_EXT and kt.name(int(t.ev_a[row])) == "aten::addmm"
    (change,) = kernel_changes(t, row)
    assert change.status == "replaced" and change.a.name == old["name"] and change.b.name == NVJET
    assert (change.a.grid, change.b.grid) == (",".join(map(str, old["args"]["grid"])), "32,8,1")
    assert change.a.block == change.b.block == ",".join(map(str, old["args"]["block"]))
    assert change.a.registers == change.b.registers == old["args"]["registers per thread"]
    assert change.a.dur_us == change.b.dur_us == old["dur"]
    assert (t.d_gpu == 0).all() and t.method[row] == Match.SHAPES


# ----------------------------------------------------------------------------- steps
@pytest.mark.slow
def test_mi300_step_against_step():
    path = kineto_path(MI300)
    lt = load(path)
    d = diff_traces(lt, lt, step_a=15, step_b=16)
    t = d.tree
    a_ts, a_dur = raw_step(str(path), "ProfilerStep#15")
    b_ts, b_dur = raw_step(str(path), "ProfilerStep#16")
    assert (t.host_a[0], t.host_b[0]) == (pytest.approx(a_dur), pytest.approx(b_dur))
    na, ua = raw_gpu_in_step(str(path), "ProfilerStep#15")
    nb, ub = raw_gpu_in_step(str(path), "ProfilerStep#16")
    assert (t.gpu_n_a[0], t.gpu_n_b[0]) == (na, nb) == (895, 895)
    assert (t.gpu_a[0], t.gpu_b[0]) == (pytest.approx(ua), pytest.approx(ub))
    assert not t.added.any() and not t.removed.any()  # the same model in both steps
    ka = t.a.linked.kineto
    # every paired op has the same name on both sides; A's ops are step 15's, B's step 16's
    ops = np.flatnonzero(t.kind == int(RowKind.OP))
    assert all(ka.name(int(t.ev_a[r])) == ka.name(int(t.ev_b[r])) for r in ops)
    abs_a, abs_b = ka.ts[t.ev_a[ops]] + ka.origin_us, ka.ts[t.ev_b[ops]] + ka.origin_us
    assert ((abs_a >= a_ts - 1) & (abs_a < b_ts)).all() and (abs_b >= b_ts - 1).all()
    # rows are in preorder: a row's subtree is the next size[r] rows, its children point back at it
    for r in range(0, t.n_rows, 97):
        assert all(r in t.path(x) for x in range(r, r + int(t.size[r])))
        assert r + t.size[r] == t.n_rows or r not in t.path(r + int(t.size[r]))
        assert (t.parent[t.children(r)] == r).all()
    # the autograd thread pairs by its name, and backward ops by their paired forward ops
    (thread,) = np.flatnonzero(t.kind == int(RowKind.THREAD))
    assert "pt_autograd_0" in t.name(int(thread)) and t.method[thread] == Match.THREAD
    seq = np.flatnonzero(t.method == Match.SEQ)
    assert seq.size and all(int(ka.fwd_of[t.ev_b[r]]) == int(t.ev_b[np.flatnonzero(t.ev_a == ka.fwd_of[t.ev_a[r]])[0]])
                            for r in seq[:20])


def test_every_step_is_compared_as_per_step_means():
    path = kineto_path(MI300)
    lt = load(path)
    t = diff_traces(lt, lt).tree
    durs = [raw_step(str(path), f"ProfilerStep#{n}")[1] for n in (15, 16, 17)]
    assert t.a.n_steps == 3 and t.host_a[0] == pytest.approx(sum(durs) / 3)
    gpus = [raw_gpu_in_step(str(path), f"ProfilerStep#{n}")[1] for n in (15, 16, 17)]
    assert t.gpu_a[0] == pytest.approx(sum(gpus) / 3)
    assert t.a.template_step.name == "ProfilerStep#16"  # the median host duration
    assert t.a.unmatched_ops == 0
    # an op's number is the mean of its three occurrences
    single = diff_traces(lt, lt, step_a=16).tree
    assert t.n_rows == single.n_rows
    ops = np.flatnonzero(t.kind == int(RowKind.OP))
    assert np.allclose(t.gpu_n_a[ops], single.gpu_n_a[ops])  # same kernels every step


def test_dlrm_rank0_against_rank1():
    files = [[JOB / f"rank{r}_kineto.json.gz", JOB / f"rank{r}_et.json.gz"] for r in (0, 1)]
    d = diff_traces(load(*files[0]), load(*files[1]))
    t = d.tree
    for side in (t.a, t.b):
        assert side.template_step.name == "ProfilerStep#10" and side.linked.et is not None
    k0 = str(files[0][0])
    k1 = str(files[1][0])
    assert t.host_a[0] == pytest.approx(raw_step(k0, "ProfilerStep#10")[1])
    assert t.host_b[0] == pytest.approx(raw_step(k1, "ProfilerStep#10")[1])
    assert (t.gpu_n_a[0], t.gpu_n_b[0]) == (raw_gpu_in_step(k0, "ProfilerStep#10")[0],
                                            raw_gpu_in_step(k1, "ProfilerStep#10")[0])
    doc = diff_document(d)
    # HTA 0.5.0 TraceDiff.compare_traces on these two files, iteration 10 (bench/diff_hta.py)
    gpu = doc["by_name"]["gpu"]
    assert (sum(r["count_a"] for r in gpu), sum(r["count_b"] for r in gpu)) == (261, 262)
    assert (sum(r["dur_us_a"] for r in gpu), sum(r["dur_us_b"] for r in gpu)) == (6851.0, 12398.0)
    cpu = doc["by_name"]["cpu"]
    assert (sum(r["count_a"] for r in cpu), sum(r["count_b"] for r in cpu)) == (2197, 2199)
    # the ranks ran the same program: almost every op pairs, the second threads pair by order
    al = doc["alignment"]
    assert al["paired_ops"] > 10 * (al["added_ops"] + al["removed_ops"])
    assert al["methods"]["thread"] == 1


def test_a_step_a_side_does_not_have_is_bad_input():
    from tracetui.errors import TraceError

    lt = load(kineto_path(BERT))
    with pytest.raises(TraceError, match=r"has no step 7 \(its steps: 6\)"):
        diff_traces(lt, lt, step_a=7)


def test_traces_without_steps_compare_as_whole_traces():
    path = kineto_path("b200x8_eager.json.gz")
    lt = load(path)
    t = diff_traces(lt, lt).tree
    assert t.a.steps.how == "whole trace" and t.a.template_step.event == -1
    n = sum(1 for e in raw_events(str(path)) if e.get("cat") in GPU_CATS)
    assert t.gpu_n_a[0] == n and (t.d_gpu == 0).all()


@pytest.mark.slow
def test_without_profiler_steps_the_repeated_top_level_annotation_is_the_step():
    from tracetui.analysis.steps import find_steps

    path = SHARED / "et" / "param_linear_cuda_pair" / "kineto.json.gz"
    name = "Optimizer.zero_grad#SGD.zero_grad"
    raw = sorted((e["ts"], e["dur"]) for e in raw_events(str(path))
                 if e.get("cat") == "user_annotation" and e.get("name") == name)
    assert len(raw) == 40 and not any(e.get("name", "").startswith("ProfilerStep") for e in raw_events(str(path)))
    lt = load(path)
    steps = find_steps(lt.kineto)
    assert (steps.how, steps.annotation, len(steps.steps)) == ("annotation", name, 40)
    assert [s.number for s in steps.steps] == list(range(1, 41))
    t = diff_traces(lt, lt, step_a=3, step_b=7).tree
    assert (t.host_a[0], t.host_b[0]) == (pytest.approx(raw[2][1]), pytest.approx(raw[6][1]))
    assert t.name(0) == name and not t.added.any() and not t.removed.any()
