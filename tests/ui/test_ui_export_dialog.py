"""The export dialog (``e``) driven by real key presses on the BERT trace: where focus
starts, the Tab order, the default file name (op name + External id, or the trace's stem),
the extension following the format, every format written into the working folder with
its absolute path shown (in the dialog as it is typed, then toast, status line, detail pane),
the python-frames box, and the last export's folder offered next time."""

from __future__ import annotations

import csv
import json

import pytest
from pilot import BERT, open_app, press, screen_text, search, toasts
from textual.widgets import Button, Checkbox, Input, Select

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.export_dialog import (
    EXPORT_EXTENSIONS,
    EXPORT_FORMATS,
    ExportDialog,
    op_file_stem,
    safe_file_stem,
    trace_file_stem,
    with_format,
)
from tracetui.ui.detail.detail_pane import DetailPane

#: The first aten::addmm of h100_bert_inference in time order (26 in all) has External id 49
#: (read from the file: args["External id"] of the earliest cpu_op named aten::addmm).
ADDMM_EXT = 49
ADDMM_FILE = f"aten_addmm-ext{ADDMM_EXT}"


def test_file_names_are_safe_and_follow_the_format():
    assert op_file_stem("aten::addmm", 49) == "aten_addmm-ext49"
    assert op_file_stem("aten::addmm", -1) == "aten_addmm"  # no External id in the trace
    assert safe_file_stem("a/b: c<d>|*?\"e") == "a_b_c_d_e"
    assert safe_file_stem("../..") == "export"  # nothing left: never an empty or hidden name
    assert "/" not in op_file_stem("void at::native::kernel<float, 4>(float*)", 7)
    assert trace_file_stem("/x/h100_bert_inference.json.gz") == "h100_bert_inference"
    assert trace_file_stem("rank0.pt.trace.json") == "rank0"
    assert with_format("a.md", "chrome") == "a.trace.json"
    assert with_format("a.trace.json", "json") == "a.json"
    assert with_format("run.v2", "html") == "run.v2.html"  # an unknown extension is kept


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_focus_starts_on_format_and_tab_goes_to_path_then_export(size, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        kt = screen.linked.kineto
        assert kt.name(screen.current) == "aten::addmm"
        assert int(kt.external_id[screen.current]) == ADDMM_EXT
        await press(pilot, "e")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert isinstance(app.focused, Select) and app.focused.value == "md"
        field = dialog.query_one("#export-path", Input)
        assert field.value == f"{ADDMM_FILE}.md"  # in the current folder
        text = screen_text(app)
        assert f"{ADDMM_FILE}.md" in text and "Export the subtree of aten::addmm" in text
        assert str(tmp_path)[:20] in text  # the folder it goes to is named
        await press(pilot, "tab")
        assert app.focused is field
        await press(pilot, "tab")
        assert isinstance(app.focused, Checkbox) and app.focused.id == "export-python" and not app.focused.value
        await press(pilot, "tab")
        assert isinstance(app.focused, Button) and app.focused.id == "export-go"
        await press(pilot, "shift+tab", "shift+tab", "shift+tab")
        assert isinstance(app.focused, Select)
        await press(pilot, "escape")
        assert app.screen is screen
        assert list(tmp_path.iterdir()) == []  # cancelled: nothing written


async def test_lane_row_and_whole_trace_default_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.linked.kineto
        lane = screen.current  # the cursor starts on the first thread lane
        assert lane >= kt.n_events and kt.name(lane) == "thread 19392 (python3)"
        await press(pilot, "e")
        assert app.screen.query_one("#export-path", Input).value == "thread_19392_python3.md"
        await press(pilot, "enter")  # Enter on the format exports what is shown
        await app.workers.wait_for_complete()
        await pilot.pause()
        out = tmp_path / "thread_19392_python3.md"
        assert out.exists() and "aten::addmm" in out.read_text()
        assert app.screen is screen
        screen.current = None  # nothing selected (as on an ET-only row): the whole trace
        screen.action_export()
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog) and dialog.what == "the whole trace"
        assert dialog.query_one("#export-path", Input).value == "h100_bert_inference.md"
        await press(pilot, "escape")


def _check_content(fmt: str, body: str) -> None:
    """What each format must hold for the subtree of the first aten::addmm."""
    if fmt in ("md", "html"):
        assert "aten::addmm" in body and "cutlass" in body  # the op and its GEMM kernel
    elif fmt == "csv":
        rows = list(csv.reader(body.splitlines()))
        assert len(rows) > 1 and any("aten::addmm" in cell for row in rows for cell in row)
    elif fmt == "json":
        assert "aten::addmm" in json.dumps(json.loads(body))
    elif fmt in ("folded", "folded-gpu"):  # frame;frame value lines, in integer ns
        lines = [line.rsplit(" ", 1) for line in body.splitlines()]
        assert all(stack.startswith("aten::addmm") and value.isdigit() for stack, value in lines), lines
        if fmt == "folded":  # self times add up to the op's duration in the file: 39.42 us
            assert sum(int(v) for _, v in lines) == 39_420
        else:  # its one kernel, 5.824 us in the file
            assert [(stack.split(";")[-1][:22], int(v)) for stack, v in lines] == [("void cutlass::Kernel2<", 5_824)]
    else:  # chrome: a loadable trace holding the op and its kernel
        events = json.loads(body)["traceEvents"]
        names = {e.get("name") for e in events}
        assert "aten::addmm" in names and any("cutlass" in str(n) for n in names)


