"""Decoding in forked worker processes gives exactly the columns of a serial decode.

Each comparison runs in a fresh interpreter (``_compare``): forking is only used by
processes without other threads, which a pytest process may not be.  Slices are made
small (1,024-event chunks, 1,000 events per worker) so real shared traces split into
several workers.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap

import orjson
import pytest
from shared_traces import kineto_path

from tracetui.kineto import parallel

QWEN = kineto_path("h100_qwen_chat_inference.json.gz")

_SCRIPT = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import tracetui.kineto.columns as columns
    import tracetui.kineto.decode as decode
    import tracetui.kineto.parallel as parallel
    from tracetui.io.files import read_trace_bytes
    from tracetui.kineto import load_kineto

    path, workers, sabotage = sys.argv[1], sys.argv[2], sys.argv[3]
    columns.COL_CHUNK = 1024
    parallel.MIN_EVENTS_PER_WORKER = 1000
    decode.WHOLE_DECODE_BYTES = 0  # a small trace is otherwise decoded in one call
    used = []
    real = parallel.columns_parallel
    def spy(text, spans, chunk, n, workers, cols, progress=None):
        used.append(workers)
        return real(text, spans, chunk, n, workers, cols, progress)
    parallel.columns_parallel = spy
    if sabotage == "worker_dies":  # every worker exits before sending anything
        parent = os.getpid()
        real_add = columns.Columns.add_spans
        def add_spans(self, text, spans, progress=None):
            if os.getpid() != parent:
                os._exit(3)
            return real_add(self, text, spans, progress)
        columns.Columns.add_spans = add_spans

    def decoded(w):
        os.environ["TRACETUI_DECODE_WORKERS"] = w
        data = read_trace_bytes(path).data
        from tracetui.kineto import decode
        return decode.decode_events(path, data)

    a, b = decoded("1"), decoded(workers)
    ea, eb = a.events, b.events
    for f in ("ph", "cat", "name", "pid", "tid"):
        assert getattr(ea, f).values == getattr(eb, f).values, f
        assert np.array_equal(getattr(ea, f).codes, getattr(eb, f).codes), f
    for f in ("ts_int", "args_offsets"):
        assert np.array_equal(getattr(ea, f), getattr(eb, f)), f
    for f in ("ts_frac", "dur"):  # NaN: missing / not a number in the file
        assert np.array_equal(getattr(ea, f), getattr(eb, f), equal_nan=True), f
    assert ea.args_blob[:] == eb.args_blob[:], "args"
    assert ea.flow_id == eb.flow_id, "flow ids"
    for k in ea.key_args:
        assert np.array_equal(ea.key_args[k], eb.key_args[k]), k
    assert [w.message for w in a.warnings] == [w.message for w in b.warnings]
    os.environ["TRACETUI_DECODE_WORKERS"] = workers
    kt = load_kineto(path)
    print(json.dumps({"rows": len(ea.ph), "parallel_calls": used, "warnings": [w.message for w in b.warnings],
                      "events": kt.n_events}))
''')


def _compare(path, workers: int = 4, sabotage: str = "") -> dict:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path), str(workers), sabotage or "-"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_parallel_decode_of_a_real_trace_is_identical():
    out = _compare(QWEN)
    assert out["parallel_calls"] == [4, 4]  # the compared decode and the full load_kineto both used 4 processes
    assert out["rows"] == 18221  # 4 slices of 4,608 rows or fewer
    assert out["warnings"] == []


def test_a_worker_that_dies_costs_only_time():
    out = _compare(QWEN, sabotage="worker_dies")
    assert out["parallel_calls"][:1] == [4]


def _write_mutated(tmp_path, mutate) -> str:
    doc = orjson.loads(gzip.decompress(QWEN.read_bytes()))
    mutate(doc["traceEvents"])
    p = tmp_path / "mutated.json"
    p.write_bytes(orjson.dumps(doc))
    return str(p)


def test_repairs_in_a_worker_slice_are_reported_with_their_file_index(tmp_path):
    # the last event with a correlation id (traceEvents[18155] of 18,221): in the last worker's slice
    def mutate(evs):
        i = max(k for k, e in enumerate(evs) if isinstance(e.get("args"), dict) and "correlation" in e["args"])
        assert i == 18155
        evs[i]["args"]["correlation"] = "corr-699228"  # not an integer: kept in args, counted
    out = _compare(_write_mutated(tmp_path, mutate))
    assert len(out["warnings"]) == 1 and "coerced" in out["warnings"][0]
    assert "'correlation' not a 64-bit integer" in out["warnings"][0]
    assert "(first: traceEvents[18155])" in out["warnings"][0]  # the worker's row numbers are global


def test_a_slice_the_fast_path_refuses_falls_back_like_a_serial_decode(tmp_path):
    at = []

    def mutate(evs):
        at.append(max(k for k, e in enumerate(evs) if e.get("ph") == "X"))
        evs[at[0]]["name"] = 12345  # not a string: the typed decode refuses, the tolerant path repairs
    out = _compare(_write_mutated(tmp_path, mutate))
    assert at[0] > out["rows"] * 3 // 4  # in the last worker's slice
    assert len(out["warnings"]) == 1 and "coerced" in out["warnings"][0]
    assert f"'name' not a string (first: traceEvents[{at[0]}])" in out["warnings"][0]


def test_worker_count_rules(monkeypatch):
    monkeypatch.setattr(parallel, "available_cpus", lambda: 16)
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    monkeypatch.setattr(parallel.sys, "platform", "linux")
    monkeypatch.delenv("TRACETUI_DECODE_WORKERS", raising=False)
    assert parallel.decode_workers(2_160_000) == parallel.MAX_WORKERS == 4
    assert parallel.decode_workers(450_000) == 2  # at least MIN_EVENTS_PER_WORKER each
    assert parallel.decode_workers(150_000) == 1
    monkeypatch.setenv("TRACETUI_DECODE_WORKERS", "1")
    assert parallel.decode_workers(2_160_000) == 1
    monkeypatch.setenv("TRACETUI_DECODE_WORKERS", "3")
    assert parallel.decode_workers(2_160_000) == 3
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 2)  # forking a threaded process: never
    assert parallel.decode_workers(2_160_000) == 1
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    monkeypatch.setattr(parallel.sys, "platform", "darwin")  # not fork-safe there
    assert parallel.decode_workers(2_160_000) == 1


@pytest.mark.parametrize("n,chunk", [(10, 3), (7, 7), (1, 4), (9, 2)])
def test_spans_cover_every_event_once(n, chunk):
    """The runs of whole events the chunked decode cuts the events array into: each its
    events' text (the commas and spaces between them included), nothing else."""
    import msgspec

    from tracetui.kineto.decode import chunk_spans

    elements = [b'{"name": "a,]", "ts": %d}' % i for i in range(n)]
    doc = b'{"traceEvents": [ ' + b" ,\n ".join(elements) + b' ] }'
    events = msgspec.json.decode(doc, type=dict[str, msgspec.Raw])["traceEvents"]
    spans, count = chunk_spans(events, chunk)
    assert count == n and len(spans) == -(-n // chunk)
    text = bytes(events)
    got = [msgspec.json.decode(b"[" + text[a:b] + b"]") for a, b in spans]
    assert [len(g) for g in got[:-1]] == [chunk] * (len(got) - 1)
    assert [e["ts"] for g in got for e in g] == list(range(n))


def test_load_reports_decode_progress_chunk_by_chunk():
    """The longest step of a load reports how far it is (one report per ``COL_CHUNK``-event chunk)."""
    from tracetui.kineto import load_kineto
    from tracetui.kineto.columns import COL_CHUNK

    seen: list[tuple[str, float]] = []
    load_kineto(kineto_path("v100x2_nccl_216k.json.gz"), progress=lambda m, f: seen.append((m, f)))
    decoding = [f for m, f in seen if m == "decoding"]
    assert decoding == sorted(decoding) and decoding[0] == pytest.approx(0.1) and decoding[-1] == pytest.approx(0.5)
    assert len(decoding) == 1 + -(-216_092 // COL_CHUNK)  # 216,092 events: 14 chunks of 16,384


_FUZZ = textwrap.dedent('''
    import gzip, os, random, sys
    import tracetui.kineto.columns as columns
    import tracetui.kineto.parallel as parallel
    from tracetui.errors import TraceError
    from tracetui.kineto import load_kineto

    columns.COL_CHUNK = 1024
    parallel.MIN_EVENTS_PER_WORKER = 500
    src = gzip.decompress(open(sys.argv[1], "rb").read())
    rng = random.Random(int(sys.argv[2]))
    out_path = sys.argv[3]

    def outcome(workers):
        os.environ["TRACETUI_DECODE_WORKERS"] = workers
        try:
            kt = load_kineto(out_path)
        except TraceError as exc:
            return ("error", str(exc))
        return ("ok", kt.n_events, [w.message for w in kt.warnings], kt.name_id.tobytes(), kt.parent.tobytes(),
                kt.ts.tobytes(), kt.args_blob[:])

    for k in range(int(sys.argv[4])):
        data = bytearray(src)
        kind = rng.choice(["cut", "flip", "flips", "type"])
        if kind == "cut":
            data = data[:rng.randrange(len(data))]
        elif kind == "flip":
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == "flips":
            for _ in range(20):
                data[rng.randrange(len(data))] = rng.choice(b'{}[],:"0a ')
        else:
            i = data.find(b'"dur":', rng.randrange(len(data)))
            if i > 0:
                data[i + 6:i + 6] = b'"x",'
        open(out_path, "wb").write(bytes(data))
        serial, forked = outcome("1"), outcome("4")
        assert serial == forked, (k, kind, serial[:2], forked[:2])
    print("same")
''')


@pytest.mark.slow
def test_damaged_traces_give_the_same_outcome_serial_and_forked(tmp_path):
    """Cuts, byte flips and retyped fields of a real trace: the decode in 4 processes gives
    the same error, or the same events, warnings, tree and args, as the serial decode
    (260 mutations checked the same way while writing it; 16 here)."""
    proc = subprocess.run([sys.executable, "-c", _FUZZ, str(QWEN), "7", str(tmp_path / "t.json"), "16"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "same", proc.stderr[-3000:]
