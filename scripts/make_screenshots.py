"""Make the README screenshots (SVG) from real traces by driving the app headless.

    python scripts/make_screenshots.py [--out screenshots]

GPU views use the shared ``h100_bert_inference`` trace (``../shared/traces/kineto``), the
memory views ``h100_qwen_chat_inference`` (recorded with ``profile_memory=True``) and the
H200's out-of-memory snapshot (``sample_traces/h200/cuda_oom_snapshot.pickle``); the
ET view uses the repository's own sample pair (``sample_traces/cpu_transformer_*``), the
Nsight Systems view the shared export ``../shared/traces/nsys/h100_2gpu_1s.sqlite``.  The
driver-call views use files written into a temporary folder first: a bpftrace file with
every kind of line (``tests/driver_ui_files.py``) and, for the linked view, the driver calls
of the BERT run (``tracetui/driver/synthetic.py``); the diff views compare the BERT trace
with a copy written by ``tests/diff_files.py`` (one attention op's kernels removed, one GEMM 3x
slower); the follow view a folder of three cycles of the BERT trace, the third stretched 1.5x
in time (``tests/trace_writer.py``).
Each view is reached by pressing real keys through Textual's Pilot, then saved with
``App.save_screenshot``.  The output is deterministic (no clocks on screen) but for the
wall time of the query in ``query.svg``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the driver-call trace writers (driver_ui_files.py)

from textual.widgets import Input  # noqa: E402

from tracetui.config import Settings  # noqa: E402
from tracetui.diff.runs import DiffRequest  # noqa: E402
from tracetui.follow.follower import FollowRequest  # noqa: E402
from tracetui.ui.app import TraceApp  # noqa: E402

BERT = REPO.parent / "shared" / "traces" / "kineto" / "h100_bert_inference.json.gz"
QWEN = REPO.parent / "shared" / "traces" / "kineto" / "h100_qwen_chat_inference.json.gz"
MULTISTREAM = REPO.parent / "shared" / "traces" / "kineto" / "a100_cudagraph_nccl_rank0.json.gz"
#: six profiler steps on two V100s (the summaries' Plots tab: step time, GPU busy per device)
V100_STEPS = REPO.parent / "shared" / "traces" / "kineto" / "v100_old_flow_format_cudagraph.json.gz"
MI300 = REPO.parent / "shared" / "traces" / "kineto" / "mi300_resnet_train_checkpointing.json.gz"
#: an Nsight Systems SQLite export: two processes on two H100s (PyTorch emit_nvtx ranges)
NSYS = REPO.parent / "shared" / "traces" / "nsys" / "h100_2gpu_1s.sqlite"
SAMPLE_KINETO = REPO / "sample_traces" / "cpu_transformer_kineto.json.gz"
SAMPLE_ET = REPO / "sample_traces" / "cpu_transformer_et.json.gz"
OOM_SNAPSHOT = REPO / "sample_traces" / "h200" / "cuda_oom_snapshot.pickle"
#: a whole job (a folder of rank files): opened with ``TraceApp(job_inputs=...)``
JOB_8RANKS = REPO.parent / "shared" / "traces" / "multirank" / "param_dlrm_8ranks"
SIZE = (140, 42)
#: driver-call traces written by main() before the views that need them
DRIVER_ALONE = Path("<written: a bpftrace driver-call trace>")
DRIVER_OF_BERT = Path("<written: the driver calls of the BERT run>")
#: the BERT trace with one attention op's kernels removed and one GEMM 3x slower (tests/diff_files.py)
BERT_NEW = Path("<written: bert_new.json.gz, a modified copy of the BERT trace>")
#: a folder a profiler wrote three cycles into (the third 1.5x slower): opened with ``TraceApp(follow=...)``
FOLLOW_RUNS = Path("<written: runs/, three cycles of the BERT trace>")

#: the query typed in query.svg (its wall time in the title is the one thing that changes run to run)
QUERY = ("SELECT op_name, count(*) AS kernels, sum(dur_us) AS gpu_us, min(op_event) AS first_op_event "
         "FROM kernels GROUP BY op_name")

#: (file name, traces, keys pressed after loading, terminal size, what it shows)
VIEWS: list[tuple[str, list[Path], list[str], tuple[int, int], str]] = [
    ("browser.svg", [BERT], ["slash", *"aten::linear", "enter", "l", "c"], SIZE,
     "op tree, detail pane and timeline (GPU stream + CPU threads, c)"),
    ("jump_to_kernel.svg", [BERT], ["slash", *"aten::addmm", "enter", "greater_than_sign"], SIZE,
     "> from aten::addmm to its GEMM kernel (grid, block, occupancy, launch)"),
    ("search.svg", [BERT], ["slash", *"/softmax|gelu/", "enter", "n", "slash", *"layer_norm"], SIZE,
     "regex search; the search bar open for the next query"),
    ("help.svg", [BERT], ["question_mark"], SIZE, "help built from the live key bindings"),
    ("et_pair.svg", [SAMPLE_KINETO, SAMPLE_ET], ["slash", *"aten::addmm", "enter"], SIZE,
     "Kineto + Execution Trace: ET ids, schema and tensor table"),
    ("narrow_80x24.svg", [BERT], ["slash", *"aten::addmm", "enter", "greater_than_sign"], (80, 24),
     "the same jump in an 80x24 terminal"),
    ("timeline_focus.svg", [MULTISTREAM], ["t", "right", "right", "up", "right"], SIZE,
     "the timeline focused (t): the marked lane, its keys in the footer, arrows stepping along a stream"),
    ("export_dialog.svg", [BERT], ["slash", *"aten::addmm", "enter", "e"], (80, 24),
     "e: the export dialog (format first, default name from op name and External id)"),
    ("summaries.svg", [BERT], ["s", "4"], SIZE,
     "s: the summaries, roofline tab (ops with FLOPs from shapes, TFLOP/s, GB/s, % of the H100's roofline)"),
    ("summaries_gaps.svg", [BERT], ["s", "5"], SIZE,
     "s, the idle-gaps tab: every gap longest first, with its stream, start, length, class, the host op the "
     "launching thread was in and what it ran"),
    ("gap_in_timeline.svg", [BERT], ["s", "5", "enter"], SIZE,
     "Enter on the longest idle gap: the GPU event before it selected, the gap fitted and tinted in the timeline"),
    ("kernel_occupancy.svg", [BERT], ["slash", *"sm90_xmma", "enter"], SIZE,
     "an H100 GEMM: Kineto's 0 % estimate beside the theoretical occupancy (18.75 %, registers + shared memory)"),
    ("raw_args.svg", [BERT], ["slash", *"aten::addmm", "enter", "greater_than_sign", "a"], (100, 36),
     "a: every arg of the selected kernel, foldable, c/C copy a value or a name"),
    ("findings.svg", [MULTISTREAM], ["F", "down"], SIZE,
     "F: the findings by time at stake (an estimate), the selected one's verdict, evidence, details, method"),
    ("query.svg", [BERT], ["colon", *QUERY, "enter", "right", "right", "s"], SIZE,
     ": a query's rows (kernels and GPU time per launching op, sorted by GPU time with s); Enter goes to "
     "the row's first op, f filters the tree to those ops"),
    ("job_cross_rank.svg", [JOB_8RANKS], ["X"], (150, 46),
     "a whole job (8 ranks, X): GPU time per rank, collectives matched across ranks, stragglers"),
    ("memory.svg", [QWEN], ["M"], SIZE,
     "M: the memory screen (per device the peak and its two parts, the reserved peak, the ops owning the peak, "
     "the top allocating ops)"),
    ("memory_peak.svg", [QWEN], ["circumflex_accent"], SIZE,
     "^: the op open at the peak of allocated bytes, and the allocated/reserved tracks in the timeline"),
    ("icicle.svg", [BERT], ["slash", *"ProfilerStep#6", "enter", "i", "down", "down", "down"], SIZE,
     "i: the icicle of the selected step (callees as wide as their CPU time, merged by name path; v: GPU / "
     "Python time, Enter descends, Backspace climbs, / searches, g: the cell's events in the tree)"),
    ("bottom_up.svg", [BERT], ["slash", *"ProfilerStep#6", "enter", "b"], SIZE,
     "b: the bottom-up table of the step (names by self time; Enter: who called it)"),
    ("plots.svg", [V100_STEPS], ["s", "7"], (100, 30),
     "s, the Plots tab: step time per step (the slowest marked ^, the GPU time as a line); p: GPU busy % per "
     "device"),
    ("memory_over_time.svg", [QWEN], ["M", "o", "circumflex_accent"], (100, 30),
     "M then o: bytes allocated (bars) and reserved (a line) over the trace, ^ at the peak"),
    # a view whose name starts with "memory_snapshot": a CUDA memory snapshot opens on its own screen
    ("memory_snapshot.svg", [OOM_SNAPSHOT], [], SIZE,
     "a CUDA memory snapshot (H200, ends in an out-of-memory entry): allocated (bars) and reserved (line) over "
     "time, the cursor at the peak (^), the blocks live there by innermost user frame"),
    ("critical_path.svg", [MI300], ["P", "v", "enter", "down", "down"], SIZE,
     "P: the critical path of the longest step of a ResNet DDP training step on an MI300X, by kind and name "
     "(v: segments in time order / by kind / least slack)"),
    ("critical_path_marks.svg", [MI300], ["P", "v", "v", "enter"], SIZE,
     "after P: the Path column (path time under each row, ● on the path), the path marked on the streams, "
     "the slack of the nearly critical kernel in the detail pane; n/N walk the path"),
    ("driver_trace.svg", [DRIVER_ALONE], ["slash", *"kernel launch", "enter"], SIZE,
     "a driver-call trace (bpftrace): calls, ioctls and records by phase, a kernel launch record's detail, "
     "the threads, phases and bytes allocated in the timeline"),
    ("driver_linked.svg", [BERT, DRIVER_OF_BERT], ["slash", *"cudaLaunchKernel", "enter", "greater_than_sign"], SIZE,
     "a Kineto trace with the driver calls of the same run: > from cudaLaunchKernel to its driver call"),
    ("nsys_browser.svg", [NSYS], ["slash", *"aten::mm", "enter", "greater_than_sign", "c"], SIZE,
     "an Nsight Systems export (nsys export --type sqlite): emit_nvtx ops, the CUDA calls in them, > to the GEMM "
     "they launched (demangled name, grid, block, registers, shared memory); both processes and GPUs"),
    # views whose name starts with "diff": the diff browser over the two traces
    ("diff.svg", [BERT, BERT_NEW], ["o", "down", "l", "down"], SIZE,
     "tracetui diff: the merged tree by |ΔGPU| (o), the 3x slower addmm's numbers and kernels, both runs' streams"),
    ("diff_summary.svg", [BERT, BERT_NEW], ["s", "3"], SIZE,
     "s in the diff: the summary deltas, kernels tab (A, B, Δ per kernel)"),
    ("follow.svg", [FOLLOW_RUNS], ["end"], (120, 30),
     "tracetui follow runs/: a row per profiling cycle as its trace lands, the third 50 % slower; below, its "
     "comparison with the previous cycle"),
]


def write_driver_traces(folder: Path) -> dict[Path, Path]:
    """Write the driver-call traces the driver views open; returns placeholder -> file."""
    from diff_files import write_modified_bert
    from driver_ui_files import write_bpftrace, write_linked

    _, linked = write_linked(folder)
    return {DRIVER_ALONE: write_bpftrace(folder / "trace_cuda.jsonl"), DRIVER_OF_BERT: linked,
            BERT_NEW: write_modified_bert(folder / "bert_new.json.gz"), FOLLOW_RUNS: write_follow_runs(folder / "runs")}


def write_follow_runs(folder: Path) -> Path:
    """Three cycles as tensorboard_trace_handler names them, five minutes apart, the third slower."""
    import gzip

    from trace_writer import gz, handler_name, slowed

    folder.mkdir()
    data = BERT.read_bytes()
    for k, cycle in enumerate((data, data, gz(slowed(gzip.decompress(data), 1.5)))):
        (folder / handler_name(300 * k)).write_bytes(cycle)
        os.utime(folder / handler_name(300 * k), (0, 0))  # written long ago: read at the first look
    return folder


async def shoot(name: str, traces: list[Path], keys: list[str], size: tuple[int, int], out: Path) -> Path:
    screen = "MainScreen"
    if name.startswith("follow"):
        os.chdir(traces[0].parent)  # the title names the folder as given: runs
        app = TraceApp([], settings=Settings(), follow=FollowRequest(traces[0].name, interval=0.2, use_cache=False))
        screen = "FollowScreen"
    elif traces[0].is_dir():
        app = TraceApp([], use_cache=False, job_inputs=[str(traces[0])], workers=1, settings=Settings())
    elif name.startswith("diff"):
        request = DiffRequest((str(traces[0]),), (str(traces[1]),), use_cache=False)
        app = TraceApp([], use_cache=False, diff=request, settings=Settings())
        screen = "DiffScreen"
    else:
        app = TraceApp([str(p) for p in traces], use_cache=False, settings=Settings())  # not the user's theme
        if name.startswith("memory_snapshot"):
            screen = "MemorySnapshotScreen"
    async with app.run_test(size=size) as pilot:
        # the load worker starts after the first frame; the browser's findings worker after its
        # (the status line counts them): wait for both, so the status line is the same every time
        while type(app.screen).__name__ != screen or not getattr(app.screen, "findings_shown", True) \
                or len(getattr(app.screen, "cycles", [None] * 3)) < 3:
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        for key in keys:
            typed = isinstance(app.focused, Input)  # a letter typed into the query bar opens nothing
            await pilot.press(key)
            if key in ("s", "M", "enter", "i", "b", "o"):  # summaries, memory, queries, the icicle and bottom-up
                # trees, the memory plot: computed in a worker before their screen opens
                await app.workers.wait_for_complete()
                await pilot.pause()
            if key == "P" and not typed:  # the path too
                while type(app.screen).__name__ != "CriticalPathScreen":
                    await app.workers.wait_for_complete()
                    await pilot.pause(0.05)
        await pilot.pause()
        path = out / name
        app.save_screenshot(filename=name, path=str(out))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "screenshots"), help="output folder (default: screenshots/)")
    ap.add_argument("--only", default=None, metavar="NAME", help="make only this screenshot (e.g. job_cross_rank.svg)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = (DRIVER_ALONE, DRIVER_OF_BERT, BERT_NEW, FOLLOW_RUNS)
    missing = [p for _, traces, _, _, _ in VIEWS for p in traces if p not in written and not p.exists()]
    if missing:
        print(f"make_screenshots: trace not found: {missing[0]}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        files = write_driver_traces(Path(tmp))
        for name, traces, keys, size, what in VIEWS:
            if args.only and name != args.only:
                continue
            cwd = os.getcwd()
            try:
                path = asyncio.run(shoot(name, [files.get(p, p) for p in traces], keys, size, out))
            finally:
                os.chdir(cwd)  # the follow view runs in its folder's parent
            print(f"{path}  ({size[0]}x{size[1]}: {what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
