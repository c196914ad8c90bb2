"""The status line is ONE line at 80 and at 120 columns on real traces: the least important
parts are shortened or left out first, the warnings cue ``⚠ N warning(s) (w)`` always stays,
and the line is fitted again after a resize and after a search."""

from __future__ import annotations

import pytest
from pilot import open_app, press, screen_text, search
from rich.text import Text
from shared_traces import ET_DIR, kineto_path

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.status_line import StatusLine
from tracetui.ui.view.status_parts import (
    ALWAYS_SHOWN,
    PRIORITY,
    Part,
    fit_status,
)

LINEAR = ET_DIR / "param_linear_cuda_pair"
DLRM = ET_DIR / "param_dlrm_rank0_cuda_pair"

#: (label, paths, warnings cue or None, a part that must be on screen at 120 columns).
#: Facts read from the traces (``tracetui info``): param_linear has 1 warning, 8 RTX 2080 Ti
#: devices and 61,952 events; param_dlrm 2 warnings and 2,462 events; b200x8_eager no warning,
#: 8 B200 devices and 22,355 events; h100_bert_inference no warning, 2,298 events, 61 GPU events
#: all linked to their launch (its device name gives way to the findings cue at 120 columns).
TRACES = [
    ("param_linear", [LINEAR / "et.json.gz", LINEAR / "kineto.json.gz"], "⚠ 1 warning (w)", "61,952 events"),
    ("param_dlrm", [DLRM / "et.json.gz", DLRM / "kineto.json.gz"], "⚠ 2 warnings (w)", "2,462 events"),
    ("b200x8", [kineto_path("b200x8_eager.json.gz")], None, "NVIDIA B200 ×8"),
    ("bert", [kineto_path("h100_bert_inference.json.gz")], None, "GPU→launch 61/61"),
]


def _et_nodes(path) -> list[dict]:
    import gzip
    import json

    return json.load(gzip.open(path))["nodes"]


def status_row(app) -> str:
    """The status line as painted: the first row of the screen."""
    return screen_text(app).splitlines()[0]


def check_one_line(app, screen, cue: str | None) -> str:
    """The status widget is one row, its text fits its width and is what row 0 shows."""
    status = screen.query_one("#status", StatusLine)
    assert status.region.height == 1 and status.region.y == 0
    text = screen.status_text()
    assert "\n" not in text.plain and text.cell_len <= status.content_size.width
    row = status_row(app)
    assert text.plain in row
    if cue is not None:
        assert cue in row
    return row


# ------------------------------------------------------------------ fitting (no terminal)
def _parts(*specs) -> list[Part]:
    return [Part(key, tuple(Text(f) for f in forms)) for key, *forms in specs]


def test_priority_order_names_every_part_once():
    assert len(set(PRIORITY)) == len(PRIORITY)
    assert PRIORITY[0] == "warnings" and "warnings" in ALWAYS_SHOWN
    assert PRIORITY.index("title") < PRIORITY.index("counts") < PRIORITY.index("devices") < PRIORITY.index("python")


def test_fit_drops_the_least_important_first_and_keeps_the_warnings():
    parts = _parts(("title", "trace.json.gz"), ("devices", "NVIDIA B200 ×8", "8 GPUs"),
                   ("counts", "22,355 events, 768 kernels", "22,355 events"), ("python", "python hidden"),
                   ("warnings", "⚠ 3 warnings (w)"))
    full = "trace.json.gz · NVIDIA B200 ×8 · 22,355 events, 768 kernels · python hidden · ⚠ 3 warnings (w)"
    assert fit_status(parts, 200).plain == full
    assert fit_status(parts, len(full)).plain == full
    # one cell short: python (the least important) goes, the rest stays whole
    assert fit_status(parts, len(full) - 1).plain == \
        "trace.json.gz · NVIDIA B200 ×8 · 22,355 events, 768 kernels · ⚠ 3 warnings (w)"
    # a part left out is counted (help, ?, shows it): the count takes the room of the least important
    assert fit_status(parts, 65).plain == "trace.json.gz · 22,355 events · ⚠ 3 warnings (w) · +1 more (?)"
    assert fit_status(parts, 61).plain == "trace.json.gz · 22,355 events · ⚠ 3 warnings (w) · +1 (?)"
    # counts shortened first (more important than devices), then devices in their short form
    assert fit_status(parts, 60).plain == "trace.json.gz · 8 GPUs · 22,355 events · ⚠ 3 warnings (w)"
    assert fit_status(parts, 50).plain == "trace.json.gz · 8 GPUs · ⚠ 3 warnings (w) · +1 (?)"
    assert fit_status(parts, 40).plain == "trace.json.gz · ⚠ 3 warnings (w) · (?)"
    # the count never costs the title its room
    assert fit_status(parts, 35).plain == "trace.json.gz · ⚠ 3 warnings (w)"
    # narrower than title + cue: the title is cut, the cue stays whole
    narrow = fit_status(parts, 25)
    assert narrow.plain == "trace… · ⚠ 3 warnings (w)" and narrow.cell_len == 25
    for width in range(120):
        assert fit_status(parts, width).cell_len <= width


