"""What the op tree fits on screen: the maximised tree (m) keeps every metric column,
long shared name prefixes are abbreviated so the distinctive tail shows (the detail
pane and search keep the full name), and id columns are never cut.

Facts checked against the torch_cpu_pair ET pair (read from the trace in each test):
Kineto op ``train_step_1`` lasts 12.9 ms and links to ET node 1850 with rf_id 1189;
``autograd::engine::evaluate_function: AddmmBackward0`` occurs in it.
"""

from __future__ import annotations

import numpy as np
import pytest
from pilot import open_app, press, screen_text, search
from rich.text import Text
from shared_traces import ET_DIR, load_shared_kineto, load_shared_pair

from tracetui.ui.app import TraceApp
from tracetui.ui.detail.detail_pane import DetailPane
from tracetui.ui.view.label_short import SHORT_PREFIXES, shorten_label
from tracetui.ui.view.trace_row_source import id_column_width
from tracetui.units import format_duration_us

PAIR = ET_DIR / "torch_cpu_pair"
HEADERS = ("Wall", "GPU", "#GPU", "ET id", "rf_id")
EVAL = "autograd::engine::evaluate_function: "


def pair_app() -> TraceApp:
    return TraceApp(paths=[str(PAIR / "et.json.gz"), str(PAIR / "kineto.json.gz")], use_cache=False)


def first_node_named(kt, name: str) -> int:
    return next(i for i in range(kt.n_events) if kt.name(i) == name)


def tree_lines(app) -> list[str]:
    """The op tree's lines as painted (header first)."""
    tree = app.screen.op_tree
    lines = screen_text(app).splitlines()
    top = tree.region.y
    return [line[tree.region.x: tree.region.right] for line in lines[top: top + tree.region.height]]


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_maximised_tree_keeps_every_metric_column(size):
    linked = load_shared_pair("torch_cpu_pair")
    kt, link, et = linked.kineto, linked.link, linked.et
    step = first_node_named(kt, "train_step_1")
    pos = int(link.kineto_to_et[step])
    assert (int(et.ids[pos]), int(et.rf_id[pos])) == (1850, 1189)  # read from the trace
    wall = format_duration_us(float(kt.dur[step]))
    assert wall == "12.9ms"
    app = pair_app()
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tree = screen.op_tree
        tree.focus()
        tree.select_node(step)
        await pilot.pause()
        normal_header = tree_lines(app)[0]
        normal = [h for h in HEADERS if h in normal_header]
        await press(pilot, "m")
        assert screen.maximized is tree
        assert tree.region.width == size[0]  # the whole screen, not 3fr of it
        lines = tree_lines(app)
        for head in HEADERS:
            assert head in lines[0], lines[0]
        assert normal  # the normal layout shows columns too; maximised shows all of them
        row = next(line for line in lines if "train_step_1" in line)
        assert row.split()[-3:] == [wall, "1850", "1189"], row
        await press(pilot, "m")
        assert screen.maximized is None
        assert tree_lines(app)[0] == normal_header


@pytest.mark.slow
async def test_eval_function_prefix_is_abbreviated_in_the_tree_not_in_detail_or_search():
    kt = load_shared_pair("torch_cpu_pair").kineto
    full = EVAL + "AddmmBackward0"
    addmm_bwd = first_node_named(kt, full)
    app = pair_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tree = screen.op_tree
        tree.focus()
        tree.select_node(addmm_bwd)
        await pilot.pause()
        assert screen.current == addmm_bwd
        row = tree_lines(app)[tree.cursor_row - tree.scroll_offset.y + 1]
        assert "eval_fn: AddmmBackward0" in row, row
        assert "evaluate_function" not in row
        detail = " ".join(screen.query_one(DetailPane).text().split())
        assert full in detail
        # maximised there is room for the full name: nothing is abbreviated
        await press(pilot, "m")
        row = tree_lines(app)[tree.cursor_row - tree.scroll_offset.y + 1]
        assert full in row, row
        await press(pilot, "m")
        # search matches the full name, not the drawn one
        await press(pilot, "g")
        await search(pilot, "evaluate_function")
        found = screen.current
        assert kt.name(found).startswith(EVAL)
        row = tree_lines(app)[tree.cursor_row - tree.scroll_offset.y + 1]
        assert "eval_fn: " + kt.name(found)[len(EVAL):][:8] in row, row


def test_short_prefix_rule_keeps_the_distinctive_tail_of_every_backward_op():
    # mi250_minitoy_train has 5 distinct evaluate_function names (read from the trace).
    kt = load_shared_kineto("mi250_minitoy_train.json.gz")
    names = sorted({nm for nm in kt.names if nm.startswith(EVAL)})
    assert len(names) == 5
    for name in names:
        label = Text(name, style="cyan")
        short = shorten_label(label, 24)
        tail = name[len(EVAL):].removeprefix("torch::autograd::")
        assert short.plain.startswith("eval_fn: ") and short.plain.endswith(tail)
        assert short.plain.index(tail) <= len("eval_fn: …")
        assert shorten_label(label, len(name)) is label  # fits: unchanged
    assert shorten_label(Text(EVAL + "torch::autograd::AccumulateGrad"), 10).plain == "eval_fn: …AccumulateGrad"
    assert shorten_label(Text("aten::addmm"), 5).plain == "aten::addmm"  # no known prefix: the caller cuts it
    assert all(short and len(short) < len(prefix) for prefix, short in SHORT_PREFIXES)


def test_id_columns_fit_the_largest_id():
    assert id_column_width(np.array([1850, 4917])) == 7
    assert id_column_width(np.array([3, 123_456_789]), marks=1) == 10  # "123456789~"
    assert id_column_width(np.array([-12_345_678])) == 9
    assert id_column_width(np.empty(0, dtype=np.int64)) == 7
