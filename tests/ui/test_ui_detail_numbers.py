"""Detail numbers that must not mislead (issue 11, item 9), on real shared traces."""

from __future__ import annotations

import pytest
from pilot import BERT, open_app, press, screen_text, search
from shared_traces import kineto_path, load_shared_kineto

from tracetui.kineto.kinds import Kind
from tracetui.ui.app import TraceApp

MI210 = str(kineto_path("mi210_gpu_only.json.gz"))
MI300 = str(kineto_path("mi300_resnet_train_checkpointing.json.gz"))
V100_OLD = str(kineto_path("v100_old_flow_format_cudagraph.json.gz"))


def kernels_launched_by(name: str, launch: str, trace: str) -> list[int]:
    kt = load_shared_kineto(trace)
    return [i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL and kt.name(i) == name
            and int(kt.launch_of[i]) >= 0 and kt.name(int(kt.launch_of[i])) == launch]


async def detail_of(path: str, node: int, size=(120, 40)) -> str:
    app = TraceApp(paths=[path], use_cache=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_app(app, pilot)
        screen.select(node)
        await pilot.pause()
        return " ".join(screen.detail.text().split())  # wrapped lines joined, spaces collapsed


async def test_amd_work_item_grid_is_shown_with_its_blocks():
    # mi210: SubTensorOpWithScalar1d via hipExtModuleLaunchKernel has grid [65536, 1, 1] and
    # block [256, 1, 1] (read from the file): 65536 work-items = 256 blocks of 256.
    kt = load_shared_kineto("mi210_gpu_only.json.gz")
    k = kernels_launched_by("SubTensorOpWithScalar1d", "hipExtModuleLaunchKernel", "mi210_gpu_only.json.gz")[0]
    assert (kt.args(k)["grid"], kt.args(k)["block"]) == ([65536, 1, 1], [256, 1, 1])
    text = await detail_of(MI210, k)
    assert "Grid (work-items) 65536 × 1 × 1" in text
    assert "hipExtModuleLaunchKernel gives the grid in work-items, not blocks" in text
    assert "Blocks 256 × 1 × 1 (work-items ÷ block)" in text
    # a hipLaunchKernel grid is already in blocks: shown as given
    hip = next(i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL and int(kt.launch_of[i]) >= 0
               and kt.name(int(kt.launch_of[i])) == "hipLaunchKernel" and "grid" in kt.args(i))
    text = await detail_of(MI210, hip)
    assert "work-items" not in text and f"Grid {' × '.join(map(str, kt.args(hip)['grid']))}" in text


async def test_amd_partial_last_block_is_rounded_up():
    # mi300: MIOpen transpose_NCHW2CNHW_V2_2D_WG_off64 has grid [784, 1, 64], block [256, 1, 1]:
    # 784 work-items in x need 4 blocks (the last one partial).
    kt = load_shared_kineto("mi300_resnet_train_checkpointing.json.gz")
    k = next(i for i in kernels_launched_by("transpose_NCHW2CNHW_V2_2D_WG_off64", "hipExtModuleLaunchKernel",
                                            "mi300_resnet_train_checkpointing.json.gz")
             if kt.args(i)["grid"] == [784, 1, 64])
    assert kt.args(k)["block"] == [256, 1, 1]
    text = await detail_of(MI300, k)
    assert "Blocks 4 × 1 × 64 (work-items ÷ block, rounded up)" in text


@pytest.mark.slow
async def test_blocks_and_warps_per_sm_share_a_format_and_occupancy_names_kineto():
    # v100 old trace, the first aten::fill_ kernel: blocks per SM 1106.2125, warps per SM 4424.85,
    # est. achieved occupancy % 100 (read from the file).
    kt = load_shared_kineto("v100_old_flow_format_cudagraph.json.gz")
    k = next(i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL
             and kt.args(i).get("blocks per SM") == 1106.2125)
    assert kt.args(k)["warps per SM"] == 4424.85 and kt.args(k)["est. achieved occupancy %"] == 100
    text = await detail_of(V100_OLD, k)
    assert "Blocks/SM 1,106.2125" in text and "Warps/SM 4,424.85" in text
    assert "Occupancy 100 % (Kineto's estimate)" in text and "Est. occupancy" not in text


async def test_old_trace_external_id_equal_to_correlation_is_not_the_op_id():
    # v100_old_flow_format: every GPU event's External id equals its correlation; the kernel
    # above is launched by aten::fill_ whose External id is 164 (read from the file).
    kt = load_shared_kineto("v100_old_flow_format_cudagraph.json.gz")
    k = next(i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL
             and kt.args(i).get("blocks per SM") == 1106.2125 and kt.name(int(kt.cpu_op_of[i])) == "aten::fill_")
    op, launch = int(kt.cpu_op_of[k]), int(kt.launch_of[k])
    assert kt.name(op) == "aten::fill_" and int(kt.external_id[op]) == 164
    assert int(kt.external_id[k]) == int(kt.correlation[k]) == 1937342 == int(kt.external_id[launch])
    text = await detail_of(V100_OLD, k)
    assert ("External id 1937342 (equals the correlation, as in older traces: not the launching op's External id)"
            in text)
    assert "ext 1937342" not in text  # the launch call line does not claim it either
    assert "ext 164" in text  # the op's own External id is shown on its line


async def test_modern_trace_external_id_is_plain():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    k = next(i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL and int(kt.cpu_op_of[i]) >= 0)
    ext = int(kt.external_id[k])
    assert ext == int(kt.external_id[int(kt.cpu_op_of[k])]) != int(kt.correlation[k])
    text = await detail_of(BERT, k)
    assert f"External id {ext} " in text and "equals the correlation" not in text


@pytest.mark.slow
async def test_escape_clears_the_stale_search_note():
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        assert "/ match 1 of 26" in screen.detail.text() and "/ match 1 of 26" in screen_text(app)
        node = screen.current
        await press(pilot, "escape")
        assert screen.query_text is None and screen.current == node
        assert "/ match" not in screen.detail.text() and "/ match" not in screen_text(app)
        assert "aten::addmm" in screen.detail.text()  # still the same selection
