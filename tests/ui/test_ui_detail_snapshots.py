"""SVG snapshots of the detail pane's ET tensor table (pytest-textual-snapshot), own baselines.

The ResNet conv (ET node 1450, ``resnet_1gpu_schema_1.0.3``) has input 0 of 19,267,584 B
(float [32, 3, 224, 224]); the pane is scrolled so that row is on screen, at 80x24 and with
the detail maximised.  Update with ``pytest tests/ui/test_ui_detail_snapshots.py --snapshot-update``
and look at the SVGs.
"""

from __future__ import annotations

import pytest
from pilot import CONV_BYTES, RESNET_ET, press, screen_text, scroll_to_bytes, show_conv

from tracetui.ui.app import TraceApp


def resnet() -> TraceApp:
    return TraceApp([RESNET_ET], use_cache=False)


async def conv_table(pilot) -> None:
    screen = await show_conv(pilot.app, pilot)
    await scroll_to_bytes(pilot, screen.detail)
    assert CONV_BYTES in screen_text(pilot.app)


async def conv_table_maximised(pilot) -> None:
    screen = await show_conv(pilot.app, pilot)
    screen.detail.focus()
    await press(pilot, "m")
    await scroll_to_bytes(pilot, screen.detail)
    assert CONV_BYTES in screen_text(pilot.app)


@pytest.mark.slow
def test_tensor_table_80x24(snap_compare):
    assert snap_compare(resnet(), terminal_size=(80, 24), run_before=conv_table)


@pytest.mark.slow
def test_tensor_table_maximised(snap_compare):
    assert snap_compare(resnet(), terminal_size=(80, 24), run_before=conv_table_maximised)
