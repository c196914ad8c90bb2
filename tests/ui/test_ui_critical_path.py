"""The critical path in the browser (issue 28): ``P`` computes the path of the step under the
cursor in a worker and shows the path screen; its views (segments in time order, by kind,
least slack); Enter goes to a segment's event; the Path column, the timeline marks and the
slack in the detail pane; ``n``/``N`` walk the path from the main screen until a search takes
them back; Esc clears; in a job, a segment of another rank shows that rank.

The written traces (tests/critical_traces.py) have paths known by construction; on the shared
BERT trace the window is ``ProfilerStep#6``, whose span is read from the raw file.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os

import numpy as np
import pytest
from critical_traces import gpu_bound, host_sync
from pilot import BERT, SIZES, loaded, open_app, press, screen_text
from shared_traces import SHARED

from tracetui.critical import critical_path, step_window
from tracetui.kineto import load_kineto
from tracetui.ui.app import MainScreen, TraceApp
from tracetui.ui.critical.critical_path_screen import CriticalPathScreen
from tracetui.ui.timeline.timeline_strip import MARK_IDLE
from tracetui.ui.view.path_marks import PathMarks, PathState
from tracetui.ui.view.path_rows import KindRows, SegmentRows, SlackRows, header_lines, path_tracks


async def path_screen(app, pilot, timeout: float = 60.0) -> CriticalPathScreen:
    """Press P and wait for the path screen."""
    await press(pilot, "P")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline and not isinstance(app.screen, CriticalPathScreen):
        await app.workers.wait_for_complete()
        await pilot.pause()
        await asyncio.sleep(0.02)
    assert isinstance(app.screen, CriticalPathScreen), screen_text(app)
    await pilot.pause()
    return app.screen


def _names(kt, cp) -> list[str]:
    return [kt.name(int(e)) if e >= 0 else "" for e in cp.segments.event.tolist()]


# ---------------------------------------------------------------------- headless models
def test_path_models_of_a_written_trace(tmp_path):
    """host_sync: 12 segments known by construction (tests/critical_traces.py)."""
    p, want = host_sync(tmp_path)
    kt = load_kineto(p)
    cp = critical_path(kt, step_window(kt, 1))
    state = PathState(cp)
    rows = SegmentRows(cp, lambda r, e: kt.name(e))
    assert rows.root_nodes().tolist() == list(range(12))
    assert [rows.row_label(i).plain for i in range(12)] == [n for _k, n, _d in want["segments"]]
    assert rows.row_columns(3) == ["+30.0µs", "400µs", "80.0 %", "gpu"]  # gemm at 30 µs: 400 of 500 µs
    assert rows.row_columns(6)[3] == "sync"
    kinds = KindRows(cp, lambda r, e: kt.name(e))
    assert [kinds.row_label(int(n)).plain for n in kinds.root_nodes()] == ["gpu", "host", "launch_delay", "sync_wait",
                                                                         "gpu_gap"]
    assert kinds.row_columns(int(kinds.root_nodes()[0]))[1:] == ["404µs", "80.8 %", "gpu"]
    host = int(kinds.root_nodes()[1])
    groups = kinds.child_nodes(host)
    assert kinds.row_label(int(groups[0])).plain == "ProfilerStep#1 ×3"  # 10 + 10 + 20 µs, the largest host name
    segs = kinds.child_nodes(int(groups[0]))
    assert len(segs) == 3 and (np.diff(cp.segments.start_us[segs]) > 0).all()  # in time order
    assert all(kinds.parent_of(int(s)) == int(groups[0]) for s in segs)
    slack = SlackRows(cp, lambda r, e: kt.name(e))
    assert slack.rows.size and (np.diff(cp.slack.slack_us[slack.rows]) >= 0).all()
    assert [t.label for t in path_tracks(cp)] == ["gpu", "host", "launch", "sync", "gpu gap"]
    assert header_lines(cp, False)[0].plain == ("Critical path of ProfilerStep#1 (step): 500µs from the window start "
                                                "to the end of its last event")
    # the tree's Path column: the step holds the whole path; the sync call its wait
    marks = PathMarks(state, kt)
    names = [kt.name(i) for i in range(kt.n_events)]
    assert marks.column(names.index("ProfilerStep#1")) == "●500µs"
    assert marks.column(names.index("cudaStreamSynchronize")) == "●4.00µs"
    # gemm's launch: a node of the path; under it (as in the GPU column) its kernel's delay and run
    assert marks.column(names.index("cudaLaunchKernel")) == "●410µs"
    stream = kt.n_events + int(kt.lane_of[names.index("gemm")])
    assert marks.column(stream) == "416µs"  # a stream's row: the path's time of its GPU events
    lanes, starts, ends = marks.ranges()
    gemm = names.index("gemm")
    assert float(starts[3]) == pytest.approx(float(kt.ts[gemm])) and int(lanes[3]) == int(kt.lane_of[gemm])


def test_walking_the_path_passes_over_rows_it_is_on(tmp_path):
    p, _ = gpu_bound(tmp_path)
    kt = load_kineto(p)
    cp = critical_path(kt, step_window(kt, 1))
    state = PathState(cp)
    names = [kt.name(i) for i in range(kt.n_events)]

    def row(rank, ev):
        return ev

    here = (-1, names.index("ProfilerStep#1"), 0.0)
    # segments: step, op1, launch gemm_a, gemm_a, gap gemm_b, gemm_b, gap relu_c, relu_c
    i = state.step(1, here, row)
    assert names[int(cp.segments.event[i])] == "aten::op1"
    here = (-1, names.index("aten::op1"), float(kt.ts[names.index("aten::op1")]))
    i = state.step(1, here, row)
    assert (i, names[int(cp.segments.event[i])]) == (2, "gemm_a")  # its launch delay, then its run: one row
    here = (-1, names.index("gemm_a"), 0.0)
    assert names[int(cp.segments.event[state.step(1, here, row)])] == "gemm_b"
    here = (-1, names.index("gemm_b"), 0.0)
    assert names[int(cp.segments.event[state.step(1, here, row)])] == "relu_c"
    assert state.step(1, (-1, names.index("relu_c"), 0.0), row) is None  # the end
    assert names[int(cp.segments.event[state.step(-1, (-1, names.index("relu_c"), 0.0), row)])] == "gemm_b"


async def test_timeline_marks_lie_under_the_highlights():
    """A marked range (the path) colours busy cells and draws idle ones as MARK_IDLE; the
    selection's highlight wins where both fall."""
    from textual.app import App

    from tracetui.ui.timeline.timeline_strip import TimelineStrip
    from tracetui.ui.view.track import Track

    class One(App):
        def compose(self):
            yield TimelineStrip([Track("s", np.array([0.0, 600.0]), np.array([400.0, 1000.0]))], label_width=10)

    app = One()
    async with app.run_test(size=(60, 6)) as pilot:
        tl = app.query_one(TimelineStrip)
        tl.set_window(0.0, 1000.0)
        tl.set_marks(np.array([0]), np.array([300.0]), np.array([700.0]))
        await pilot.pause()
        glyphs, kinds = tl.track_cells(0, 60)  # 50 cells of 20 µs
        assert set(np.flatnonzero(kinds == 8).tolist()) == set(range(15, 35))
        # 400-600 µs: the track idle, the path waiting there; the gap keeps its length
        assert glyphs[20:30] == f"{MARK_IDLE * 2}200µs{MARK_IDLE * 3}"
        tl.set_highlights([(0, 300.0, 340.0)])
        _, kinds = tl.track_cells(0, 60)
        assert kinds[15:17].tolist() == [3, 3] and kinds[17] == 8
        tl.set_marks(np.empty(0, np.int64), np.empty(0), np.empty(0))
        assert not (tl.track_cells(0, 60)[1] == 8).any()


