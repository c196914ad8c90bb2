"""``tracetui follow DIR --json`` while a writer drops traces into DIR (docs/follow.md): one line per
complete trace with the numbers ``summary --json`` and ``check --json`` give for the same file, the
slow cycle flagged, no read of a part of a file; ``--once``; bad input."""

from __future__ import annotations

import gzip
import json
import os
import statistics

import pytest
from shared_traces import kineto_path
from trace_writer import Drop, TraceWriter, cuts_after_braces, gz, handler_name, slowed

from tracetui.cli.entry import main
from tracetui.follow import watch
from tracetui.store import traces as store_traces

BERT = gzip.decompress(kineto_path("h100_bert_inference.json.gz").read_bytes())
SLOW = slowed(BERT, 1.5)


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def _expected(capsys, path: str) -> dict:
    """What ``summary --json`` and ``check --json`` say of ``path`` (cache off): the numbers a
    follow line must repeat."""
    rc, out, _ = _cli(capsys, "summary", path, "--json", "--no-cache")
    assert rc == 0
    s = json.loads(out)
    steps = s["launches"]["steps"]
    tl = s["gpu_timeline"]
    rc, out, _ = _cli(capsys, "check", path, "--json", "--no-cache")
    assert rc == 0
    return {"steps": len(steps), "step_us": statistics.fmean(r["dur"] for r in steps),
            "gpu_busy_pct": tl["busy_ms"] * 100 / tl["total_ms"],
            "top_kernel": s["kernels"][0]["name"], "top_kernel_us": s["kernels"][0]["total_us"],
            "findings": json.loads(out)["counts"]}


def _check_numbers(line: dict, want: dict) -> None:
    assert line["steps"] == want["steps"]
    assert line["step_us"] == pytest.approx(want["step_us"], rel=1e-12)
    assert line["gpu_busy_pct"] == pytest.approx(want["gpu_busy_pct"], rel=1e-12)
    assert line["top_kernel"] == {"name": want["top_kernel"], "total_us": want["top_kernel_us"]}
    assert line["findings"] == want["findings"]


@pytest.fixture
def reads(monkeypatch):
    """Every load of a followed file, with what the file held at that moment."""
    seen: list[tuple[str, bytes]] = []
    real = store_traces.load_cached

    def counting(paths, **kwargs):
        for p in paths:
            with open(p, "rb") as f:
                seen.append((os.path.basename(p), f.read()))
        return real(paths, **kwargs)

    monkeypatch.setattr(store_traces, "load_cached", counting)
    return seen


@pytest.mark.slow
def test_follow_json_prints_one_line_per_complete_trace_while_a_writer_drops_them(tmp_path, capsys, reads):
    drops = [
        Drop(handler_name(0), gz(BERT)),  # at once
        Drop(handler_name(1), gz(BERT), cuts=(4000, 20000, 40000, 60000), pause=0.3),  # slowly, in pieces
        # plain JSON, each piece ending with '}'
        Drop(handler_name(2, gz=False), BERT, cuts=tuple(cuts_after_braces(BERT, 5)), pause=0.35),
        Drop(handler_name(3), gz(SLOW), cuts=(30000,), pause=0.3),  # 1.5x slower
        Drop(handler_name(4), gz(BERT), cuts=(10000, 30000, 50000), pause=0.3, delete=True),  # deleted half written
        Drop(handler_name(5), gz(BERT), cuts=(20000,), pause=0.2, after=0.0),
    ]
    writer = TraceWriter(str(tmp_path), drops)
    writer.start()
    try:
        rc, out, err = _cli(capsys, "follow", str(tmp_path), "--json", "--fail-above", "20", "--interval", "0.1",
                            "--idle-exit", "4")
    finally:
        writer.join(timeout=60)
    assert writer.error is None and not writer.is_alive()
    assert rc == 1, err  # the slow cycle regressed
    lines = _lines(out)
    complete = [d.name for d in drops if not d.delete]
    # exactly one line per complete trace, in the order written
    assert [os.path.basename(x["file"]) for x in lines] == complete
    assert [x["cycle"] for x in lines] == [1, 2, 3, 4, 5]
    assert {x["worker"] for x in lines} == {"gpu-box_4242"}
    # each line's size is the complete file's, and every read saw the whole file, never a part
    assert [x["size"] for x in lines] == [len(writer.final[n]) for n in complete]
    assert reads and all(data == writer.final.get(name) for name, data in reads), \
        [(n, len(d), len(writer.final.get(n, b""))) for n, d in reads if d != writer.final.get(n)]
    assert handler_name(4) not in {n for n, _ in reads}
    # the numbers are those of summary --json / check --json of the same file
    normal = _expected(capsys, str(tmp_path / handler_name(0)))
    slow = _expected(capsys, str(tmp_path / handler_name(3)))
    for x in lines:
        _check_numbers(x, slow if x["file"].endswith(handler_name(3)) else normal)
    assert slow["step_us"] == pytest.approx(1.5 * normal["step_us"])
    # the slow one is flagged against the first and the previous cycle; the one after it is not
    assert [x["regressed"] for x in lines] == [[], [], [], ["first", "previous"], []]
    assert lines[3]["vs_first"]["delta_pct"] == pytest.approx(50.0)
    assert lines[3]["change"]["step_time"]["delta_pct"] == pytest.approx(50.0)  # the diff engine agrees
    assert lines[4]["vs_previous"]["delta_pct"] == pytest.approx(-100 / 3)
    assert lines[0]["vs_first"] is None and lines[0]["change"] is None
    assert "step time regressed by +50.0% against the first cycle (more than 20%)" in err
    assert f"{handler_name(4)}: deleted before it was complete" in err


