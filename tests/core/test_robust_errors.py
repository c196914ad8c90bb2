"""The error model (issue 7, item 1; issue 2, item 8): every bad input is a TraceError with a
one-line message naming the file and, where known, the position; the CLI prints exactly that
line on stderr and exits 2, never a traceback."""

from __future__ import annotations

import gzip
import json

import pytest
from shared_traces import ET_DIR, KINETO

from tracetui.cli import main
from tracetui.errors import (
    TraceError,
    TraceFileError,
    TraceFormatError,
    WrongTraceKindError,
)
from tracetui.formats import unknown_format_message
from tracetui.kineto import load_kineto

MI250 = gzip.open(KINETO / "mi250_minitoy_train.json.gz").read()
_MID = MI250.index(b'"ph"', 30000)

#: the message names every format of the list, and what each looks for (tracetui/formats.py)
NOT_A_TRACE = unknown_format_message()
assert NOT_A_TRACE.startswith("not a Chrome trace JSON, PyTorch profiler trace, Execution Trace, driver-call "
                               "trace, ") and "(no 'traceEvents', 'nodes', JSON object line" in NOT_A_TRACE
#: name -> (file bytes, expected message after "<path>", exception class)
BAD = {
    "empty": (b"", ": file is empty", TraceFormatError),
    "whitespace": (b" \n\t ", ": file is empty", TraceFormatError),
    "text": (b"hello world", ": " + NOT_A_TRACE, TraceFormatError),
    "binary": (bytes(range(256)) * 4, ": " + NOT_A_TRACE, TraceFormatError),
    "other json": (b'{"foo": 1}', ": " + NOT_A_TRACE, TraceFormatError),
    "not utf-8": (b'{"\xff": 1}', ": " + NOT_A_TRACE, TraceFormatError),
    "events not a list": (b'{"traceEvents": {"a": 1}}', ": 'traceEvents' is an object, not a list of events",
                          TraceFormatError),
    "events a string": (b'{"traceEvents": "x"}', ": 'traceEvents' is a string, not a list of events",
                        TraceFormatError),
    "array of numbers": (b"[1, 2, 3]", ": no usable events: every element of traceEvents was rejected "
                                       "(3 not a JSON object (first: traceEvents[0]))", TraceFormatError),
    "corrupt middle": (MI250[:_MID] + b"}" + MI250[_MID + 1:],
                       f" at byte {_MID + 1}: not valid JSON (JSON is malformed: expected ',' or ']')",
                       TraceFormatError),
    "bad gzip": (b"\x1f\x8b" + b"x" * 40, " at byte 0: not a valid gzip stream (Error -3 while decompressing data: "
                                          "unknown compression method)", TraceFileError),
    "gzip header only": (gzip.compress(MI250)[:6], ": gzip stream ends after 6 bytes, before any data could be "
                                                   "decompressed", TraceFileError),
    "cut in header": (MI250[:700], ": file ends at byte 700 before the traceEvents array", TraceFormatError),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_prints_one_line_and_exits_2(case, tmp_path, monkeypatch, capsys):
    data, tail, _ = BAD[case]
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "bad.json"
    p.write_bytes(data)
    assert main(["info", str(p)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "Traceback" not in out.err
    assert out.err == f"tracetui: {p}{tail}\n"


ET_HEAD = gzip.open(ET_DIR / "et_only" / "hf_gpt2_schema_1.1.0.json.gz").read()[:105]
#: files cut before their event/node array: the CLI names the kind from the visible keys
CUT_HEADERS = {
    "kineto, gzip": (gzip.compress(MI250[:700]), ": file ends at byte 700 before the traceEvents array"),
    "kineto, no known key": (b'{"foo": ', ": file ends at byte 8 before the traceEvents array"),
    "kineto, cut after a minus sign": (b'{"foo": -', ": file ends at byte 9 before the traceEvents array"),
    "et": (ET_HEAD, ": file ends at byte 105 before the nodes array"),
}


@pytest.mark.parametrize("case", sorted(CUT_HEADERS))
def test_cli_names_the_kind_of_a_file_cut_in_its_header(case, tmp_path, monkeypatch, capsys):
    data, tail = CUT_HEADERS[case]
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "bad.json"
    p.write_bytes(data)
    assert main(["info", str(p)]) == 2
    assert capsys.readouterr().err == f"tracetui: {p}{tail}\n"


@pytest.mark.parametrize("case", sorted(BAD))
def test_load_kineto_raises_the_family(case, tmp_path):
    data, tail, cls = BAD[case]
    p = tmp_path / "bad.json"
    p.write_bytes(data)
    with pytest.raises(cls) as ei:
        load_kineto(p)
    msg = str(ei.value)
    assert msg.startswith(str(p)) and "\n" not in msg and len(msg) < 400
    assert ei.value.path == str(p)


def test_missing_and_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["info", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == f"tracetui: {tmp_path / 'nope.json'}: no such file\n"
    assert main(["info", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"tracetui: {tmp_path}: is a directory, not a trace file\n"


def test_position_of_a_gzip_file_counts_decompressed_bytes(tmp_path):
    data, _, _ = BAD["corrupt middle"]
    p = tmp_path / "bad.json.gz"
    p.write_bytes(gzip.compress(data))
    with pytest.raises(TraceFormatError) as ei:
        load_kineto(p)
    assert ei.value.position == f"byte {_MID + 1} (decompressed)"


def test_wrong_kind_both_ways(tmp_path, monkeypatch, capsys):
    from tracetui.et import load_et

    et = ET_DIR / "torch_cpu_pair" / "et.json.gz"
    kin = ET_DIR / "torch_cpu_pair" / "kineto.json.gz"
    with pytest.raises(WrongTraceKindError, match=r"this is a PyTorch Execution Trace \(ET\), not a Kineto trace"):
        load_kineto(et)
    with pytest.raises(WrongTraceKindError, match=r"is a Kineto profiler trace \(it has traceEvents\), not an "
                                                  r"Execution Trace"):
        load_et(kin)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    assert main(["info", "--no-cache", str(kin), str(kin)]) == 2
    assert capsys.readouterr().err == (f"tracetui: {kin}: both files are PyTorch profiler traces; the other file "
                                       "must be the Execution Trace, driver-call trace or CUDA memory snapshot of the "
                                       "same run\n")


# (the events carry a PyTorch category: without one, a traceEvents document is a generic Chrome
# trace, read by the same Kineto loader: tests/core/test_chrome_generic.py)
@pytest.mark.parametrize("keys, kind", [
    ({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}, "kineto"),
    ({"schema": "1.1.1", "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]"}]}, "et"),
    # nodes without schema beside traceEvents: not an ET (is_execution_trace needs schema)
    ({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}],
      "nodes": [{"id": 1, "name": "x"}]}, "kineto"),
])
def test_one_rule_names_the_format_for_the_sniffer_and_both_loaders(tmp_path, keys, kind):
    """io.files.kind_of_keys: the head sniff, the Kineto loader and the ET loader give the same
    answer (each loader names the other format when handed a file of it)."""
    from tracetui import formats
    from tracetui.et import load_et
    from tracetui.io.jsonkind import head_kind

    p = tmp_path / "doc.json"
    p.write_bytes(json.dumps(keys).encode())
    assert head_kind(p.read_bytes()) == kind
    assert formats.detect(p).spec.name == kind
    if kind == "kineto":
        assert load_kineto(p).n_events == 1
        with pytest.raises(WrongTraceKindError, match="is a Kineto profiler trace"):
            load_et(p)
    else:
        assert len(load_et(p).ids) == 1
        with pytest.raises(WrongTraceKindError, match="this is a PyTorch Execution Trace"):
            load_kineto(p)


def test_every_repair_is_a_warning_not_an_error(tmp_path, monkeypatch, capsys):
    """Odd content loads and `info` lists what was repaired, one warning per line."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": "NaN", "dur": 1}, 5,
           {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
            "args": {"correlation": 2**70}}]
    p = tmp_path / "odd.json"
    p.write_bytes(json.dumps({"traceEvents": evs}).encode())
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["info", "--json", "--no-cache", str(p)]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w.startswith("1 fields of an unexpected type were coerced (events kept): 1 'correlation' not a "
                            "64-bit integer") for w in warnings)
    assert any(w.startswith("1 events have no usable timestamp") for w in warnings)
    assert any(w.startswith("1 elements of traceEvents are not separate events in the model: 1 not a JSON object")
               for w in warnings)


def test_errors_are_one_family():
    for cls in (TraceFileError, TraceFormatError, WrongTraceKindError):
        assert issubclass(cls, TraceError)
    e = TraceFormatError("f.json", "bad thing", position="byte 12")
    assert str(e) == "f.json at byte 12: bad thing"


def test_control_characters_are_escaped_so_every_message_is_one_line(tmp_path, monkeypatch, capsys):
    e = TraceFormatError("a\nb\x1b[31m.json", "bad\r\nthing", position="byte\u20281")
    assert str(e) == "a\\nb\\x1b[31m.json at byte\\u20281: bad\\r\\nthing"
    assert (e.path, e.problem) == ("a\nb\x1b[31m.json", "bad\r\nthing")  # originals kept for code
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "two\nlines"
    d.mkdir()
    p = d / "bad.json"
    p.write_bytes(b"hello")
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == f"tracetui: {tmp_path}/two\\nlines/bad.json: {NOT_A_TRACE}\n"
    assert main(["info", str(d / "nope\n.json")]) == 2
    assert capsys.readouterr().err == f"tracetui: {tmp_path}/two\\nlines/nope\\n.json: no such file\n"