# ------------------------------------------------------------------ the browser
@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("label, paths, cue, wide_part", TRACES, ids=[t[0] for t in TRACES])
async def test_status_is_one_line_with_the_warnings_cue(label, paths, cue, wide_part, size):
    app = TraceApp(use_cache=False, paths=[str(p) for p in paths])
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await pilot.pause()  # the browser screen's first layout
        row = check_one_line(app, screen, cue)
        title = screen.linked.title
        assert row.strip().startswith(title)
        if size[0] >= 120:
            assert wide_part in row
        if cue is None:
            assert "⚠" not in row


@pytest.mark.slow
async def test_status_refits_on_resize_and_search():
    app = TraceApp(use_cache=False, paths=[str(p) for p in TRACES[0][1]])
    cue = TRACES[0][2]
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await pilot.pause()
        assert "61,952 events, 10,356 GPU events (8,716 kernels)" in check_one_line(app, screen, cue)
        await pilot.resize_terminal(240, 40)
        await pilot.pause()
        wide = check_one_line(app, screen, cue)
        assert "NVIDIA GeForce RTX 2080 Ti ×8" in wide  # 8 devices of one model, counted
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        narrow = check_one_line(app, screen, cue)
        assert "RTX 2080 Ti" not in narrow  # devices go before counts and links
        await search(pilot, "aten::addmm")
        n = screen.matches.size
        assert n > 0
        row = check_one_line(app, screen, cue)
        assert f"{n:,}" in row and "addmm" in row  # the search state takes its place
        await press(pilot, "f")  # filter: FILTERED is always shown
        row = check_one_line(app, screen, cue)
        assert "FILTERED" in row
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        row = check_one_line(app, screen, cue)
        assert f"search 'aten::addmm': {n:,} matches" in row and "FILTERED" in row


@pytest.mark.slow
async def test_the_et_link_stays_short_at_80_columns_and_the_line_says_what_it_left_out():
    """Issue 45: at 80 columns the rf_id link statistics gave way without a hint.  param_linear's
    928 ET ops (the ``ET link`` window of the status line; every one linked, by sequence, so
    heuristically: ``~``) keep their shortest form (``ET ~✓``); the parts left out are counted
    (``(?)``), and help (``?``) shows the whole line, the link statistics in full."""
    app = TraceApp(use_cache=False, paths=[str(p) for p in TRACES[0][1]])
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await pilot.pause()
        stats = screen.linked.link.stats
        assert (stats.et_ops, stats.linked, stats.heuristic, stats.et_only) == (928, 928, 928, 0)
        assert len(_et_nodes(TRACES[0][1][0])) >= stats.et_ops  # the ops are ET nodes (the window: one iteration)
        row = check_one_line(app, screen, TRACES[0][2])
        assert "ET ~✓" in row and "ET link" not in row
        assert "(?)" in row  # devices, counts and more are left out, and the line says so
        await press(pilot, "question_mark")
        title, rows = app.screen.sections[0]
        assert title == "Status line (every part)" and len(rows) == 1
        whole = rows[0][2]
        assert "ET link sequence: 928/928 (928 heuristic), ET-only 0" in whole
        assert "61,952 events" in whole and whole.endswith("⚠ 1 warning (w)")
        assert "ET-only 0" in " ".join(screen_text(app).split())  # on screen too
