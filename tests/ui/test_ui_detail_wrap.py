"""The detail pane never loses a character (issue 11, item 4), on real shared traces.

The tensor: ET node 1450 (``aten::_convolution``, the first ResNet conv) in
``et_only/resnet_1gpu_schema_1.0.3`` has input 0 = float [32, 3, 224, 224] on cuda:0:
32*3*224*224 = 4,816,896 elements * 4 bytes = 19,267,584 B (read from the file).
"""

from __future__ import annotations

import io

import pytest
from pilot import (
    BERT,
    CONV_BYTES,
    CONV_ET_ID,
    RESNET_ET,
    open_app,
    pane_lines,
    press,
    screen_text,
    scroll_to_bytes,
    show_conv,
)
from shared_traces import load_shared_kineto

from tracetui.kineto.kinds import Kind
from tracetui.ui.app import TraceApp
from tracetui.ui.view.keep_text import KeepText


def test_conv_input_is_the_known_byte_count():
    from tracetui.et import load_et

    et = load_et(RESNET_ET)
    pos = next(i for i in range(len(et.ids)) if int(et.ids[i]) == CONV_ET_ID)
    t = et.node(pos).inputs[0].value
    assert (t.shape, t.dtype, t.itemsize, t.device) == ((32, 3, 224, 224), "float", 4, "cuda:0")
    assert f"{t.nbytes:,} B" == CONV_BYTES == "19,267,584 B"


@pytest.mark.slow
async def test_byte_count_whole_on_screen_at_80x24_and_maximised():
    app = TraceApp(paths=[RESNET_ET], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await show_conv(app, pilot)
        pane = screen.detail
        assert pane.virtual_size.height > pane.scrollable_content_region.height  # vertical scrollbar shown
        # every rendered line fits beside the scrollbar: nothing is drawn under it
        assert pane.virtual_size.width <= pane.scrollable_content_region.width
        await scroll_to_bytes(pilot, pane)
        assert CONV_BYTES in "\n".join(pane_lines(app, pane))
        assert CONV_BYTES in screen_text(app)
        pane.focus()
        await press(pilot, "m")
        assert screen.maximized is pane
        await scroll_to_bytes(pilot, pane)
        text = screen_text(app)
        assert CONV_BYTES in text and "102,760,448 B" in text  # input 0 and the output [32, 64, 112, 112]
        assert pane.virtual_size.width <= pane.scrollable_content_region.width


@pytest.mark.slow
async def test_narrow_detail_keeps_number_and_unit_together():
    # 120 columns: tree and detail side by side; the detail is narrower than the table
    # layout, so each tensor is one wrapped line; the byte count never splits from "B".
    app = TraceApp(paths=[RESNET_ET], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await show_conv(app, pilot)
        pane = screen.detail
        assert pane.scrollable_content_region.width < 72
        await scroll_to_bytes(pilot, pane)
        assert CONV_BYTES in screen_text(app)
        assert not any(s.text.rstrip().endswith("19,267,584") for s in pane._lines)


def test_keep_text_wraps_between_tokens_not_inside_them():
    from rich.console import Console
    from rich.text import Text

    console = Console(width=20, file=io.StringIO(), color_system=None)
    for text, token, width in (("cuda:0 19,267,584 B", "19,267,584 B", 17), ("aten::mul 1.5 ms ext 420", "ext 420",
                                                                             21)):
        plain_rich = [str(line) for line in Text(text).wrap(console, width)]
        assert not any(token in p for p in plain_rich)  # plain Rich splits the token here
        kept = [str(line) for line in KeepText(text).wrap(console, width)]
        assert all(len(p) <= width for p in kept)
        assert any(token in p for p in kept)


async def test_long_kernel_name_is_shown_whole_at_80x24():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    kernels = [i for i in range(kt.n_events) if kt.kind_of(i) == Kind.KERNEL]
    k = max(kernels, key=lambda i: len(kt.name(i)))
    name = kt.name(k)
    assert len(name) == 495 and name.startswith("void at::native::reduce_kernel<512, 1,")
    app = TraceApp(paths=[BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        screen.select(k)
        await pilot.pause()
        pane = screen.detail
        pane.focus()
        await press(pilot, "m")  # maximised: the whole name fits on screen
        squeeze = "".join("".join(pane_lines(app, pane)).split())
        assert "".join(name.split()) in squeeze
        assert pane.virtual_size.width <= pane.scrollable_content_region.width  # wrapped, not cut


@pytest.mark.slow
async def test_every_detail_fits_beside_its_scrollbar_while_walking_the_tree():
    # bert at both layouts: 80x24 (detail below the tree) and 120x40 (side by side, ~45 cells).
    # Whether or not a row's detail needs the vertical scrollbar, no line is wider than the
    # cells left beside it (before the fix, lines were cut by the scrollbar's 2 cells).
    for size in ((80, 24), (120, 40)):
        app = TraceApp(paths=[BERT], use_cache=False)
        async with app.run_test(size=size, notifications=True) as pilot:
            screen = await open_app(app, pilot)
            await press(pilot, "asterisk")  # expand the subtree: op, runtime and kernel rows
            pane, scrolled, seen = screen.detail, 0, set()
            for _ in range(60):
                await press(pilot, "j")
                seen.add(screen.source.kt.kind_of(screen.current).name if screen.source.is_kineto(screen.current)
                         and screen.current < screen.source.kt.n_events else "lane")
                assert pane.virtual_size.width <= pane.scrollable_content_region.width, screen.current
                scrolled += pane.virtual_size.height > pane.scrollable_content_region.height
            assert scrolled > 0 and {"CPU_OP", "RUNTIME", "KERNEL"} <= seen, seen


async def test_table_narrower_than_its_minimum_scrolls_sideways_instead_of_cutting():
    # The conv's tensor table rendered into 40 cells: its minimum (whole ids, dtypes, byte
    # counts) is wider, so it is rendered at that minimum and the pane would scroll sideways;
    # the prose around it still wraps at 40.
    app = TraceApp(paths=[RESNET_ET], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await show_conv(app, pilot)
        lines, width = screen.detail._render_at(40)
        texts = ["".join(seg.text for seg in line).rstrip() for line in lines]
        assert width > 40
        row = next(t for t in texts if CONV_BYTES in t)
        assert row.split()[:3] == ["0", "[32,", "float"] and row.split()[-4:] == ["1443", "1444", "19,267,584", "B"]
        assert all(len(t) <= 40 for t in texts if t.startswith(("Schema", "   ")))


async def test_maximised_detail_fills_the_wide_screen():
    # 120 columns: the detail's 2fr width was read against the whole screen when maximised
    # (240 cells), drawing its right part off the edge.
    app = TraceApp(paths=[RESNET_ET], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await show_conv(app, pilot)
        pane = screen.detail
        pane.focus()
        await press(pilot, "m")
        assert screen.maximized is pane
        assert pane.region.width == 120
        await scroll_to_bytes(pilot, pane)
        assert CONV_BYTES in screen_text(app)