@pytest.mark.slow
def test_follow_once_reads_what_is_there_and_stops(tmp_path, capsys, reads):
    for k, data in enumerate((gz(BERT), gz(BERT), gz(SLOW))):
        (tmp_path / handler_name(k)).write_bytes(data)
    (tmp_path / handler_name(9)).write_bytes(gz(BERT)[:5000])  # never finished
    old = os.stat(tmp_path / handler_name(0)).st_mtime - 60
    for k in (0, 1, 2, 9):
        os.utime(tmp_path / handler_name(k), (old, old))
    rc, out, err = _cli(capsys, "follow", str(tmp_path), "--once", "--json")
    assert rc == 0  # no --fail-above
    lines = _lines(out)
    assert [x["cycle"] for x in lines] == [1, 2, 3] and "regressed" not in lines[0]
    assert lines[2]["vs_previous"]["delta_pct"] == pytest.approx(50.0)
    assert f"{handler_name(9)}: incomplete" in err
    rc, out, err = _cli(capsys, "follow", str(tmp_path), "--once", "--fail-above", "60%")
    assert rc == 0 and len(out.splitlines()) == 3 and "cycle 3" in out.splitlines()[2]
    rc, _, err = _cli(capsys, "follow", str(tmp_path), "--once", "--fail-above", "49.9")
    assert rc == 1 and err.count("regressed") == 2


def test_follow_bad_input_is_one_line(tmp_path, capsys):
    assert watch.POLL_S == 1.0  # the default the help shows
    rc, _, err = _cli(capsys, "follow", str(tmp_path / "nowhere"), "--once")
    assert rc == 2 and err.strip().endswith("no such folder") and len(err.splitlines()) == 1
    f = tmp_path / "a.json"
    f.write_text("{}")
    rc, _, err = _cli(capsys, "follow", str(f), "--once")
    assert rc == 2 and "is not a folder" in err
    rc, _, err = _cli(capsys, "follow", str(tmp_path), "--once", "--interval", "0")
    assert rc == 2 and "--interval" in err
    rc, _, err = _cli(capsys, "follow", str(tmp_path), "--fail-above", "lots")
    assert rc == 2 and "--fail-above" in err
    rc, out, err = _cli(capsys, "follow", str(tmp_path), "--once", "--json")
    assert (rc, out) == (0, "")
    (tmp_path / "b.json").write_text('{"nodes": []}')  # neither a profiler trace nor complete garbage
    os.utime(tmp_path / "b.json", (0, 0))
    rc, out, err = _cli(capsys, "follow", str(tmp_path), "--once", "--json")
    assert (rc, out) == (0, "") and "b.json: not read:" in err and len(err.splitlines()) == 2


@pytest.mark.slow
def test_the_ranks_of_a_job_are_series_each_compared_with_itself(tmp_path, capsys):
    """tensorboard_trace_handler in a job: one worker per rank, one file per cycle and worker."""
    from shared_traces import SHARED

    job = SHARED / "multirank" / "param_dlrm_8ranks"
    ranks = {}
    for k, worker in enumerate(("node7_100", "node7_101")):
        raw = (job / f"rank{k}_kineto.json.gz").read_bytes()
        ranks[worker] = json.loads(gzip.decompress(raw))["distributedInfo"]["rank"]  # read from the file
        for cycle in range(2):
            (tmp_path / handler_name(2 * cycle + k, worker=worker)).write_bytes(raw)
            os.utime(tmp_path / handler_name(2 * cycle + k, worker=worker), (0, 0))
    rc, out, _ = _cli(capsys, "follow", str(tmp_path), "--once", "--json")
    lines = _lines(out)
    assert rc == 0 and len(lines) == 4
    assert [(x["worker"], x["cycle"]) for x in lines] == [("node7_100", 1), ("node7_101", 1), ("node7_100", 2),
                                                          ("node7_101", 2)]
    assert all(x["rank"] == ranks[x["worker"]] for x in lines) and set(ranks.values()) == {0, 1}
    for x in lines[2:]:  # each rank against its own earlier cycle
        assert os.path.basename(x["vs_previous"]["file"]).startswith(x["worker"] + ".")
        assert x["vs_previous"]["delta_pct"] == 0.0 and x["change"]["step_time"]["delta_pct"] == 0.0
