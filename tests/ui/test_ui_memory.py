"""Memory in the browser (issue 32): the memory tracks of the timeline, the memory screen
(``M``), the peak keys (``^`` on the browser, ``p``/``r`` on the memory screen), Enter to the
allocating op, and the detail pane's memory section.

Facts are read from the raw ``h100_bert_inference`` file here (gzip + json), not from
tracetui: its cuda:0 peak of ``Total Allocated`` is 101,305,344 B, reached by a 1 MiB
``[memory]`` allocation inside ``aten::empty`` (External id 479) under ``aten::addmm``
(External id 478); the largest block live there is the 8,607,232 B allocated in that
``aten::addmm``, which also allocates and frees the 1 MiB block (so: 2 blocks allocated,
1 freed, 1 transient).
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

import numpy as np
import pytest
from pilot import BERT, SIZES, loaded, open_app, open_by_key, pane_lines, press, screen_text, toasts
from shared_traces import kineto_path

from tracetui import units
from tracetui.analysis.intervals import union_intervals
from tracetui.kineto import schema
from tracetui.ui.app import MainScreen, TraceApp
from tracetui.ui.memory.memory_screen import MemoryScreen
from tracetui.ui.view.memory_track import MemoryTrack, memory_tracks
from tracetui.ui.view.track import BusyRuns

NO_MEMORY_TRACE = str(kineto_path("a100_event_sync_multistream.json.gz"))  # no [memory] events (grep)


@lru_cache(maxsize=1)
def raw_bert() -> dict:
    """The raw facts the tests compare with (see the module docstring)."""
    ev = json.loads(gzip.open(BERT).read())["traceEvents"]
    mem = [e for e in ev if e.get("name") == "[memory]"]
    gpu = [e for e in mem if e["args"]["Device Type"] == 1]
    peak = max(gpu, key=lambda e: e["args"]["Total Allocated"])

    def innermost_op(e: dict) -> dict:
        ops = [o for o in ev if o.get("cat") == "cpu_op" and o["tid"] == e["tid"] and o["ts"] <= e["ts"] <= o["ts"]
               + o["dur"]]
        return max(ops, key=lambda o: o["ts"])

    largest = max((e for e in gpu if e["ts"] <= peak["ts"]), key=lambda e: e["args"]["Bytes"])
    owner = innermost_op(largest)
    inside = [e for e in mem if e["tid"] == owner["tid"] and owner["ts"] <= e["ts"] <= owner["ts"] + owner["dur"]]
    origin = int(min(e["ts"] for e in ev if e.get("ph") != "M" and "ts" in e))
    return {"first_ts": min(float(e["ts"]) for e in ev if e.get("ph") != "M" and "ts" in e),
            "peak": peak["args"]["Total Allocated"], "peak_ms": (peak["ts"] - origin) / 1e3,
            "reserved": max(e["args"]["Total Reserved"] for e in gpu),
            "peak_op": innermost_op(peak), "largest": largest["args"]["Bytes"], "owner": owner,
            "owner_allocs": [e["args"]["Bytes"] for e in inside if e["args"]["Bytes"] > 0],
            "owner_frees": [-e["args"]["Bytes"] for e in inside if e["args"]["Bytes"] < 0]}


def pane_words(app, pane, rows: int | None = None) -> str:
    """The pane's text as on screen (its first ``rows``), one space between words, its border dropped."""
    return " ".join(" ".join(pane_lines(app, pane)[:rows]).replace("▏", " ").split())


def _ext(screen: MainScreen) -> int:
    return int(screen.source.kt.external_id[screen.current])


async def open_memory(app, pilot) -> MemoryScreen:
    return await open_by_key(app, pilot, "M", MemoryScreen)


async def test_memory_screen_shows_the_peak_and_enter_goes_to_the_allocating_op():
    raw = raw_bert()
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_memory(app, pilot)
        text = " ".join(screen_text(app).split())
        assert [v.device for v in screen.views] == ["cuda:0", "cpu"]
        assert f"Peak allocated {units.bytes_text(raw['peak'])} at {raw['peak_ms']:.3f} ms" in text
        assert f"Peak reserved {units.bytes_text(raw['reserved'])}" in text
        owners = screen.views[0].owners
        assert owners.rows[0][0] == raw["owner"]["name"] == "aten::addmm"
        assert owners.rows[0][1] == units.bytes_rounded(raw["largest"])  # its one live block
        await press(pilot, "enter")  # the first owner: its largest block's op
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.pause()
        assert _ext(main) == raw["owner"]["args"]["External id"]
        assert main.query_text == "aten::addmm (live at the peak of cuda:0)"
        # the detail pane's memory section of that op (its last section), from the raw events inside it
        main.detail.scroll_end(animate=False)
        await pilot.pause()
        lines = pane_words(app, main.detail)
        assert "Memory (this row and everything under it)" in lines
        allocated = f"allocated {units.bytes_rounded(sum(raw['owner_allocs']))} ({len(raw['owner_allocs'])} blocks)"
        assert allocated in lines, lines
        assert f"freed {units.bytes_rounded(sum(raw['owner_frees']))} (1 block)" in lines
        assert f"net +{units.bytes_rounded(sum(raw['owner_allocs']) - sum(raw['owner_frees']))}" in lines


