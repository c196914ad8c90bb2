"""The shared Nsight Systems export (two processes on two H100s) in the Kineto model: every
fact is counted from the raw SQLite file by the test's own ``sqlite3`` queries, independently
of the loader (tracetui/nsys/)."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from nsys_export import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, SYNC, abs_ns, end_ns, query
from shared_traces import load_shared_nsys, nsys_path

from tracetui import formats
from tracetui.kineto.kinds import Kind

SAMPLE = nsys_path()


@pytest.fixture(scope="module")
def tr():
    return load_shared_nsys()


def _of(tr, kind: Kind) -> np.ndarray:
    return np.flatnonzero(tr.kind == int(kind))


def test_the_export_is_recognised_by_content_and_read_as_a_kineto_trace(tr):
    assert formats.detect(SAMPLE) == formats.FileKind.NSYS
    assert tr.source_format == "nsys"
    counts = {t: query(SAMPLE, f"SELECT count(*) FROM {t}")[0][0] for t in (KERNEL, RUNTIME, MEMCPY, MEMSET, SYNC)}
    ranges = query(SAMPLE, f"SELECT count(*) FROM {NVTX} WHERE eventType IN (59, 60)")[0][0]
    assert tr.kind_counts() == {"kernel": counts[KERNEL], "runtime": counts[RUNTIME], "memcpy": counts[MEMCPY],
                                "memset": counts[MEMSET], "sync": counts[SYNC], "cpu_op": ranges}
    assert (counts[KERNEL], counts[RUNTIME], ranges) == (3442, 5796, 16782)  # the manifest's counts


def test_kernels_and_their_time_per_device_and_stream(tr):
    want = {(d, s): (n, t) for d, s, n, t in query(
        SAMPLE, f'SELECT deviceId, streamId, count(*), sum("end" - start) FROM {KERNEL} GROUP BY 1, 2')}
    k = _of(tr, Kind.KERNEL)
    got: dict = {}
    ns = end_ns(tr, k) - abs_ns(tr, k)
    for d, s, t in zip(tr.device[k].tolist(), tr.stream[k].tolist(), ns.tolist()):
        n0, t0 = got.get((d, s), (0, 0))
        got[(d, s)] = (n0 + 1, t0 + t)
    assert got == want == {(0, 7): (1721, 22385163), (1, 15): (1721, 22444359)}
    # one lane per device and stream, named as Kineto names them
    gpu = sorted(lane.label for lane in tr.lanes if lane.is_gpu)
    assert gpu == ["GPU 0 stream 7", "GPU 1 stream 15"]


def test_kernel_names_are_the_demangled_names(tr):
    want = Counter(dict(query(SAMPLE, f"SELECT s.value, count(*) FROM {KERNEL} k JOIN StringIds s "
                                      "ON s.id = k.demangledName GROUP BY 1")))
    assert Counter(tr.name(int(e)) for e in _of(tr, Kind.KERNEL)) == want


def test_kernel_launch_configuration_in_kinetos_arg_names(tr):
    rows = query(SAMPLE, f'SELECT start, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, '
                         f'staticSharedMemory, dynamicSharedMemory, correlationId FROM {KERNEL}')
    by_start = {r[0]: r for r in rows}
    assert len(by_start) == len(rows)  # starts are unique here: a kernel is found by its start
    k = _of(tr, Kind.KERNEL)
    for e, start in zip(k[::97].tolist(), abs_ns(tr, k[::97]).tolist()):
        r = by_start[start]
        a = tr.args(e)
        assert a["grid"] == list(r[1:4]) and a["block"] == list(r[4:7])
        assert a["registers per thread"] == r[7]
        assert a["shared memory"] == r[8] + r[9] and a["static shared memory"] == r[8]
        assert a["dynamic shared memory"] == r[9]
        assert a["correlationId"] == r[10]  # the file's id, beside the per-process key


def test_processes_and_threads_are_lanes_named_from_the_file(tr):
    procs = dict(query(SAMPLE, "SELECT pid, name FROM PROCESSES WHERE pid IN (111, 112)"))
    threads = {(g >> 24 & 0xFFFFFF, g & 0xFFFFFF): v for g, v in query(
        SAMPLE, "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId")}
    calls = {(g >> 24 & 0xFFFFFF, g & 0xFFFFFF) for (g,) in query(SAMPLE, f"SELECT DISTINCT globalTid FROM {RUNTIME}")}
    assert calls == {(111, 111), (112, 112)}
    for pid, tid in calls:
        assert tr.process_names[pid] == procs[pid] == "python3"
        assert tr.thread_names[(pid, tid)] == threads[(pid, tid)]
    host = {(lane.pid, lane.tid): lane.label for lane in tr.lanes if not lane.is_gpu}
    assert host[(111, 111)] == "python3 (pid 111)" and host[(112, 112)] == "python3 (pid 112)"


def _innermost(spans: list[tuple[int, int, int]]) -> dict[int, tuple[int, int] | None]:
    """Row -> (start, end) of the innermost range enclosing it on its thread (None: none);
    ``spans`` are (start, end, row) of one thread's ranges (a stack walk of the test's own)."""
    out: dict[int, tuple[int, int] | None] = {}
    stack: list[tuple[int, int]] = []
    for start, end, row in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= start:
            stack.pop()
        out[row] = stack[-1] if stack else None
        stack.append((start, end))
    return out


def test_nvtx_ranges_nest_in_the_innermost_enclosing_range_of_their_thread(tr):
    rows = query(SAMPLE, f'SELECT rowid, globalTid, start, "end" FROM {NVTX} WHERE eventType = 59')
    by_thread: dict = {}
    for rowid, g, s, e in rows:
        by_thread.setdefault(g & 0xFFFFFF, []).append((s, e, rowid))
    want = {}
    for spans in by_thread.values():
        want.update(_innermost(spans))
    key = {(g & 0xFFFFFF, s, e): rowid for rowid, g, s, e in rows}
    ops = _of(tr, Kind.CPU_OP)
    start, end = abs_ns(tr, ops), end_ns(tr, ops)
    checked = 0
    for ev, s, e in zip(ops.tolist(), start.tolist(), end.tolist()):
        row = key[(tr.tids[ev], s, e)]
        up = int(tr.parent[ev])
        while up < tr.n_events and tr.kind[up] != int(Kind.CPU_OP):  # the nearest range above (calls never hold one)
            up = int(tr.parent[up])
        got = None if up >= tr.n_events else (int(abs_ns(tr, np.array([up]))[0]), int(end_ns(tr, np.array([up]))[0]))
        assert got == want[row], (tr.name(ev), s)
        checked += 1
    assert checked == len(rows) == 16782


def test_every_kernel_with_a_call_of_its_process_hangs_under_that_call(tr):
    """Linked by (process, correlationId): ids repeat across processes, and 11 kernels share an
    id with a call of the *other* process only -- they have no launch, like every kernel whose
    call is outside the capture window."""
    same = query(SAMPLE, f'SELECT k.start, r.start, r."end", r.globalTid FROM {KERNEL} k JOIN {RUNTIME} r '
                         "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)")
    other = query(SAMPLE, f"SELECT k.start FROM {KERNEL} k WHERE NOT EXISTS (SELECT 1 FROM {RUNTIME} r "
                          "WHERE r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)) "
                          f"AND EXISTS (SELECT 1 FROM {RUNTIME} r WHERE r.correlationId = k.correlationId)")
    assert (len(same), len(other)) == (1632, 11)
    k = _of(tr, Kind.KERNEL)
    at = dict(zip(abs_ns(tr, k).tolist(), k.tolist()))
    for ks, rs, re_, g in same:
        e = at[ks]
        call = int(tr.launch_of[e])
        assert call >= 0 and int(tr.parent[e]) == call
        assert int(abs_ns(tr, np.array([call]))[0]) == rs and int(end_ns(tr, np.array([call]))[0]) == re_
        assert tr.tids[call] == g & 0xFFFFFF
        assert tr.args(call)["correlationId"] == tr.args(e)["correlationId"]
    for (ks,) in other:
        assert int(tr.launch_of[at[ks]]) == -1
    linked = int((tr.launch_of[k] >= 0).sum())
    assert linked == 1632


def test_memcpys_named_as_kineto_names_them_with_their_bytes(tr):
    rows = query(SAMPLE, f"SELECT o.name, s.label, d.label, count(*), sum(bytes) FROM {MEMCPY} m "
                         "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind "
                         "JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind "
                         "JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind GROUP BY 1, 2, 3")
    want = {}
    for oper, src, dst, n, b in rows:
        word = oper.removeprefix("CUDA_MEMCPY_KIND_").replace("TO", "to")  # HTOD -> HtoD
        want[f"Memcpy {word} ({src} -> {dst})"] = (n, b)
    got: dict = {}
    for e in _of(tr, Kind.MEMCPY).tolist():
        n0, b0 = got.get(tr.name(e), (0, 0))
        got[tr.name(e)] = (n0 + 1, b0 + tr.args(e)["bytes"])
    assert got == want
    assert "Memcpy HtoD (Pinned -> Device)" in got
    assert sum(b for _, b in got.values()) == 110_318_980_178  # the manifest's total


def test_memcpy_bandwidth_is_bytes_per_nanosecond(tr):
    e = int(_of(tr, Kind.MEMCPY)[0])
    a = tr.args(e)
    assert a["memory bandwidth (GB/s)"] == pytest.approx(a["bytes"] / (tr.dur[e] * 1000), rel=1e-12)


def test_memsets_and_synchronisations(tr):
    sets = query(SAMPLE, f"SELECT k.label, count(*), sum(bytes) FROM {MEMSET} m JOIN ENUM_CUDA_MEM_KIND k "
                         "ON k.id = m.memKind GROUP BY 1")
    assert Counter(tr.name(e) for e in _of(tr, Kind.MEMSET).tolist()) == {f"Memset ({k})": n for k, n, _ in sets}
    kinetos = {"Stream wait sync": "Stream Wait Event", "Stream sync": "Stream Sync", "Event sync": "Event Sync",
               "Context sync": "Context Sync"}
    syncs = query(SAMPLE, f"SELECT e.label, count(*) FROM {SYNC} s JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = s.syncType "
                          "GROUP BY 1")
    assert Counter(tr.name(e) for e in _of(tr, Kind.SYNC).tolist()) == {kinetos[k]: n for k, n in syncs}
    assert tr.category(int(_of(tr, Kind.SYNC)[0])) == "cuda_sync"


def test_a_sync_record_has_the_device_of_its_context(tr):
    """CUPTI's synchronisation records carry no device: the export writes deviceId 0 for the
    records of process 112, whose context runs on device 1."""
    ctx = dict(query(SAMPLE, f"SELECT DISTINCT contextId, deviceId FROM {KERNEL}"))
    raw_dev = {c: d for c, d in query(SAMPLE, f"SELECT DISTINCT contextId, deviceId FROM {SYNC}")}
    assert ctx == {1: 0, 2: 1} and raw_dev == {1: 0, 2: 0}
    for e in _of(tr, Kind.SYNC).tolist():
        assert int(tr.device[e]) == ctx[tr.args(e)["context"]]


_EMIT_NVTX = re.compile(r"^(?P<name>.*?), op_id = (?P<op>\d+)$")


def test_emit_nvtx_ranges_are_ops_named_without_their_op_id(tr):
    rows = query(SAMPLE, f"SELECT text FROM {NVTX} WHERE eventType = 59")
    names = Counter(_EMIT_NVTX.match(t).group("name") for (t,) in rows)
    ops = _of(tr, Kind.CPU_OP)
    assert Counter(tr.name(e) for e in ops.tolist()) == names
    want_ids = sorted(int(_EMIT_NVTX.match(t).group("op")) for (t,) in rows)
    assert sorted(tr.external_id[ops].tolist()) == want_ids
    e = int(ops[0])
    assert tr.args(e) == {"External id": int(tr.external_id[e])}
    assert tr.category(e) == "cpu_op"


def test_no_warning_but_the_launches_outside_the_capture(tr):
    assert [w.kind for w in tr.warnings] == ["gpu_unlinked"]
    unlinked = len(query(SAMPLE, f"SELECT 1 FROM {KERNEL} k WHERE NOT EXISTS (SELECT 1 FROM {RUNTIME} r WHERE "
                                 "r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))"))
    gpu = tr.gpu_stats
    assert gpu.gpu_events - gpu.linked == tr.warnings[0].count
    assert unlinked == 3442 - 1632
