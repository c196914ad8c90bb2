"""The browser app driven through Textual's Pilot on real shared traces: real key presses,
then assertions on the selection and on the text on screen."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from pilot import BERT, dialog_words, error_dialog_shown, open_app, press, screen_text, search
from shared_traces import ET_DIR, SAMPLES, kineto_path, load_shared_kineto

from tracetui.formats import unknown_format_message
from tracetui.ui.app import EXIT_LOAD_FAILED, MainScreen, TraceApp
from tracetui.ui.browser.help_screen import HelpScreen
from tracetui.ui.browser.warnings_screen import WarningsScreen
from tracetui.ui.detail.detail_pane import DetailPane

MI250 = str(kineto_path("mi250_minitoy_train.json.gz"))


# ------------------------------------------------------------------ > and <
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_jump_from_addmm_to_gemm_kernel_and_back(size):
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    addmm = [i for i in range(kt.n_events) if kt.name(i) == "aten::addmm"]
    assert len(addmm) == 26  # verified by reading the file
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=size) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        op = screen.current
        assert op == min(addmm, key=lambda i: screen.source.tree_position(i))  # first in tree order
        assert screen.op_tree.cursor_node == op
        assert screen.focused is screen.op_tree  # Enter returned focus to the tree
        await press(pilot, "greater_than_sign")
        kernel = screen.current
        assert kernel == int(kt.gpu_events_of(op)[0])
        name = kt.name(kernel)
        assert "gemm" in name and kt.kind_of(kernel).name == "KERNEL"
        detail = screen.query_one(DetailPane).text()
        assert "Grid" in detail and "40 × 2 × 1" in detail  # args grid [40, 2, 1]
        assert "Block" in detail and "128 × 1 × 1" in detail  # args block [128, 1, 1]
        assert "category gemm" in detail
        assert "NVIDIA H100 80GB HBM3" in detail
        text = screen_text(app)
        assert "cutlass" in text  # the kernel row and the detail title are on screen
        if size == (80, 24):  # the summary line under the jump note is on screen unscrolled
            assert "grid 40 × 2 × 1 · block 128 × 1 × 1 · category gemm" in text
        else:
            assert "Grid" in text and "40 × 2 × 1" in text and "Registers/thread" in text
        await press(pilot, "less_than_sign")
        assert screen.current == op
        assert "launched" in screen.query_one(DetailPane).text()
        assert "aten::addmm" in screen_text(app)


@pytest.mark.slow
async def test_jump_cycles_through_the_ops_gpu_events_in_time_order():
    kt = load_shared_kineto("mi250_minitoy_train.json.gz")
    app = TraceApp(use_cache=False, paths=[MI250])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::linear")
        op = screen.current
        assert kt.name(op) == "aten::linear"
        events = kt.gpu_events_of(op).tolist()
        assert len(events) == 2 and kt.ts[events[0]] < kt.ts[events[1]]
        seen = []
        for _ in range(3):
            await press(pilot, "greater_than_sign")
            seen.append(screen.current)
        assert seen == [events[0], events[1], events[0]]  # wraps around
        assert "GPU event 1 of 2" in screen.query_one(DetailPane).text()
        # the second one is the GEMM (Cijk_ is AMD's Tensile GEMM)
        assert kt.name(events[1]).startswith("Cijk_")
        await press(pilot, "greater_than_sign", "less_than_sign")
        assert screen.current == kt.cpu_op_of[events[1]]
        assert kt.name(screen.current) == "aten::addmm"  # innermost cpu_op, inside aten::linear


@pytest.mark.slow
async def test_jumps_work_from_the_focused_timeline():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        op = screen.current
        await press(pilot, "t")
        assert screen.focused is screen.timeline
        await press(pilot, "greater_than_sign")
        first = screen.current
        assert first == int(kt.gpu_events_of(op)[0])
        await press(pilot, "right")  # next GPU event on the same stream
        gpu = np.flatnonzero(np.isin(kt.kind, [7, 8, 9]))
        on_lane = gpu[kt.lane_of[gpu] == kt.lane_of[first]]
        on_lane = on_lane[np.argsort(kt.ts[on_lane], kind="stable")]
        assert screen.current == int(on_lane[np.flatnonzero(on_lane == first)[0] + 1])
        await press(pilot, "left", "less_than_sign")
        assert screen.current == op
        assert screen.focused is screen.timeline


@pytest.mark.slow
async def test_jump_with_et_names_the_linked_et_op():
    pair = ET_DIR / "hta_simple_add_cuda_pair"
    app = TraceApp(use_cache=False, paths=[str(pair / "et.json.gz"), str(pair / "kineto.json.gz")])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        kt, link = screen.source.kt, screen.linked.link
        assert link.stats.method == "sequence" and link.stats.linked == 36
        await search(pilot, "aten::add")
        op = screen.current
        assert kt.name(op) == "aten::add"
        await press(pilot, "greater_than_sign")
        assert kt.is_gpu_work(screen.current)
        await press(pilot, "less_than_sign")
        assert screen.current == op
        detail = screen.query_one(DetailPane).text()
        pos = int(link.kineto_to_et[op])
        assert f"ET node {int(screen.linked.et.ids[pos])}" in detail
        # the first aten::add (ET seq_id 0, the one Kineto op named so with Sequence number 0)
        # was found by its sequence number, and flagged heuristic all the same
        assert "heuristic link, found by sequence number" in detail
        assert "ET op" in detail


# ------------------------------------------------------------------ timeline
async def test_timeline_marks_idle_gaps_with_their_length():
    kt = load_shared_kineto("mi250_minitoy_train.json.gz")
    gpu = np.flatnonzero(np.isin(kt.kind, [7, 8, 9]))
    order = np.argsort(kt.ts[gpu])
    starts, ends = kt.ts[gpu][order], np.maximum.accumulate((kt.ts[gpu] + kt.dur[gpu])[order])
    gap = float((starts[1:] - ends[:-1]).max())
    assert 6600 < gap < 6700  # a 6.63 ms idle stretch on GPU 2 stream 0
    app = TraceApp(use_cache=False, paths=[MI250])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_app(app, pilot)
        lines = [ln for ln in screen_text(app).splitlines() if ln.startswith("GPU2 s0")]
        assert len(lines) == 1
        assert "6.63ms" in lines[0] and "···" in lines[0]


@pytest.mark.slow
async def test_timeline_zoom_keys_change_the_window():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        t0, t1 = screen.timeline.window
        await press(pilot, "right_square_bracket")
        z0, z1 = screen.timeline.window
        assert z1 - z0 == pytest.approx((t1 - t0) / 2)
        await press(pilot, "right_curly_bracket")
        p0, _ = screen.timeline.window
        assert p0 > z0
        await press(pilot, "Z")
        assert screen.timeline.window == pytest.approx(screen.timeline.extent)
        await search(pilot, "aten::addmm")
        await press(pilot, "z")
        w0, w1 = screen.timeline.window
        assert w1 - w0 < 20  # zoomed to one 5.8 µs kernel (+ margins)


# ------------------------------------------------------------------ search / filter
@pytest.mark.slow
async def test_search_finds_and_n_cycles_matches():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    linear = {i for i in range(kt.n_events) if kt.name(i) == "aten::linear"}
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "linear")
        # 26 aten::linear cpu_ops; the 26+26 python_function rows with "linear" in their
        # names are hidden (python rows are hidden by default), so they do not match
        assert screen.matches.size == len(linear) == 26
        first = screen.current
        assert first in linear
        assert f"{len(linear)} matches" in screen_text(app)
        await press(pilot, "n")
        second = screen.current
        assert second in linear and screen.source.tree_position(second) > screen.source.tree_position(first)
        await press(pilot, "N")
        assert screen.current == first
        await press(pilot, "N")  # wraps to the last match
        assert screen.current == int(screen.matches[-1])
        # regex search
        await search(pilot, "/^aten::(mm|addmm)$/")
        assert screen.matches.size == 26
        assert kt.name(screen.current) == "aten::addmm"


async def test_filter_keeps_only_matching_subtrees():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        tree = screen.op_tree
        await search(pilot, "aten::gelu")
        rows_before = tree.row_count
        await press(pilot, "f")
        assert screen.source.filtered
        kt = screen.source.kt
        names = {kt.name(int(n)) for n in tree.visible_nodes if n < kt.n_events}
        assert "aten::slice" not in names and "aten::gelu" in names
        assert "FILTERED" in screen_text(app)
        await press(pilot, "f")
        assert not screen.source.filtered and tree.row_count >= rows_before


async def test_python_rows_toggle():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        tree = screen.op_tree
        visible = [int(n) for n in tree.visible_nodes if n < kt.n_events]
        assert all(kt.kind_of(n).name != "PYTHON" for n in visible)
        await press(pilot, "full_stop")
        assert not screen.source.hide_python
        shown = [int(n) for n in tree.visible_nodes if n < kt.n_events]
        assert any(kt.kind_of(n).name == "PYTHON" for n in shown)
        await pilot.resize_terminal(150, 24)  # the least important status part: shown when there is room
        await pilot.pause()
        assert "python shown" in screen_text(app)


# ------------------------------------------------------------------ screens
async def test_help_lists_the_live_bindings():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        await open_app(app, pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.plain_text()
        for needle in (">", "GPU event", "Launching op", "Search", "Longest child", "Quit",
                       "Zoom in (timeline)", "Later: next event on this lane"):
            assert needle in text, needle
        assert "Next match" not in text  # n/N do nothing before a search: help leaves them out (issue 45)
        assert "Browser" in screen_text(app)
        await press(pilot, "escape")
        assert isinstance(app.screen, MainScreen)
        await search(pilot, "aten::addmm")
        await press(pilot, "question_mark")
        assert "Next match" in app.screen.plain_text()
        await press(pilot, "escape")
        await press(pilot, "f1")
        assert isinstance(app.screen, HelpScreen)


@pytest.mark.slow
async def test_command_palette_offers_the_browser_actions():
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        titles = {c.title for c in app.get_system_commands(screen)}
        assert {"GPU event", "Launching op", "Search", "Filter", "Export"} <= titles
        await search(pilot, "aten::addmm")
        op = screen.current
        await press(pilot, "ctrl+p", *"GPU event", "enter")
        await pilot.pause()
        assert screen.current == int(screen.source.kt.gpu_events_of(op)[0])


async def test_bad_file_shows_the_error_dialog_and_exits_nonzero(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("hello, this is not a trace\n")
    app = TraceApp(use_cache=False, paths=[str(bad)])
    async with app.run_test(size=(80, 24)) as pilot:
        await error_dialog_shown(app, pilot)
        text = dialog_words(app)  # the message wraps where its path ends, which varies
        assert "Could not open the trace" in text
        assert "PyTorch profiler trace" in text
        assert app.screen.message == f"{bad}: {unknown_format_message()}"
        assert "Traceback" not in text
        await press(pilot, "escape")
    assert app.return_code == EXIT_LOAD_FAILED


async def test_error_dialog_opens_another_file(tmp_path):
    bad = tmp_path / "empty.json"
    bad.write_text("")
    app = TraceApp(use_cache=False, paths=[str(bad)])
    async with app.run_test(size=(80, 24)) as pilot:
        await error_dialog_shown(app, pilot)
        assert "empty" in screen_text(app)
        app.screen.query_one("#error-path").value = MI250
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert "mi250_minitoy_train.json.gz" in screen_text(app)
        await press(pilot, "q")
    assert app.return_code == 0


@pytest.mark.slow
async def test_markup_looking_names_render_verbatim(tmp_path):
    names = ["[bold red]aten::mm[/]", "[link=https://x]k[/link] kernel", "a\\[b]"]
    events = [
        {"ph": "X", "cat": "cpu_op", "name": names[0], "pid": 1, "tid": 1, "ts": 10.0, "dur": 50.0,
         "args": {"External id": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20.0, "dur": 5.0,
         "args": {"correlation": 99, "External id": 7}},
        {"ph": "X", "cat": "kernel", "name": names[1], "pid": 0, "tid": 7, "ts": 30.0, "dur": 8.0,
         "args": {"correlation": 99, "External id": 7, "device": 0, "stream": 7, "grid": [1, 1, 1],
                  "block": [32, 1, 1]}},
        {"ph": "X", "cat": "cpu_op", "name": names[2], "pid": 1, "tid": 1, "ts": 70.0, "dur": 5.0, "args": {}},
    ]
    path = tmp_path / "markup.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    app = TraceApp(use_cache=False, paths=[str(path)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::mm")
        await press(pilot, "greater_than_sign")
        text = screen_text(app)
        assert names[0] in text
        assert names[1] in text
        assert names[2] in text
        assert names[1] in screen.query_one(DetailPane).text()


async def test_warnings_screen_lists_link_warnings():
    pair = ET_DIR / "torch_cpu_pair_threads"
    app = TraceApp(use_cache=False, paths=[str(pair / "kineto.json.gz"), str(pair / "et.json.gz")])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        assert "1 warning (w)" in screen_text(app)
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        assert "495 ET ops have no Kineto event" in screen_text(app)
        await press(pilot, "escape")
        assert app.screen is screen


@pytest.mark.slow
async def test_et_pair_shows_et_ids_and_et_only_ops():
    pair = ET_DIR / "torch_cpu_pair_threads"
    app = TraceApp(use_cache=False, paths=[str(pair / "kineto.json.gz"), str(pair / "et.json.gz")])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        src = screen.source
        text = screen_text(app)
        assert "ET id" in text and "rf_id" in text and "ET-only ops" in text
        # the ET-only root lists the 3 side-thread roots, 165 ET-only ops each (495 in all)
        kids = src.child_nodes(src.et_root)
        assert [src.et_only_counts[int(k) - src.et_base] for k in kids] == [165, 165, 165]
        await search(pilot, "side_thread_forward")
        node = screen.current
        assert node >= src.et_base and src.et.name(node - src.et_base) == "side_thread_forward"
        detail = screen.query_one(DetailPane).text()
        assert "none (ET-only op)" in detail and "Execution Trace node" in detail
        # its op_schema, kernel_backend and kernel_file are "" in the file: no empty rows
        lines = [line.strip() for line in detail.splitlines()]
        assert not {"Schema", "kernel_backend", "kernel_file"} & set(lines), lines
        # a linked op shows its ET node and schema (search from the top: Kineto rows first)
        await press(pilot, "home")
        await search(pilot, "aten::addmm")
        k = screen.current
        assert k < src.kt.n_events
        pos = int(src.link.kineto_to_et[k])
        detail = screen.query_one(DetailPane).text()
        assert f"ET node {int(src.et.ids[pos])}" in detail
        assert "aten::addmm(Tensor self" in detail.replace("\n", "")  # schema from the ET
        assert "Inputs (ET)" in detail


@pytest.mark.slow
async def test_sample_pair_detail_has_et_tensor_table():
    app = TraceApp(use_cache=False, paths=[str(SAMPLES / "cpu_transformer_et.json.gz"),
                                           str(SAMPLES / "cpu_transformer_kineto.json.gz")])
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        detail = screen.query_one(DetailPane).text()
        for col in ("shape", "strides", "dtype", "device", "tensor", "storage", "bytes"):
            assert col in detail
        assert "float" in detail and "cpu" in detail


@pytest.mark.slow
async def test_export_key_writes_the_selected_subtree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        node = screen.current
        await press(pilot, "e")
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert int(screen.linked.kineto.external_id[node]) == 49  # the first addmm's External id, read from the file
    out = tmp_path / "aten_addmm-ext49.md"  # the default name: op name + External id
    assert out.exists()
    body = out.read_text()
    assert "aten::addmm" in body and "cutlass" in body


# ------------------------------------------------------------------ model adapter (no terminal)
def _source(name: str):
    from tracetui.session import LinkedTrace
    from tracetui.ui.view.trace_row_source import TraceRowSource

    return TraceRowSource(LinkedTrace(load_shared_kineto(name)))


@pytest.mark.parametrize("name", ["h100_bert_inference.json.gz", "mi300_resnet_train_checkpointing.json.gz"])
def test_vectorised_preorder_matches_the_model_walk(name):
    src = _source(name)
    kt = src.kt
    rng = np.random.default_rng(0)
    nodes = [lane.node for lane in kt.lanes] + rng.choice(kt.n_events, 200, replace=False).tolist()
    for node in nodes:
        if kt.parent[node] < 0 and node < kt.n_events:
            assert src.order.pre[node] == -1  # instants and other events outside the tree
            continue
        assert src.order.subtree(node).tolist() == kt.subtree(node).tolist()
        assert src.gpu_events(node).tolist() == kt.gpu_events_of(node).tolist()
    # the numbering is a permutation of the tree's nodes
    inside = np.flatnonzero(src.order.pre >= 0)
    assert np.array_equal(np.sort(src.order.pre[inside]), np.arange(inside.size))


def test_find_matches_a_brute_force_scan():
    src = _source("mi300_resnet_train_checkpointing.json.gz")
    kt = src.kt
    nodes, ranks = src.find("/^aten::(conv|cudnn)/")
    brute = [i for i in range(kt.n_events) if kt.parent[i] >= 0 and kt.kind[i] != 1
             and (kt.name(i).startswith("aten::conv") or kt.name(i).startswith("aten::cudnn"))]
    assert sorted(nodes.tolist()) == brute and len(brute) > 100
    assert np.all(np.diff(ranks) > 0)  # tree order
    with pytest.raises(ValueError, match="bad regular expression"):
        src.find("/(unclosed/")


def test_filter_keeps_ancestors_matches_and_their_subtrees():
    src = _source("h100_bert_inference.json.gz")
    kt = src.kt
    nodes, _ = src.find("aten::gelu")
    src.set_filter(nodes)
    keep = src._filter_k
    for n in nodes.tolist():
        assert keep[n] and all(keep[a] for a in kt.ancestors(n))
        assert all(keep[d] for d in kt.subtree(n).tolist())
    assert keep.sum() < kt.n_nodes / 5
    src.set_filter(None)
    assert not src.filtered


def test_jump_and_match_helpers():
    from tracetui.ui.view.jumps import JumpError, gpu_jump, launching_op, match_index

    src = _source("mi250_minitoy_train.json.gz")
    kt = src.kt
    op = int(src.find("aten::linear")[0][0])
    cyc = gpu_jump(src, op, None)
    first = cyc.target
    cyc = gpu_jump(src, first, cyc)
    assert [first, cyc.target] == kt.gpu_events_of(op).tolist()
    assert launching_op(src, cyc.target)[0] == kt.cpu_op_of[cyc.target]
    with pytest.raises(JumpError):
        launching_op(src, op)  # < needs GPU work
    ranks = np.array([1.0, 5.0, 9.0])
    assert match_index(ranks, 5.0, 1, inclusive=True) == 1
    assert match_index(ranks, 5.0, 1) == 2
    assert match_index(ranks, 9.0, 1) == 0  # wraps
    assert match_index(ranks, 1.0, -1) == 2


def test_gpu_events_without_a_launch_sit_under_their_stream():
    src = _source("h100_qwen_chat_inference.json.gz")
    kt = src.kt
    lane = next(ln for ln in kt.lanes if ln.is_gpu)
    kids = np.asarray(src.child_nodes(lane.node))
    orphans = kids[(kids < kt.n_events) & src.gpu_work[np.minimum(kids, kt.n_nodes - 1)]]
    assert orphans.size == 509  # 436 kernels + 73 memsets whose launch is not in the file
    assert np.all(kt.launch_of[orphans] == -1)
    from tracetui.ui.view.jumps import JumpError, launching_op

    with pytest.raises(JumpError, match="GPU-only"):
        launching_op(src, int(orphans[0]))


def test_status_line_says_when_the_pair_looks_like_different_runs():
    from shared_traces import ET_DIR

    from tracetui.session import load_pair
    from tracetui.ui.view.status_parts import trace_summary

    lt = load_pair(ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz",
                   ET_DIR / "param_linear_cuda_pair" / "kineto.json.gz")
    assert lt.link.stats.suspect_mismatch
    assert "different runs" in trace_summary(lt).plain


@pytest.mark.slow
async def test_detail_pane_scrolls_its_rendered_lines():
    """The detail pane renders only its visible lines: scrolling shows the end of a long detail."""
    app = TraceApp(use_cache=False, paths=[str(SAMPLES / "cpu_transformer_et.json.gz"),
                                          str(SAMPLES / "cpu_transformer_kineto.json.gz")])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        pane = screen.query_one(DetailPane)
        lines = [ln.rstrip() for ln in pane.text().splitlines() if ln.strip()]
        assert pane.virtual_size.height > pane.scrollable_content_region.height  # longer than the pane
        assert lines[-1] not in screen_text(app)
        pane.focus()
        await press(pilot, "end")
        # `end` scrolls with an animation; on a busy machine it outlasts one pause
        await pilot.wait_for_scheduled_animations()
        assert pane.scroll_offset.y == pane.max_scroll_y > 0
        assert lines[-1].strip() in screen_text(app)
        screen.op_tree.focus()  # a new selection starts the pane at its top
        await press(pilot, "j")
        assert pane.scroll_offset.y == 0
