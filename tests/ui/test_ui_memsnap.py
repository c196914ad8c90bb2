"""The memory screen of a CUDA memory snapshot (issue 39), driven through the real app: a snapshot
alone opens on it; the time cursor (←/→, [ ], ^, o), the owners of the blocks live there (b
cycles frame, file, stack, annotation), Enter to an owner's blocks and their stacks, and beside
the Kineto trace of the same run, ``t`` to the op open when a block was allocated.

The facts come from the snapshots read with the tests' own restricted reader
(``snapshot_unpickle``) and counted by ``memsnap_count``; the op from the raw Kineto JSON.
"""

from __future__ import annotations

import gzip
import json

import pytest
from memsnap_count import count, origin, owner_label
from pilot import SIZES, press, screen_text, toasts_saying
from shared_traces import SAMPLES
from snapshot_unpickle import read_snapshot

from tracetui import units
from tracetui.ui.app import MainScreen, TraceApp
from tracetui.ui.memory.block_stack_screen import BlockStackScreen
from tracetui.ui.memory.memory_snapshot_screen import MemorySnapshotScreen
from tracetui.ui.view.plot import Y_LABEL

H200 = SAMPLES / "h200"
OOM = str(H200 / "cuda_oom_snapshot.pickle")
MEM = str(H200 / "cuda_transformer_mem_snapshot.pickle")
KINETO = str(H200 / "cuda_transformer_mem_kineto.json.gz")


async def memsnap_shown(pilot, timeout: float = 120.0) -> MemorySnapshotScreen:
    """Wait until the memory screen of the snapshot is on top (a snapshot alone opens it after
    the browser's first paint; beside a trace, ``M`` does), its findings counted below it."""
    import asyncio

    app = pilot.app
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await app.workers.wait_for_complete()
        await pilot.pause()
        main = next((s for s in app.screen_stack if isinstance(s, MainScreen)), None)
        if isinstance(app.screen, MemorySnapshotScreen) and main is not None and main.findings_shown:
            break
        await asyncio.sleep(0.05)
    assert isinstance(app.screen, MemorySnapshotScreen), screen_text(app)
    await pilot.pause()
    return app.screen


def _words(app) -> str:
    return " ".join(screen_text(app).split())


def _table(screen) -> list[list[str]]:
    from tracetui.ui.row_table import RowTable

    t = screen.query_one(RowTable)
    return [t.row_text(i) for i in range(t.row_count)]


def _at_ms(us: float) -> str:
    return units.ms_text(us / 1e3)


