"""SVG snapshots of the browser's main views at 80x24 and 120x40 (pytest-textual-snapshot).

Update the baselines with ``pytest tests/ui/test_ui_snapshots.py --snapshot-update`` and look
at them (e.g. ``rsvg-convert FILE.svg -o FILE.png``) before committing.  Views are
deterministic: fixed trace files, no clocks on screen, status line names files by basename.
"""

from __future__ import annotations

import pytest
from pilot import BERT, SIZES, loaded
from shared_traces import SAMPLES

from tracetui.ui.app import TraceApp


def bert() -> TraceApp:
    return TraceApp([BERT], use_cache=False)


@pytest.mark.parametrize("size", SIZES)
def test_main_view(snap_compare, size):
    assert snap_compare(bert(), terminal_size=size, run_before=loaded)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_jump_to_gpu_kernel(snap_compare, size):
    keys = ["slash", *"aten::addmm", "enter", "greater_than_sign"]
    assert snap_compare(bert(), press=keys, terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", SIZES)
def test_search_next_match(snap_compare, size):
    keys = ["slash", *"linear", "enter", "n"]
    assert snap_compare(bert(), press=keys, terminal_size=size, run_before=loaded)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare, size):
    assert snap_compare(bert(), press=["question_mark"], terminal_size=size, run_before=loaded)


@pytest.mark.slow
def test_et_pair_view(snap_compare):
    app = TraceApp([str(SAMPLES / "cpu_transformer_kineto.json.gz"), str(SAMPLES / "cpu_transformer_et.json.gz")],
                   use_cache=False)
    keys = ["slash", *"aten::addmm", "enter"]
    assert snap_compare(app, press=keys, terminal_size=(120, 40), run_before=loaded)


def test_error_dialog(snap_compare):
    app = TraceApp(["no-such-trace.json.gz"], use_cache=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)
