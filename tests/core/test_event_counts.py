"""One definition of a trace's event counts (``driver/trace.py: event_counts``), used by
``summary`` and ``info`` (and the browser's status line): the events of a driver-call trace
are the lines of its file that are events (a call counted once for its begin and end lines),
never the phase spans tracetui derives; a Kineto trace merged with one keeps its own count.

Counts are checked against the raw files read here with gzip + json."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import orjson
import pytest
from driver_files import bpftrace_file
from shared_traces import SAMPLES

from tracetui.cli import main
from tracetui.driver.synthetic import main as synthetic_main
from tracetui.driver.trace import EventCounts, event_counts
from tracetui.session import open_traces
from tracetui.store.traces import load_cached

KINETO = SAMPLES / "h100_bert_inference.json.gz"


@pytest.fixture(scope="module")
def DRIVER(tmp_path_factory):  # noqa: N802 -- a file path, as KINETO
    """The README's synthetic driver-call file of the bundled sample (``python -m
    tracetui.driver.synthetic``), written as the README does it."""
    out = tmp_path_factory.mktemp("drv") / "bert_driver.jsonl"
    assert synthetic_main([str(KINETO), str(out)]) == 0
    return out


def _raw_driver_lines(path) -> Counter:
    """Lines of a bpftrace file by what they are: begin/end lines of calls (user space) and
    of ioctls (kernel space), records (no phase), text."""
    opener = gzip.open if str(path).endswith(".gz") else open
    out: Counter = Counter()
    with opener(path, "rt") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                out["text"] += 1
                continue
            if not isinstance(obj, dict):
                out["text"] += 1
            elif obj.get("phase") in ("B", "E"):
                out[("call" if obj.get("type") == "userspace" else "ioctl", obj["phase"])] += 1
            else:
                out["record"] += 1
    return out


def _raw_kineto_events(path) -> int:
    """Entries of traceEvents that are events: flows (s/t/f) and metadata (M) are not."""
    ev = json.load(gzip.open(path))["traceEvents"]
    return sum(1 for e in ev if e.get("ph") not in ("s", "t", "f", "M"))


def _json(capsys, *args) -> dict:
    assert main([*args, "--json", "--no-cache"]) == 0
    return orjson.loads(capsys.readouterr().out)


def test_synthetic_driver_sample_counts_match_its_file(capsys, DRIVER):  # noqa: N803
    raw = _raw_driver_lines(DRIVER)
    assert raw[("call", "B")] == raw[("call", "E")] == 120 and raw["record"] == 65 and raw["text"] == 3
    assert not raw[("ioctl", "B")]
    counts = event_counts(open_traces([DRIVER]).kineto)
    assert counts == EventCounts(kineto=0, calls=120, ioctls=0, records=65, phases=counts.phases)
    assert counts.driver == 185
    d = _json(capsys, "summary", str(DRIVER))["driver"]
    # summary and info say the same number as the status line: events in the file, phases apart
    assert d["events"] == 185 and d["events_by_what"]["phase"] == counts.phases == len(d["phases"])
    assert d["event_counts"] == {"calls": 120, "ioctls": 0, "records": 65, "phases": counts.phases}
    info = _json(capsys, "info", str(DRIVER))["driver"]
    assert info["events"] == 185 and info["phases"] == counts.phases


def test_driver_fixture_with_ioctls(tmp_path, capsys):
    path = bpftrace_file().write(tmp_path / "trace_cuda.jsonl")
    raw = _raw_driver_lines(path)
    calls, ioctls = raw[("call", "B")], raw[("ioctl", "B")]
    counts = event_counts(open_traces([path]).kineto)
    # a call whose end line is missing is still one call (its begin line)
    assert (counts.calls, counts.ioctls, counts.records) == (calls, ioctls, raw["record"])
    assert counts.driver == _json(capsys, "summary", str(path))["driver"]["events"]
    assert counts.phases > 0  # derived spans: in the tree, not in the count


def test_merged_trace_keeps_the_kineto_count(capsys, DRIVER):  # noqa: N803
    n_kineto = _raw_kineto_events(KINETO)
    assert n_kineto == 2298
    merged = load_cached([str(KINETO), str(DRIVER)], use_cache=False).kineto
    counts = event_counts(merged)
    assert counts.kineto == n_kineto and counts.driver == 185
    assert merged.n_events == n_kineto + counts.driver + counts.phases  # the model holds all of them
    doc = _json(capsys, "summary", str(KINETO), "--driver", str(DRIVER))
    assert doc["trace"]["events"] == n_kineto and doc["driver"]["events"] == 185
    assert doc["driver"]["kineto_events"] == n_kineto
    info = _json(capsys, "info", str(KINETO), "--driver", str(DRIVER))
    assert info["kineto"]["events"] == n_kineto and info["driver"]["events"] == 185
    assert event_counts(load_cached([str(KINETO)], use_cache=False).kineto) == EventCounts(kineto=n_kineto)


def test_the_synthetic_script_says_the_calls_summary_counts(tmp_path, capsys):
    """Issue 45: the script said "86 calls" where `summary` of its file says 120: it now prints
    the file's calls as every command counts them (the begin lines of calls in the raw file),
    and how many of them stand for the Kineto trace's calls."""
    out = tmp_path / "bert_driver.jsonl"
    assert synthetic_main([str(KINETO), str(out)]) == 0
    said = capsys.readouterr().out
    calls = _raw_driver_lines(out)[("call", "B")]
    assert f"driver-call trace of {calls:,} calls, 86 of them standing for calls of" in said
    assert main(["summary", str(out)]) == 0
    assert f"({calls:,} calls, " in capsys.readouterr().out
