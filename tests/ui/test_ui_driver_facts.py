"""What the browser says about driver-call traces, checked without a terminal: ioctl numbers
decoded by the Linux _IOC layout, return values in words, the running allocation total
(from the file, or summed when the file gives none), the phase row's cells and the status
line's parts fitted to 80 and 120 columns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from driver_ui_files import FACTS, write_bpftrace, write_linked

from tracetui.driver.facts import (
    allocation_series,
    call_contents,
    ioctl_number,
    ioctl_short,
    return_words,
)
from tracetui.driver.schema import What
from tracetui.session import open_traces
from tracetui.ui.view.driver_tracks import PhaseTrack, allocation_tracks, phase_tracks
from tracetui.ui.view.status_parts import fit_status, trace_parts


def test_ioctl_numbers_are_split_by_the_linux_ioc_layout():
    # 0xc020462a: direction 3 (bits 30-31), size 0x020 (bits 16-29), type 0x46 'F', nr 0x2a
    num = ioctl_number(0xC020462A)
    assert (num.direction, num.size, num.type, num.nr) == ("read/write", 32, 0x46, 0x2A)
    assert num.words() == "_IOC(read/write, 'F' (0x46), nr 0x2a, 32 B)"
    assert num.nvidia == "NV_ESC_RM_CONTROL" and num.hex == "0xc020462a"
    assert ioctl_short(3222292010) == "0xc010462a NV_ESC_RM_CONTROL"  # FORMATS.md's example: 16-byte params
    assert ioctl_number(0xC030462B).nvidia == "NV_ESC_RM_ALLOC"
    # _IO('F', 201): no direction, no size; _IOW('T', 1, int) is not NVIDIA's
    assert ioctl_number(0x46C9).words() == "_IOC(none, 'F' (0x46), nr 0xc9, 0 B)"
    assert ioctl_number(0x46C9).nvidia == "NV_ESC_REGISTER_FD"
    w = ioctl_number(0x40045401)
    assert (w.direction, w.type_text, w.nr, w.size, w.nvidia) == ("write", "'T' (0x54)", 1, 4, None)
    assert ioctl_number(0x8004AE01).direction == "read"
    assert ioctl_number(2**32) is None and ioctl_number(-1) is None


def test_return_values_in_words():
    assert return_words(What.CALL, "cuLaunchKernel", 0) == ("0 (CUDA_SUCCESS)", False)
    assert return_words(What.CALL, "cuModuleLoadData", 200) == ("200 (CUDA_ERROR_INVALID_IMAGE)", True)
    assert return_words(What.CALL, "cuMemAlloc_v2", 2) == ("2 (CUDA_ERROR_OUT_OF_MEMORY)", True)
    assert return_words(What.CALL, "cudaMalloc", 2) == ("2", True)  # the runtime's codes differ: no name
    assert return_words(What.CALL, "cuFoo", 12345) == ("12345", True)
    assert return_words(What.IOCTL, "nvidia_ioctl", 0) == ("0 (success)", False)
    words, error = return_words(What.IOCTL, "nvidia_ioctl", -22)
    assert error and words.startswith("-22 (EINVAL: ")


def test_allocation_totals_from_the_file_or_summed(tmp_path):
    kt = open_traces([str(write_bpftrace(tmp_path / "t.jsonl"))]).kineto
    (series,) = allocation_series(kt)
    assert series.from_file and series.total.tolist() == FACTS["alloc_totals"]
    # the same records without total_allocated: the running sum of the sizes
    path = tmp_path / "no_totals.jsonl"
    lines = []
    for line in (tmp_path / "t.jsonl").read_text().splitlines():
        if '"memory"' in line:
            obj = json.loads(line)
            del obj["total_allocated"]
            line = json.dumps(obj)
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    kt2 = open_traces([str(path)]).kineto
    (summed,) = allocation_series(kt2)
    assert not summed.from_file and summed.total.tolist() == np.cumsum(FACTS["alloc_sizes"]).tolist()
    (lane,) = allocation_tracks(kt2)
    assert lane.label == "bytes alloc" and lane.values.tolist() == summed.total.tolist()
    assert np.all(lane.ends >= lane.starts) and lane.ends[0] == lane.starts[1]  # held until the next record


def test_what_a_call_holds(tmp_path):
    kt = open_traces([str(write_bpftrace(tmp_path / "t.jsonl"))]).kineto
    launch = next(int(e) for e in kt.driver_events() if kt.name(int(e)) == "cuLaunchKernel")
    c = call_contents(kt, launch)
    assert (c.ioctls, dict(c.commands), list(c.records)) == (1, {FACTS["ioctl_cmd"]: 1}, ["kernel launch"])
    assert c.short() == "1 ioctl, kernel launch"


def test_phase_row_cells_name_each_phase():
    lane = PhaseTrack("phases 1", np.array([0.0, 10.0, 40.0]), np.array([10.0, 40.0, 100.0]),
                     names=("initialisation", "warm-up", "inference"))
    text = "".join(c or " " for c in lane.cell_text(np.linspace(0.0, 100.0, 21)))  # 5 µs cells
    assert text == "┃i┃warm-┃inference──"
    # a window starting inside a phase: no mark for it, its name from the window's start
    assert "".join(lane.cell_text(np.linspace(50.0, 100.0, 11))) == "inference─"
    assert not lane.marks_gaps


def test_phase_lanes_of_a_driver_trace(tmp_path):
    kt = open_traces([str(write_bpftrace(tmp_path / "t.jsonl"))]).kineto
    lanes = phase_tracks(kt)
    assert [ln.label for ln in lanes] == ["phases 4242", "phases 4343"]
    assert lanes[0].names == ("initialisation", "weight loading", "warm-up", "inference", "output", "clean-up")


@pytest.mark.parametrize("width", [80, 120])
def test_status_parts_fit_one_line(tmp_path, width):
    alone = open_traces([str(write_bpftrace(tmp_path / "t.jsonl"))])
    line = fit_status(trace_parts(alone), width - 2).plain  # the status widget's padding
    assert len(line) <= width - 2 and line.startswith("t.jsonl · bpftrace · ") and "⚠ 2 warnings (w)" in line
    kineto, drv = write_linked(tmp_path)
    linked = open_traces([str(kineto), str(drv)])
    line = fit_status(trace_parts(linked), width - 2).plain
    assert len(line) <= width - 2 and "⚠ 2 warnings (w)" in line
    assert ("driver link 86/86, offset ±0.0 µs" if width >= 120 else "driver 86/86") in line
