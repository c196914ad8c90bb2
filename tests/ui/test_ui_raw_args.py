"""The raw-args panel (``a``, ui/detail/raw_args_screen.py): every arg of the selected event, folded
by level, NCCL collective args and hardware counter values included; ``c``/``C`` copy a value
or a name with App.copy_to_clipboard (OSC 52)."""

from __future__ import annotations

import numpy as np
from pilot import open_app, press, screen_text
from shared_traces import kineto_path, load_shared_kineto

from tracetui.kineto.kinds import Kind
from tracetui.ui.app import TraceApp
from tracetui.ui.detail.raw_args_screen import RawArgsScreen, RawArgsTree
from tracetui.ui.view.raw_args import event_sections


def _find(tree: RawArgsTree, name: str):
    for node in tree.root.children:
        for child in node.children:
            if child.data is not None and child.data[1] == name:
                return child
    raise AssertionError(name)


def test_sections_of_an_nccl_kernel_and_a_counter_range():
    # b200x8_eager: the AllGather kernel carries the collective's args (read from the file)
    kt = load_shared_kineto("b200x8_eager.json.gz")
    k = next(i for i in np.flatnonzero(kt.kind == int(Kind.KERNEL)).tolist()
             if kt.name(i).startswith("ncclDevKernel_AllGather_RING_LL"))
    sections = dict(event_sections(kt, k))
    args = sections["args"]
    assert (args["Collective name"], args["In msg nelems"], args["Out msg nelems"], args["Group size"]) == \
        ("_allgather_base", 25136, 201088, 8)
    assert args["Process Group Ranks"] == "[0, 1, 2, 3, 4, 5, 6, 7]"
    assert any(t.startswith("launch call args") for t in sections)
    # a100_cupti_counters: 77 cuda_profiler_range events hold the hardware counters as args
    kc = load_shared_kineto("a100_cupti_counters.json.gz")
    ranges = [i for i in range(kc.n_events) if kc.category(i) == "cuda_profiler_range"]
    assert len(ranges) == 77
    counters = dict(event_sections(kc, ranges[0]))["args"]
    assert counters["smsp__sass_thread_inst_executed_op_dadd_pred_on.sum"] == 0


async def test_a_opens_every_arg_and_c_copies_value_and_name():
    app = TraceApp([str(kineto_path("h100_bert_inference.json.gz"))], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await press(pilot, "slash", *"aten::addmm", "enter", "greater_than_sign")
        kernel = main.current
        assert main.linked.kineto.name(kernel).startswith("void cutlass::Kernel2<cutlass_80_wmma")
        await press(pilot, "a")
        assert isinstance(app.screen, RawArgsScreen), screen_text(app)
        text = screen_text(app)
        assert "registers per thread  88" in text and "launch call args (cuLaunchKernel)" in text
        tree = app.screen.query_one(RawArgsTree)
        node = _find(tree, "registers per thread")
        tree.move_cursor(node)
        await press(pilot, "c")
        assert app.clipboard == "88"
        await press(pilot, "C")
        assert app.clipboard == "registers per thread"
        tree.move_cursor(_find(tree, "grid"))
        await press(pilot, "c")
        assert app.clipboard == "[40, 2, 1]"
        # a section folds and unfolds
        args = next(n for n in tree.root.children if n.data[0] == "args")
        tree.move_cursor(args)
        await press(pilot, "space")
        assert not args.is_expanded
        await press(pilot, "escape")
        assert app.screen is main