@pytest.mark.slow
async def test_every_format_by_keys_writes_the_file_and_shows_its_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "aten::addmm")
        formats = [value for _label, value in EXPORT_FORMATS]
        assert formats == ["md", "html", "csv", "json", "chrome", "folded", "folded-gpu"]
        for i, fmt in enumerate(formats):
            await press(pilot, "e")
            dialog = app.screen
            assert isinstance(dialog, ExportDialog)
            await press(pilot, "space", *["down"] * i, "enter")  # open the list, pick the i-th format
            assert dialog.query_one(Select).value == fmt
            name = f"{ADDMM_FILE}.{EXPORT_EXTENSIONS[fmt]}"
            assert dialog.query_one("#export-path", Input).value == name
            await press(pilot, "tab", "tab", "tab", "enter")  # format -> path -> python frames -> Export, pressed
            await app.workers.wait_for_complete()
            await pilot.pause(0.1)
            assert app.screen is screen
            out = tmp_path / name
            assert out.exists(), sorted(p.name for p in tmp_path.iterdir())
            _check_content(fmt, out.read_text())
            assert any(f"exported {fmt} to {out}" in m for m in toasts(app)), toasts(app)
            assert screen.last_export == str(out)
            assert f"saved {name}" in screen.status_text().plain  # lasts after the toast
            assert str(out) in screen.query_one(DetailPane).text().replace("\n", "")  # wrapped to the pane
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            f"{ADDMM_FILE}.{ext}" for ext in EXPORT_EXTENSIONS.values())


#: python function frames under the first aten::addmm's parent chain root, counted in the file:
#: the whole trace holds 1,385 python_function events
PYTHON_EVENTS = 1385


async def test_python_frames_box_and_the_last_folder_offered_next_time(tmp_path, monkeypatch):
    """The report lists python function frames only when the box is ticked (the choice is
    kept); the dialog shows the absolute path it writes, and the next export starts in the
    folder of the last one."""
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "reports"
    out_dir.mkdir()
    app = TraceApp(use_cache=False, paths=[BERT])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)  # the cursor on the thread lane: its whole subtree
        await press(pilot, "e")
        dialog = app.screen
        field = dialog.query_one("#export-path", Input)
        assert dialog.target == str(tmp_path / "thread_19392_python3.md") and "writes /" in screen_text(app)
        field.value = "reports/no_frames.md"
        await pilot.pause()
        assert dialog.target == str(out_dir / "no_frames.md")  # as it is typed
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        plain = (out_dir / "no_frames.md").read_text()
        assert "| python |" not in plain.split("## Op tree")[0] and "python function frames are not listed" in plain
        await press(pilot, "e")
        dialog = app.screen
        assert dialog.query_one("#export-path", Input).value == "thread_19392_python3.md"
        assert dialog.target == str(out_dir / "thread_19392_python3.md")  # the last folder
        dialog.query_one("#export-path", Input).value = "frames.md"
        await press(pilot, "tab", "tab", "space")  # format -> path -> the box: ticked
        assert dialog.query_one(Checkbox).value
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        framed = (out_dir / "frames.md").read_text()
        assert framed.count("| python |") > 100 and "python function frames are not listed" not in framed
        assert screen.last_export == str(out_dir / "frames.md")
        await press(pilot, "e")
        assert app.screen.query_one(Checkbox).value  # the choice is kept
        await press(pilot, "escape")


async def test_folded_stacks_of_no_gpu_time_are_written_empty_and_the_toast_says_so(tmp_path, monkeypatch):
    """A CPU-only trace (no kernel, memcpy or memset in the file) by GPU time: the folded file
    is empty, and the toast, a warning, and the detail pane say why."""
    from shared_traces import kineto_path

    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[str(kineto_path("cpu_only_small.json.gz"))])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await press(pilot, "e")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one(Select).value = "folded-gpu"
        await pilot.pause()
        out = tmp_path / dialog.query_one("#export-path", Input).value
        assert out.name.endswith(".gpu.folded")
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen and out.exists() and out.stat().st_size == 0
        said = f"exported folded-gpu to {out} (no GPU time under the selection: the folded stacks are empty)"
        assert any(said in t for t in toasts(app)), toasts(app)
        assert [n.severity for n in app._notifications if n.message == said] == ["warning"]
        assert "the folded stacks are empty" in screen.query_one(DetailPane).text().replace("\n", "")
