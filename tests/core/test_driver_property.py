"""Hypothesis: a valid driver-call trace, damaged (lines dropped, garbage lines inserted, the
file cut at any byte), always loads or raises one-line TraceError, never anything else; its
summary builds; and every begin or end line left in the file ends up in exactly one call.

The begin and end lines are found by an oracle independent of the loader: the standard
library's JSON decoder and the layout rules of FORMATS.md, line by line."""

from __future__ import annotations

import json
import math
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from driver_files import bcc_file, bpftrace_file, preload_file, sidecar_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracetui.analysis.driver import driver_summary
from tracetui.driver import What, load_driver
from tracetui.errors import TraceError

BASES = {"bpftrace": bpftrace_file().lines, "preload": preload_file().lines, "bcc": bcc_file().lines,
         "sidecar": sidecar_file().lines}
BASES["mixed"] = BASES["bpftrace"][:40] + BASES["preload"] + BASES["bcc"]
GARBAGE = ["# Heartbeat: 12 events captured", "Attaching 3 probes...", "@calls[cuLaunchKernel]: 3", "{", "}",
           '{"ts": 1.0, "tid": 3', "[1, 2]", "{}", '{"x": 1}', '{"ts": "late", "type": "memory"}',
           '{"ts": 1e400, "type": "memory"}', '{"ts": 3.0, "type": "userspace", "phase": "E"}', "   ", "\t{}"]


def _role(obj: dict) -> str | None:
    """"B" or "E" for a begin or end line (FORMATS.md), else None."""
    ts = obj.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return None
    phase = obj.get("phase")
    op_id = obj.get("op_id")
    typ = obj.get("type")
    if isinstance(op_id, int) and not isinstance(op_id, bool) and op_id >= 0:  # LD_PRELOAD
        return phase if phase in ("B", "E") else None
    if isinstance(obj.get("func"), str) and obj["func"]:  # sidecar: entries only
        return None
    if isinstance(typ, int) and not isinstance(typ, bool):  # BCC: 1/6 enter, 2/7 exit
        return {1: "B", 6: "B", 2: "E", 7: "E"}.get(typ)
    if isinstance(typ, str) and typ:  # bpftrace: userspace calls, kernel-space ioctls
        call_like = typ == "userspace" or (typ == "kernel" and obj.get("op") != "launch")
        return phase if call_like and phase in ("B", "E") else None
    return None


def begin_end_lines(data: bytes) -> set[int]:
    out = set()
    for k, raw in enumerate(data.split(b"\n"), 1):
        text = raw.strip(b" \t\r")
        if not text.startswith(b"{"):
            continue
        try:
            obj = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(obj, dict) and _role(obj) is not None:
            out.add(k)
    return out


@st.composite
def damaged(draw) -> bytes:
    lines = list(BASES[draw(st.sampled_from(sorted(BASES)))])
    drop = draw(st.sets(st.integers(0, len(lines) - 1), max_size=len(lines) // 3))
    lines = [ln for k, ln in enumerate(lines) if k not in drop]
    for _ in range(draw(st.integers(0, 6))):
        junk = draw(st.one_of(st.sampled_from(GARBAGE), st.text(max_size=30).filter(lambda s: "\n" not in s)))
        lines.insert(draw(st.integers(0, len(lines))), junk)
    data = ("\n".join(lines) + "\n").encode()
    if draw(st.integers(0, 4)) == 0 and draw(st.booleans()):  # raw bytes somewhere
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(max_size=20)) + data[at:]
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_damaged_files_load_or_fail_in_one_line(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "damaged.jsonl"
        path.write_bytes(data)
        try:
            t = load_driver(path)
        except TraceError as exc:
            assert "\n" not in str(exc)
            assert not begin_end_lines(data)  # only a file with no event at all is refused
            return
    driver_summary(t)  # builds on whatever is left
    calls = [int(e) for e in t.driver_events() if t.what_of(int(e)) in (What.CALL, What.IOCTL)]
    seen: Counter = Counter()
    for e in calls:
        i = e - t.first
        seen.update({int(t.line_no[i]), int(t.end_line_no[i])} - {-1})
    assert set(seen) == begin_end_lines(data)
    assert all(c == 1 for c in seen.values())
    assert t.lines.total == t.lines.json + t.lines.skipped_total