@pytest.mark.slow
async def test_peak_keys_select_the_op_open_at_the_peak():
    raw = raw_bert()
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_memory(app, pilot)
        await press(pilot, "p")
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.pause()
        assert _ext(main) == raw["peak_op"]["args"]["External id"] and raw["peak_op"]["name"] == "aten::empty"
        head = pane_words(app, main.detail, 4)
        assert f"^ peak of cuda:0: {units.bytes_text(raw['peak'])} allocated" in head
        # ^ on the browser: the same peak, then the next device's (cpu), then back
        main.select(int(main.source.root_nodes()[0]))
        await pilot.pause()
        await press(pilot, "circumflex_accent")
        assert _ext(main) == raw["peak_op"]["args"]["External id"]
        await press(pilot, "circumflex_accent")
        assert "^ peak of cpu:" in pane_words(app, main.detail, 1)
        await press(pilot, "circumflex_accent")
        assert _ext(main) == raw["peak_op"]["args"]["External id"]
        # r on the memory screen: the reserved peak (the first event: reserved is flat in this trace)
        await press(pilot, "M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await press(pilot, "r")
        assert isinstance(app.screen, MainScreen)
        assert f"^ peak of cuda:0: {units.bytes_text(raw['reserved'])} reserved at" in pane_words(app, main.detail, 3)


async def test_memory_tracks_in_the_timeline():
    raw = raw_bert()
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_app(app, pilot)
        tracks = [t for t in main.timeline.tracks if isinstance(t, MemoryTrack)]
        assert [t.label for t in tracks] == ["cuda:0 alc", "cuda:0 rsv", "cpu alc"]
        alc = tracks[0]
        assert int(alc.values.max()) == raw["peak"]
        # the cell holding the peak is the full glyph; the start (allocated before the trace) the lowest
        t = alc.ts[int(np.argmax(alc.values))]
        levels = alc.cell_levels(np.array([alc.starts[0], alc.starts[0] + 1.0, t - 0.5, t + 0.5]))
        assert levels[0] == 1 and levels[2] == 8
        assert "cuda:0 alc" in screen_text(app) and "cuda:0 rsv" in screen_text(app)
        # a memory row is one interval, its span: the strip's busy run is the one run the
        # merge of its steps (each from its event to the next) gives, from the trace's first
        # event (the raw file's earliest ts) to its last end
        first = raw["first_ts"]
        for track in tracks:
            steps = union_intervals(np.concatenate(([track.starts[0]], track.ts)),
                                    np.concatenate((track.ts, [track.ends[-1]])))
            runs = BusyRuns(track, 0.0)
            assert [runs.starts.tolist(), runs.ends.tolist()] == [r.tolist() for r in steps]
            # the trace's clock counts from the integer µs of its first event (json's float of
            # 1419247332500.684 holds the fraction to 2e-4 µs)
            assert track.starts.size == 1 and track.starts[0] == pytest.approx(first - int(first), abs=1e-3)
            assert track.ends[-1] >= track.ts[-1]
        # built once per trace (the load worker builds them, off the UI thread)
        assert [id(t) for t in memory_tracks(main.source.kt)] == [id(t) for t in tracks]


async def test_a_trace_without_memory_events_says_how_to_record_them():
    app = TraceApp([NO_MEMORY_TRACE], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        assert not [t for t in main.timeline.tracks if isinstance(t, MemoryTrack)]
        for key in ("M", "circumflex_accent"):
            await press(pilot, key)
            assert app.screen is main
            assert any("profile_memory=True" in t for t in toasts(app)), toasts(app)


@pytest.mark.slow
async def test_memory_screen_keys_and_tabs():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_memory(app, pilot)
        await press(pilot, "2")
        assert "16 B" in screen_text(app)  # the cpu tab: its peak is two 8-byte blocks
        # the tab's first table takes the focus after the tab is shown (a refresh later: on a
        # loaded machine, later than press() waits)
        for _ in range(2000):
            if screen.focused is not None and screen.focused.id == "t-1-owners":
                break
            await pilot.pause(0.01)
        await press(pilot, "tab")  # the top allocating ops table
        assert screen.focused is not None and screen.focused.id == "t-1-top"
        await press(pilot, "enter")  # the cpu's top allocating op
        main = app.screen
        assert isinstance(main, MainScreen) and main.query_text.endswith("(allocations on cpu)")
        assert main.source.kt.name(main.current) == "aten::empty"
        await press(pilot, "M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await press(pilot, "escape")
        assert app.screen is main


def test_memory_bindings_have_ids_and_reach_the_palette():
    from tracetui.ui.app import binding_ids

    assert {"main.memory", "main.memory_peak", "memory.close", "memory.peak", "memory.reserved_peak"} <= binding_ids()
    assert schema.MEMORY_EVENT_NAME == "[memory]"


@pytest.mark.snapshot
@pytest.mark.parametrize("size", SIZES)
def test_memory_screen_snapshot(snap_compare, size):
    async def shown(pilot):
        await loaded(pilot)
        await pilot.press("M")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size, run_before=shown)
