"""The diff browser (``tracetui diff A B``): keys pressed on the real app, facts read from the raw
files (the BERT trace against a copy with one op's kernels removed and another's 3x slower,
and against a copy whose GEMM kernel is another one)."""

from __future__ import annotations

import sys

import pytest
from diff_files import (
    BERT,
    FACTOR,
    NVJET,
    REMOVED_EXT,
    RENAMED_EXT,
    SLOWED_EXT,
    raw_kernels,
    write_modified_bert,
    write_renamed_bert,
)
from pilot import SIZES, dialog_words, error_dialog_shown, open_diff, press, screen_text
from shared_traces import kineto_path

from tracetui.diff.runs import DiffRequest
from tracetui.ui.app import DiffScreen, TraceApp
from tracetui.ui.diff.diff_side_screen import DiffSideScreen
from tracetui.ui.summaries.summaries_screen import SummariesScreen
from tracetui.ui.view.status_parts import status_whole

SRC = str(kineto_path(BERT))


@pytest.fixture(scope="module")
def modified(tmp_path_factory) -> str:
    return str(write_modified_bert(tmp_path_factory.mktemp("diff-ui") / "bert_modified.json.gz"))


def diff_app(b: str, **kw) -> TraceApp:
    return TraceApp([], use_cache=False, diff=DiffRequest((SRC,), (b,), use_cache=False, **kw))


def row_of_ext(screen: DiffScreen, ext: int) -> int:
    t = screen.tree_model
    kt = t.a.linked.kineto
    (row,) = [r for r in range(t.n_rows) if t.ev_a[r] >= 0 and r and int(kt.external_id[t.ev_a[r]]) == ext]
    return row


