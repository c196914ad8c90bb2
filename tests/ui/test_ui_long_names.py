"""The browser on 10 MB names (issue 40): every key under 150 ms of CPU at 80x24.

Before the bound (``tracetui/names.py``) one ``j`` onto the long op took 5-12 s (the detail
pane wrapped and measured 10 MB, line by line), the critical path ``P`` over five minutes
and a key in the timeline three, and the app held 1.8 GB.  The walk (:data:`long_names.KEY_WALK`)
reaches both long names from every screen the issue names; each key's CPU time
(``time.process_time``: the app's threads, the workers a key starts included; not wall
time) is measured from the press until the
app is idle again.

A key over 150 ms is measured again beside the same trace with short names, walked in the
same conditions: it passes when it costs at most 1.5x that plus 30 ms (the bound guards work
that grows with a name; a busy machine lifts every key alike, and the 150 ms on an idle
machine is ``bench/bench_long_names.py``'s table).

The same walk runs first unmeasured (it checks what is drawn and copied): what a key
loads on first use (``P`` imports the critical path's package, ``s`` pandas: 90-130 ms of CPU
each here, on any trace; ``tracetui/lazy.py``, ``bench/bench_ui.py``) is not work per name.
On the way: the cut is drawn (``… (+10 MB)`` in the tree row), the detail pane says the full
length, and ``c`` in the raw-args panel copies the name whole.
"""

from __future__ import annotations

import os
import time

import pytest
from long_names import KEY_WALK, long_op_name, write_long_names
from pilot import open_app, screen_text
from textual_floor import FLOOR_ENV

from tracetui.ui.app import TraceApp
from tracetui.ui.detail.raw_args_screen import RawArgsScreen

#: CPU seconds one key may take (issue 40: "every browser key under 150 ms")
KEY_CPU_S = 0.150
#: where a key is over KEY_CPU_S, the most it may cost is NAME_FACTOR times the same key on
#: the same trace with short names (:data:`SHORT_NAME` characters), walked in the same
#: conditions, plus NAME_ALLOWANCE_S.  Measured idle: the long names add 0-42 ms (``P``: 139
#: against 97 ms); before issue 40's bound they added seconds to minutes.
NAME_FACTOR = 1.5
NAME_ALLOWANCE_S = 0.030
SHORT_NAME = 96


async def _walk(path: str, check: bool) -> list[tuple[str, str, float]]:
    """Open ``path`` at 80x24 and press the keys of the walk: (key, what, CPU s) of each."""
    app = TraceApp([path], use_cache=False)
    spent: list[tuple[str, str, float]] = []
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        kt = main.linked.kineto
        for key, what in KEY_WALK:
            t = time.process_time()
            await pilot.press(key)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            spent.append((key, what, time.process_time() - t))
            if not check:
                continue
            if what == "down to the long op":
                assert kt.name(main.current) == long_op_name()
                assert "… (+10 MB)" in screen_text(app)  # the tree row keeps the mark in view
                assert "10,000,000 characters (10 MB)" in main.detail.text()
            elif what == "every arg":
                assert isinstance(app.screen, RawArgsScreen)
            elif what == "copy the long name":
                assert app.clipboard == long_op_name()  # copied whole
    return spent


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(FLOOR_ENV) == "1",
                    reason="a bound on tracetui's work per name, measured in the main run: the run on the oldest "
                           "Textual runs beside it, and the CPU time of two runs sharing 2 cores is not a key's cost")
async def test_every_key_on_10_mb_names_takes_under_150_ms(tmp_path):
    path = str(write_long_names(tmp_path))
    # the first walk checks what is drawn and copied, and loads what keys load on first use
    # (unmeasured); then measured walks
    await _walk(path, check=True)
    walks = [await _walk(path, check=False)]
    # Each key's cost is the smallest of the walks: other processes on a busy machine only add
    # CPU time (caches and a core's time shared), never take it away.  A key over 150 ms is
    # walked again beside the same trace with short names (a 96-character op and kernel), in
    # the same conditions: what this test guards is work that grows with a name, so a key
    # over only because the machine is busy costs the same there (a full suite at load ~3
    # measured `s` at 150 ms in four walks; 65-75 ms idle).  At most three more walks each.
    short = str(write_long_names(tmp_path, length=SHORT_NAME, file_name="short_names.json.gz"))
    shorts: list[list[tuple[str, str, float]]] = []
    for extra in range(4):
        assert all(len(w) == len(KEY_WALK) for w in walks + shorts)
        spent = [(walk[0][0], walk[0][1], min(x[2] for x in walk)) for walk in zip(*walks)]
        base = [min(x[2] for x in walk) for walk in zip(*shorts)] if shorts else [0.0] * len(KEY_WALK)
        slow = [f"{key} ({what}): {s * 1e3:.0f} ms, {b * 1e3:.0f} ms with short names"
                for (key, what, s), b in zip(spent, base) if s > KEY_CPU_S and s > NAME_FACTOR * b + NAME_ALLOWANCE_S]
        if not slow or extra == 3:
            break
        if extra:
            walks.append(await _walk(path, check=False))
        shorts.append(await _walk(short, check=False))
    assert not slow, slow


def test_a_flows_other_end_is_drawn_cut(tmp_path):
    """A generic Chrome trace's flow names the event at its other end in the detail pane
    (``ui/view/format_args.flow_sections``): a 1 MB name there is drawn cut, with its mark."""
    import io
    import json
    import sys
    from pathlib import Path

    from rich.console import Console

    from tracetui.session import open_traces
    from tracetui.ui.view.detail_section import render_sections
    from tracetui.ui.view.format_args import flow_sections

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from test_chrome_generic import perfetto_doc

    doc = perfetto_doc()
    long_name = "V8.Execute_" + "x" * 1_000_000 + " END_OF_SPAN"
    for ev in doc["traceEvents"]:
        if ev.get("name") == "V8.Execute":
            ev["name"] = long_name
    path = tmp_path / "perfetto.json"
    path.write_text(json.dumps(doc))
    kt = open_traces([str(path)]).kineto
    layout = next(i for i in range(kt.n_events) if kt.name(i) == "Layout")
    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    t = time.process_time()
    console.print(render_sections(flow_sections(kt, layout)))
    assert time.process_time() - t < KEY_CPU_S
    text = " ".join(console.export_text().split())
    assert "out → V8.Execute_xxx" in text and "… (+996 kB) · thread 12 (pid 10, renderer)" in text
    assert "END_OF_SPAN" not in text
