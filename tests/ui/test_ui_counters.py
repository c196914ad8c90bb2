"""Counters in the browser (issue 18): a100_cupti_counters' 77 CUPTI profiler ranges show
their hardware counters in the detail pane and as counter tracks in the timeline; an
unknown category is named on the ``w`` screen.

Values read from the file with a json script: the range ``__missing__`` (the second
range, ts 1679055454166485) has ``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`` =
9119334400 and ``..._fmul_pred_on.sum`` = 24780800; ffma over all 77 ranges sums to
39142369720.
"""

from __future__ import annotations

import gzip
import json

import pytest
from pilot import open_app, press, screen_text
from shared_traces import kineto_path, load_shared_kineto

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.warnings_screen import WarningsScreen
from tracetui.ui.detail.detail_pane import DetailPane
from tracetui.ui.view.counter_track import CounterTrack

CUPTI = str(kineto_path("a100_cupti_counters.json.gz"))


async def test_cupti_range_counters_in_detail_and_timeline():
    kt = load_shared_kineto("a100_cupti_counters.json.gz")
    missing = [i for i in range(kt.n_events) if kt.name(i) == "__missing__"]
    assert len(missing) == 1
    app = TraceApp(use_cache=False, paths=[CUPTI])
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_app(app, pilot)
        screen.select(missing[0])
        await pilot.pause()
        detail = screen.query_one(DetailPane).text()
        assert "Counters (9 counters over this range)" in detail
        assert "ffma" in detail and "fmul" in detail
        assert "9,119,334,400" in detail and "24,780,800" in detail
        assert "23.3% of its total" in detail  # 9119334400 / 39142369720 of all ffma
        tracks = [ln for ln in screen.timeline.tracks if isinstance(ln, CounterTrack)]
        assert len(tracks) == 9 and sum(t.starts.size for t in tracks) == 693
        assert tracks[7].series == "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
        assert "ffma_pred" in screen_text(app)  # the track's label (common prefix dropped)


def test_counter_lane_levels():
    import numpy as np

    lane = CounterTrack("x", np.array([0.0, 10.0, 20.0]), np.array([10.0, 20.0, 30.0]), values=np.array([8.0, 0.0,
                                                                                                         4.0]))
    assert lane.cell_levels(np.linspace(0.0, 30.0, 4)).tolist() == [8, 0, 4]
    assert lane.cell_levels(np.linspace(0.0, 30.0, 2)).tolist() == [8]


async def test_unknown_category_is_named_on_the_warnings_screen(tmp_path):
    doc = json.loads(gzip.open(kineto_path("a100_triton.json.gz")).read())
    for k in range(3):
        doc["traceEvents"].append({"ph": "X", "cat": "npu_mystery", "name": f"m{k}", "pid": 1, "tid": 1,
                                   "ts": doc["traceEvents"][0]["ts"], "dur": 1.0})
    p = tmp_path / "unknown_cat.json"
    p.write_text(json.dumps(doc))
    app = TraceApp(use_cache=False, paths=[str(p)])
    async with app.run_test(size=(120, 40)) as pilot:
        await open_app(app, pilot)
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        assert "3 events of category 'npu_mystery'" in screen_text(app)


@pytest.mark.slow
async def test_mtia_device_event_detail_names_its_launch_and_device():
    kt = load_shared_kineto("mtia_inference_rank0.json.gz")
    merge = next(i for i in range(kt.n_events) if kt.name(i) == "merge" and kt.launch_of[i] >= 0)
    app = TraceApp(use_cache=False, paths=[str(kineto_path("mtia_inference_rank0.json.gz"))])
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_app(app, pilot)
        screen.select(merge)
        await pilot.pause()
        detail = screen.query_one(DetailPane).text()
        assert "mtia_ccp_events" in detail and "runFunction" in detail
        assert "Device       17" in detail
        lane = kt.lanes[int(kt.lane_of[merge])]
        assert lane.label.startswith(lane.short + " (MTIA 17") and lane.short.startswith("Stream 1")
        assert [ln.label for ln in screen.timeline.tracks][:2] == ["Stream 101", "Stream 102"]
        assert lane.short in screen_text(app)  # the timeline's row, named as the tree names the lane