# ---------------------------------------------------------------------- the browser
async def test_p_opens_the_path_screen_and_enter_marks_the_tree(tmp_path):
    """The quick loop's walk: P, the screen's head, Enter back to the tree with its Path column."""
    p, _ = gpu_bound(tmp_path)
    app = TraceApp([str(p)], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await path_screen(app, pilot)
        assert "Critical path of ProfilerStep#1 (step): 625µs" in screen_text(app)
        await press(pilot, "G", "enter")  # the last segment: relu_c running
        assert isinstance(app.screen, MainScreen) and main.source.kt.name(main.current) == "relu_c"
        assert main.source.column_headers()[0] == "Path" and main.source.path.column(main.current) == "●103µs"


@pytest.mark.slow
async def test_p_shows_the_path_and_enter_goes_to_a_segment(tmp_path):
    p, want = gpu_bound(tmp_path)
    app = TraceApp([str(p)], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        screen = await path_screen(app, pilot)
        text = screen_text(app)
        assert "Critical path of ProfilerStep#1 (step): 625µs from the window start" in text
        assert "gpu 600µs 96.0 % · host 10.0µs 1.6 % · launch_delay 10.0µs 1.6 % · gpu_gap 5.00µs 0.8 %" in text
        for name in ("gemm_a", "gemm_b", "relu_c", "aten::op1"):
            assert name in text
        # n twice from the first segment: gemm_a's launch delay (3rd), Enter goes to gemm_a
        await press(pilot, "n", "n")
        assert screen.tree.cursor_node == 2
        assert "launch_delay: from a launch call's start" in screen_text(app)
        await press(pilot, "enter")
        assert isinstance(app.screen, MainScreen)
        kt = main.source.kt
        assert kt.name(main.current) == "gemm_a"
        assert "path segment 3 of 8: launch_delay 10.0µs" in screen_text(app)
        # the Path column and the status line; the detail pane says the slack
        assert main.source.column_headers()[0] == "Path"
        assert "path ProfilerStep#1 (step): 625µs (n/N walk)" in main.status_text().plain
        assert "0: on the path" in main.detail.text()
        # n / N walk the path from the main screen
        await press(pilot, "n")
        assert kt.name(main.current) == "gemm_b"
        await press(pilot, "n", "n")
        assert kt.name(main.current) == "relu_c"  # and stays at the end
        await press(pilot, "N")
        assert kt.name(main.current) == "gemm_b"
        # the timeline marks the path on the stream: gemm_a .. relu_c busy, the gaps as MARK_IDLE
        tl = main.timeline
        assert tl._marks and all(r.size for r in next(iter(tl._marks.values())))
        # an op off the path: its slack
        names = [kt.name(i) for i in range(kt.n_events)]
        main.select(names.index("aten::op3"))
        await pilot.pause()
        slack = app.critical.cp.slack_of_event(names.index("aten::op3"))
        # op3 ends at 75 µs; the step's last 25 µs follow it; the path ends at 625 µs: 525 µs
        assert slack == pytest.approx(525.0)
        assert "slack    525.0 µs: it could take that much" in main.detail.text()
        # a search takes n back; Esc clears the search, then the path
        await press(pilot, "slash", *"aten", "enter", "n")
        assert main.walk == "search" and kt.name(main.current).startswith("aten::")
        await press(pilot, "escape")
        assert main.walk == "path"
        await press(pilot, "escape")
        assert app.critical is None and main.source.column_headers()[0] == "Wall"
        # P again computes it again
        await path_screen(app, pilot)
        await press(pilot, "escape")
        assert isinstance(app.screen, MainScreen) and app.critical is not None
    assert MARK_IDLE == "─"


@pytest.mark.slow
async def test_the_views_of_the_path_screen_on_bert():
    raw = json.loads(gzip.decompress(open(BERT, "rb").read()))
    step = next(e for e in raw["traceEvents"] if e.get("name") == "ProfilerStep#6" and e.get("ph") == "X"
                and e.get("cat") == "user_annotation")
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        screen = await path_screen(app, pilot)
        cp = app.critical.cp
        assert cp.window.name == "ProfilerStep#6"
        assert cp.total_us == pytest.approx(float(step["dur"]), abs=1e-3)  # its last event ends with the step
        assert screen.rows.title == "segments in time order"
        await press(pilot, "v")
        assert isinstance(screen.rows, KindRows)
        assert "host" in screen_text(app) and "99.5 %" in screen_text(app)
        await press(pilot, "v")
        assert isinstance(screen.rows, SlackRows)
        first = int(screen.rows.rows[0])
        assert cp.slack.slack_us[first] == cp.slack.slack_us[cp.slack.slack_us > 0].min()
        await press(pilot, "enter")  # a kernel off the path: the tree goes to it
        assert isinstance(app.screen, MainScreen)
        assert main.current == int(cp.slack.event[first])
        assert "P nearly critical: slack" in screen_text(app)
        await press(pilot, "P")  # the same step: the screen again, nothing recomputed
        await pilot.pause()
        assert isinstance(app.screen, CriticalPathScreen) and app.critical.cp is cp


async def test_esc_cancels_a_path_being_computed(tmp_path, monkeypatch):
    """Esc while the worker runs: its result is dropped when it comes."""
    import tracetui.ui.critical.path_actions as pa

    p, _ = gpu_bound(tmp_path)
    slow = asyncio.Event()
    real = pa.critical_path

    def held(*a, **kw):
        import time

        for _ in range(200):
            if slow.is_set():
                break
            time.sleep(0.01)
        return real(*a, **kw)

    monkeypatch.setattr(pa, "critical_path", held)
    app = TraceApp([str(p)], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await press(pilot, "P")
        assert main._path_pending == "ProfilerStep#1"
        await press(pilot, "escape")
        slow.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert main._path_pending is None and app.critical is None and isinstance(app.screen, MainScreen)


async def _path_shown(pilot) -> None:
    await loaded(pilot)
    await path_screen(pilot.app, pilot)


@pytest.mark.parametrize("size", SIZES)
def test_path_screen_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=_path_shown)


@pytest.mark.parametrize("size", SIZES)
def test_path_by_kind_snapshot(snap_compare, size):
    keys = ["v", "down", "down", "down"]
    assert snap_compare(TraceApp([BERT], use_cache=False), press=keys, terminal_size=size, run_before=_path_shown)


JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_a_job_path_crosses_to_the_rank_that_arrived_last():
    """ProfilerStep#10 of the DLRM job ends last on rank 4 and crosses to rank 7 at the second
    all_to_all (tests/core/test_critical_job.py reads it from the raw files); Enter on a rank-7
    segment shows rank 7 with its marks."""
    from tracetui.ui.browser.main_screen import MainScreen as Main

    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        assert app.rank == 0
        screen = await path_screen(app, pilot, timeout=120)
        cp = app.critical.cp
        assert cp.window.name == "ProfilerStep#10"
        assert "crosses to rank 7 at all_to_all: it arrived last" in screen_text(app)
        seven = int(np.flatnonzero(cp.segments.rank == 7)[0])
        screen.tree.select_node(seven)
        await pilot.pause()
        await press(pilot, "enter")
        for _ in range(400):
            await app.workers.wait_for_complete()
            await pilot.pause()
            s = app.screen
            if isinstance(s, Main) and s.job_rank is not None and s.job_rank[0] == 7 and s.current is not None:
                break
            await asyncio.sleep(0.05)
        main = app.screen
        assert main.job_rank[0] == 7 and app.critical.cp is cp
        assert main.source.column_headers()[0] == "Path"
        assert "rank 7/8" in main.status_text().plain and "path ProfilerStep#10" in main.status_text().plain
        assert main.source.path.on_path[main.current]