async def test_a_snapshot_opens_on_its_memory_screen_at_the_peak():
    snap = read_snapshot(OOM)
    c = count(snap)
    app = TraceApp([OOM], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await memsnap_shown(pilot)
        words = _words(app)
        assert f"cuda:0 at {_at_ms(c['peak_ts_us'])}: {units.bytes_rounded(c['peak'])} allocated" in words
        assert f"peak {units.bytes_rounded(c['peak'])} at {_at_ms(c['peak_ts_us'])}" in words
        rows = _table(screen)
        assert {r[0]: r[1] for r in rows} == {k: units.bytes_rounded(v) for k, v in c["owners"].items()}
        assert [r[0] for r in rows][:2] == ["(no frames)", "make_layers (oom_snapshot.py:22)"]
        assert f"Live at the cursor: {c['live_blocks']} blocks by frame" in words
        # the plot: the y axis names the highest value drawn (the reserved peak), the peak is marked
        assert units.bytes_rounded(c["peak_reserved"]) in screen_text(app).splitlines()[4][:Y_LABEL]
        assert "^" in words and "!" in words


async def test_the_cursor_keys():
    snap = read_snapshot(OOM)
    c = count(snap)
    entries, t0 = snap["device_traces"][0], origin(snap)
    app = TraceApp([OOM], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await memsnap_shown(pilot)
        span = (entries[-1]["time_us"] - entries[0]["time_us"]) / screen._plot_width()
        await press(pilot, "left")
        assert screen.cursor == pytest.approx(c["peak_ts_us"] - span)
        await press(pilot, "right_square_bracket")  # the next allocation or free after the cursor
        nxt = next(e for e in entries if e["action"] in ("alloc", "free_completed") and e["time_us"] - t0 > screen.
                   cursor - 1e-6 and e["time_us"] - t0 >= c["peak_ts_us"] - span)
        assert screen.cursor == nxt["time_us"] - t0
        await press(pilot, "circumflex_accent")
        assert screen.cursor == c["peak_ts_us"]
        await press(pilot, "o")
        (oom,) = c["ooms"]
        assert screen.cursor == oom["ts_us"]
        words = _words(app)
        assert f"{units.bytes_rounded(oom['allocated'])} allocated" in words
        assert "out of memory: 157,600,055,296 B (157.6 GB) asked" in await toasts_saying(app, pilot, "out of memory")
        live = {}
        for e in entries[: oom["index"] + 1]:
            if e["action"] == "alloc":
                live[e["addr"]] = e
            elif e["action"] == "free_completed":
                live.pop(e["addr"], None)
        held: dict[str, int] = {}
        for e in live.values():
            held[owner_label(e["frames"])] = held.get(owner_label(e["frames"]), 0) + e["size"]
        assert {r[0]: r[1] for r in _table(screen)} == {k: units.bytes_rounded(v) for k, v in held.items()}
        await press(pilot, "ctrl+left")  # the history's first entry: the first segment, no block yet
        assert screen.cursor == 0.0 and _table(screen) == []
        await press(pilot, "right_square_bracket")
        first = next(e for e in entries if e["action"] == "alloc")
        assert screen.cursor == first["time_us"] - t0
        assert _table(screen) == [[owner_label(first["frames"]), units.bytes_rounded(first["size"]), "1",
                                   units.bytes_rounded(first["size"])]]


async def test_owners_by_frame_file_stack_and_annotation():
    snap = read_snapshot(OOM)
    c = count(snap)
    app = TraceApp([OOM], use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await memsnap_shown(pilot)
        await press(pilot, "b")
        assert screen.by == "file"
        files = {r[0] for r in _table(screen)}
        assert files == {"(no frames)", "/work/main/scripts/gpu_box/oom_snapshot.py"}
        await press(pilot, "b")
        live = {}
        for e in snap["device_traces"][0][: c["peak_index"] + 1]:
            if e["action"] == "alloc":
                live[e["addr"]] = e
            elif e["action"] == "free_completed":
                live.pop(e["addr"], None)
        stacks = {tuple((f["filename"], f["line"], f["name"]) for f in e["frames"]) for e in live.values()}
        assert screen.by == "stack" and len(_table(screen)) == len(stacks)
        assert "step (oom_snapshot.py:29) < main (oom_snapshot.py:47) < <module> (oom_snapshot.py:71)" in {
            r[0] for r in _table(screen)}
        await press(pilot, "b")
        assert screen.by == "annotation" and [r[0] for r in _table(screen)] == ["(outside any op)"]
        await press(pilot, "b")
        assert screen.by == "frame"


async def test_enter_shows_the_blocks_and_their_stacks():
    app = TraceApp([OOM], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await memsnap_shown(pilot)
        rows = [r[0] for r in _table(screen)]
        await press(pilot, *["down"] * rows.index("make_layers (oom_snapshot.py:22)"), "enter")
        stack = app.screen
        assert isinstance(stack, BlockStackScreen)
        words = _words(app)
        assert "make_layers (oom_snapshot.py:22): 12 blocks live at the cursor" in words
        assert len(_table(stack)) == 12  # every block of the owner (the count's 12 live at the peak)
        assert "__init__ linear.py:109 /opt/torch/.venv/lib/python3.12/site-packages/" in words
        assert "make_layers oom_snapshot.py:22 /work/main/scripts/gpu_box" in words
        await press(pilot, "t")  # no trace beside: says how to get one
        assert "open the snapshot beside the PyTorch profiler trace" in await toasts_saying(app, pilot, "beside")
        await press(pilot, "escape")
        assert isinstance(app.screen, MemorySnapshotScreen)


def _kineto_ops() -> tuple[float, list[tuple[float, float, str]]]:
    doc = json.loads(gzip.open(KINETO).read())
    base = doc["baseTimeNanoseconds"] / 1000.0
    return base, [(base + e["ts"], base + e["ts"] + e["dur"], e["name"]) for e in doc["traceEvents"]
                  if e.get("cat") == "cpu_op"]


@pytest.mark.slow
async def test_beside_the_trace_t_goes_to_the_op_open_when_the_block_was_allocated():
    """At the end of the history, the first owner whose largest block was allocated inside the
    trace's span: ``t`` selects the op that was open then in the tree (found here in the raw JSON
    with the clock offset measured by the test: the snapshot 2.5 µs earlier)."""
    snap = read_snapshot(MEM)
    base, ops = _kineto_ops()
    offset = -2.5  # tests/core/test_memsnap_real.py measures it from the same files
    app = TraceApp([KINETO, MEM], use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):
            await pilot.pause(0.1)
            if isinstance(app.screen, MainScreen) and app.screen.findings_shown:
                break
        await press(pilot, "M")
        screen = await memsnap_shown(pilot)
        await press(pilot, "ctrl+right")
        for _ in range(200):  # back, allocation by allocation, to owners allocated inside the trace
            rows = _table(screen)
            if any(r[-1] for r in rows):
                break
            await press(pilot, "left_square_bracket")
        k = next(i for i, r in enumerate(rows) if r[-1])
        owner = screen.table.owners[k]
        addr = int(screen.view.m.addr[owner.rows[0]])
        allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc" and e["addr"] == addr
                  and owner_label(e["frames"]) == owner.label]
        t = allocs[-1]["time_us"] - offset
        want = max((o for o in ops if o[0] <= t <= o[1]), key=lambda o: o[0])[2]
        assert rows[k][-1] == want
        await press(pilot, *["down"] * k, "t")
        assert isinstance(app.screen, MainScreen)
        assert app.screen.linked.kineto.name(app.screen.current) == want


@pytest.mark.snapshot
@pytest.mark.parametrize("size", SIZES)
def test_memory_snapshot_screen_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([OOM], use_cache=False), terminal_size=size, run_before=memsnap_shown)


@pytest.mark.snapshot
def test_block_stack_snapshot(snap_compare):
    async def stack(pilot):
        await memsnap_shown(pilot)
        await press(pilot, "down", "enter")

    assert snap_compare(TraceApp([OOM], use_cache=False), terminal_size=(80, 24), run_before=stack)
