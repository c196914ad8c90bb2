"""SVG snapshots of a driver-call trace in the browser (pytest-textual-snapshot): the tree
with a kernel launch record's detail (grid, block, threads), at 80x24 and 120x40.

The file is written by tests/driver_ui_files.py (its name, trace_cuda.jsonl, is on screen);
update the baselines with ``pytest tests/ui/test_ui_driver_snapshots.py --snapshot-update``
and look at them before committing."""

from __future__ import annotations

import pytest
from driver_ui_files import write_bpftrace
from pilot import SIZES, loaded

from tracetui.ui.app import TraceApp


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_driver_trace_launch_detail(snap_compare, size, tmp_path):
    app = TraceApp([str(write_bpftrace(tmp_path / "trace_cuda.jsonl"))], use_cache=False)
    keys = ["slash", *"kernel launch", "enter"]
    assert snap_compare(app, press=keys, terminal_size=size, run_before=loaded)
