"""Every JSON output carries integers beyond 64 bits exactly (tracetui/io/jsonout.py): orjson
refuses to write them and reads them back as floats."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest
from shared_traces import kineto_path

from tracetui import cli
from tracetui.io import jsonout

COMMS_ID = 10159970886766084423  # "Comms Id" of record_param_comms in large_integer_values (read from the file)
BIG_PID = 123456789012345678901234567890


def test_the_shared_trace_holds_the_big_integer():
    doc = json.loads(gzip.decompress(kineto_path("large_integer_values.json.gz").read_bytes()))
    assert doc["traceEvents"][1]["args"]["Comms Id"] == COMMS_ID > 2**63


@pytest.fixture
def big_pid_trace(tmp_path):
    """The shared trace with its pid set beyond 64 bits (as a trace from a pid-namespace
    tool can have): every pid becomes BIG_PID."""
    doc = json.loads(gzip.decompress(kineto_path("large_integer_values.json.gz").read_bytes()))
    for ev in doc["traceEvents"]:
        ev["pid"] = BIG_PID
    path = tmp_path / "big_pid.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("command", [["summary", "--json"], ["info", "--json"], ["summary"]])
def test_summary_and_info_write_the_big_pid_exactly(big_pid_trace, command, capsys, monkeypatch):
    # Wide enough that the text tables do not wrap the 30 digits inside their cell (what a
    # terminal width defaults to differs between pytest runs with and without xdist).
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main([command[0], big_pid_trace, *command[1:]]) == 0
    out = capsys.readouterr().out
    assert str(BIG_PID) in out
    if "--json" in command:
        assert str(BIG_PID) in json.dumps(json.loads(out))  # valid JSON, the number exact


def test_a_stored_summary_gives_the_big_pid_back_exactly(big_pid_trace, capsys):
    assert cli.main(["summary", big_pid_trace, "--json"]) == 0
    first = capsys.readouterr().out
    assert cli.main(["summary", big_pid_trace, "--json"]) == 0  # from the stored summary
    assert capsys.readouterr().out == first


@pytest.mark.parametrize("fmt", ["json", "chrome"])
def test_exports_write_big_integers_exactly(big_pid_trace, fmt, tmp_path):
    cases = [(big_pid_trace, BIG_PID)]
    if fmt == "chrome":  # the Chrome trace keeps every arg; the JSON report has no raw args
        cases.append((str(kineto_path("large_integer_values.json.gz")), COMMS_ID))
    for source, wanted in cases:
        out = tmp_path / f"out.{fmt}.json"
        assert cli.main(["export", source, "--format", fmt, "-o", str(out)]) == 0
        text = out.read_text()
        json.loads(text)
        assert str(wanted) in text


def test_dumps_matches_orjson_when_it_can_and_round_trips_when_it_cannot():
    small = {"a": [1, 2.5, None, "é"], 3: {"b": True}}
    assert jsonout.dumps(small, indent=True) == orjson.dumps(
        small, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    big = {"pid": BIG_PID, "neg": -(2**70), "max": 2**64 - 1, 2**80: "key", "nan": float("nan")}
    out = jsonout.dumps(big)
    assert jsonout.loads(out) == {"pid": BIG_PID, "neg": -(2**70), "max": 2**64 - 1, str(2**80): "key",
                                  "nan": None}