async def test_sort_filter_details_sides_and_summary_deltas(modified):
    slowed = raw_kernels(SRC, SLOWED_EXT)
    removed = raw_kernels(SRC, REMOVED_EXT)
    grown = sum(e["dur"] for e in slowed) * (FACTOR - 1)  # 2 x 41.28 µs
    app = diff_app(modified)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_diff(app, pilot)
        status = screen.status_text().plain
        assert "h100_bert_inference.json.gz ↔ B: bert_modified.json.gz" in status and "ProfilerStep#6" in status
        # every key of the diff browser is in the command palette too
        titles = {c.title for c in app.get_system_commands(screen)}
        assert {"Sort by |ΔGPU|", "Regressions", "Detail of A", "In B's browser", "Summary deltas"} <= titles
        t = screen.tree_model
        slow_row, gone_row = row_of_ext(screen, SLOWED_EXT), row_of_ext(screen, REMOVED_EXT)
        assert t.gpu_b[slow_row] - t.gpu_a[slow_row] == pytest.approx(grown)

        # o: the step's children by |Δ GPU|: first the op holding the 3x slower addmm, then the
        # attention whose kernels are gone
        await press(pilot, "o")
        assert screen.source.sorted and "sorted by |ΔGPU|" in screen.status_text().plain
        first, second = screen.op_tree.visible_nodes[1:3].tolist()
        assert slow_row in range(first, first + int(t.size[first]))
        assert gone_row in range(second, second + int(t.size[second]))
        text = screen_text(app)
        assert "+82.6µs" in text and "+200%" in text and "gone" in text

        # f: only regressions (GPU time grew) and their path; the attention that lost its kernels goes
        await press(pilot, "f")
        assert "REGRESSIONS ONLY" in screen.status_text().plain
        shown = set(screen.op_tree.visible_nodes.tolist())
        assert first in shown and second not in shown
        assert screen.select(slow_row)
        await pilot.pause()
        assert screen.current == slow_row

        # the detail: both sides' numbers, the kernels (same names, 3x the duration), then a's event detail
        detail = screen.detail.text()
        assert "A / B / Δ (per step)" in detail and "matched by shapes" in detail
        assert "+82.6µs  +200%" in detail and "same     41.3 µs → 123.8 µs  (+200.0%)" in detail
        assert slowed[0]["name"].replace(" ", "") in "".join(detail.split())
        await press(pilot, "a")
        detail = screen.detail.text()
        assert "A's event" in detail and f"External id {SLOWED_EXT}" in detail
        await press(pilot, "a")
        assert "A's event" not in screen.detail.text()

        # A: the same op in A's browser; B: in B's; D: back on the row
        await press(pilot, "A")
        side = app.screen
        assert isinstance(side, DiffSideScreen) and side.which == "a"
        assert side.current == int(t.ev_a[slow_row]) and "A of the diff (D: back)" in side.status_text().plain
        await press(pilot, "B")
        side = app.screen
        assert isinstance(side, DiffSideScreen) and side.which == "b" and side.current == int(t.ev_b[slow_row])
        await press(pilot, "D")
        await pilot.pause()
        assert app.screen is screen and screen.current == slow_row

        # s: the summary deltas; the kernels tab's first row is the slowed GEMM (Δ = 2 x its time)
        await press(pilot, "s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        summ = app.screen
        assert isinstance(summ, SummariesScreen)
        kernels = next(tb for tb in summ.tables if tb.key == "kernels")
        assert kernels.rows[0][0] == slowed[0]["name"] and kernels.rows[0][6] == pytest.approx(grown)
        gone = next(r for r in kernels.rows if r[0] == removed[0]["name"])
        assert gone[2] - gone[3] == len(removed)  # the same kernel runs under the other attentions
        await press(pilot, "3", "enter")  # the kernels tab, its first row: the ops that launched it
        await pilot.pause()
        assert app.screen is screen and screen.current == slow_row
        assert screen.matches.tolist() == [slow_row]


async def test_a_replaced_kernel_shows_both_launches(tmp_path):
    (old,) = raw_kernels(SRC, RENAMED_EXT)
    app = diff_app(str(write_renamed_bert(tmp_path / "renamed.json.gz")))
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await open_diff(app, pilot)
        row = row_of_ext(screen, RENAMED_EXT)
        assert screen.select(row)
        await pilot.pause()
        detail = screen.detail.text()
        assert "1 replaced" in detail and NVJET in "".join(detail.split()) and "grid 32,8,1" in detail
        assert f"grid {','.join(map(str, old['args']['grid']))}" in detail
        assert f"{old['args']['registers per thread']:,} registers" in detail


async def test_search_and_the_timeline_show_both_runs(modified):
    app = diff_app(modified)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_diff(app, pilot)
        labels = [tr.label for tr in screen.timeline.tracks]
        assert labels == ["A GPU0 s7", "B GPU0 s7"]
        # each side's track holds the GPU events launched in its step: the modified copy lost the attention's
        n_a, n_b = (tr.starts.size for tr in screen.timeline.tracks)
        assert n_a - n_b == len(raw_kernels(SRC, REMOVED_EXT))
        await press(pilot, "slash", *"flash_attention", "enter")
        t = screen.tree_model
        assert screen.matches.size and all("flash_attention" in t.name(int(r)) for r in screen.matches)
        assert screen.current == int(screen.matches[0])
        await press(pilot, "n")
        assert screen.current == int(screen.matches[1 % screen.matches.size])


async def test_a_step_a_side_lacks_is_one_line_in_the_error_dialog(modified):
    app = diff_app(modified, step_a=99)
    async with app.run_test(size=(80, 24)) as pilot:
        await error_dialog_shown(app, pilot, last_words="Quit (Esc)")
        text = dialog_words(app)  # the message wraps where the file name ends
        assert "Could not compare the runs" in text and "has no step 99" in text and "Open another" not in text
        await press(pilot, "escape")
    assert app.return_code == 2


def test_the_command_line_opens_the_browser_on_a_terminal_only(monkeypatch, modified, capsys):
    from tracetui.cli import entry
    from tracetui.ui import app as app_module

    seen = []
    monkeypatch.setattr(app_module, "run_diff_app", lambda request: seen.append(request) or 0)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert entry.main(["diff", SRC, modified, "--step-a", "6"]) == 0
    (req,) = seen
    assert req.paths_a == (SRC,) and req.paths_b == (modified,) and req.step_a == 6 and req.labels == ("A", "B")
    for flags in (["--text"], ["--json"], ["--fail-above", "50"]):
        assert entry.main(["diff", SRC, modified, *flags]) == 0
    assert len(seen) == 1  # printed, not browsed
    capsys.readouterr()


@pytest.mark.parametrize("size", SIZES)
def test_diff_browser_snapshot(snap_compare, size, modified):
    assert snap_compare(diff_app(modified), press=["o", "down"], terminal_size=size, run_before=_opened)


async def _opened(pilot) -> None:
    await open_diff(pilot.app, pilot)


def test_rows_of_an_event_below_the_ops_is_the_op_above_it(modified):
    """A kernel or a runtime call has no row: ``D`` from it goes to the op that launched it."""
    from tracetui.diff.runs import open_diff as open_diff_core
    from tracetui.ui.view.diff_row_source import DiffRowSource

    d = open_diff_core(DiffRequest((SRC,), (modified,), use_cache=False))
    src = DiffRowSource(d.tree)
    t = d.tree
    kt = t.b.linked.kineto
    (kernel,) = raw_kernels(SRC, SLOWED_EXT)
    k = next(e for e in range(kt.n_events) if kt.is_gpu_work(e) and int(kt.external_id[e]) == SLOWED_EXT)
    assert kt.name(k) == kernel["name"]
    row = src.rows_of_event("b", k)
    assert int(kt.external_id[t.ev_b[row]]) == SLOWED_EXT and kt.name(int(t.ev_b[row])) == "aten::addmm"


@pytest.mark.slow
async def test_a_critical_path_found_in_a_side_stays_with_that_side(modified):
    """``P`` in A's browser marks A's trace; B's browser (another trace) shows no path of A's."""
    app = diff_app(modified)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_diff(app, pilot)
        await press(pilot, "down", "A")
        side_a = app.screen
        assert isinstance(side_a, DiffSideScreen)
        await press(pilot, "P")
        for _ in range(400):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if side_a.source.path is not None:
                break
        assert side_a.source.path is not None and screen.side_paths.get("a") is not None
        assert getattr(app, "critical", None) is None
        if app.screen is not side_a:  # the path screen P opened
            await press(pilot, "escape")
        assert app.screen is side_a
        await press(pilot, "B")
        side_b = app.screen
        assert isinstance(side_b, DiffSideScreen) and side_b.which == "b" and side_b.source.path is None
        await press(pilot, "A")
        assert app.screen.source.path is not None  # A's path again on A


@pytest.mark.slow
async def test_a_searchs_count_follows_the_regressions_filter(modified):
    """Issue 45: a search under the regressions filter said 0 matches and kept that count after
    the filter was cleared.  The count is of the rows shown: f on or off counts again."""
    app = diff_app(modified)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_diff(app, pilot)
        t = screen.tree_model
        every = [r for r in range(t.n_rows) if "flash_attention" in t.name(r)]
        assert every
        await press(pilot, "f")
        assert screen.source.regressions_only
        await press(pilot, "slash", *"flash_attention", "enter")
        under = screen.matches.size
        assert under < len(every)  # the attention that lost its kernels is no regression
        assert all(screen.source.is_shown(int(r)) for r in screen.matches)
        await press(pilot, "f")  # the filter cleared: counted again over every row
        assert not screen.source.regressions_only
        assert sorted(screen.matches.tolist()) == every
        # the status line (whole in help at 80 columns) says the new count
        assert f"'flash_attention': {len(every):,} matches" in status_whole(screen.status_parts()).plain
        await press(pilot, "f")  # and on again: the regressions' count
        assert screen.matches.size == under
