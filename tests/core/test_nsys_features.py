"""What an Nsight Systems export carries beyond the shared sample's content, on copies changed
by SQL in tmp_path (emit_nvtx shapes and sequence numbers, NVTX steps, a CUDA graph launch,
GPU properties, CUDA event records), and every feature on it: the cache, diff, summary,
query, check, critical path, export and slice; facts checked against the raw file."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from nsys_export import KERNEL, NVTX, RUNTIME, SYNC, abs_ns, copy_with, query
from shared_traces import load_shared_nsys, nsys_path

from tracetui.analysis.occupancy import kernel_occupancy, theoretical_occupancy
from tracetui.analysis.steps import find_steps
from tracetui.cli import main
from tracetui.kineto.kinds import Kind
from tracetui.nsys import load_nsys

SAMPLE = nsys_path()
#: globalPid of process 111 (its main thread's globalTid: | 111)
(P111,), = query(SAMPLE, "SELECT globalPid FROM PROCESSES WHERE pid = 111")
PID = "((x >> 24) & 16777215)"  # the process of a globalPid/globalTid x


def _of(tr, kind: Kind) -> np.ndarray:
    return np.flatnonzero(tr.kind == int(kind))


def test_emit_nvtx_shapes_and_sequence_numbers(tmp_path):
    """record_shapes: ``<op>, seq = N, op_id = M, sizes = [[2, 3], []], input_op_ids = [...]``."""
    p = copy_with(tmp_path, f"UPDATE {NVTX} SET text = replace(text, ', op_id = ', ', seq = ' || (rowid * 3) || "
                            f"', op_id = ') || ', sizes = [[2, 3], [], [7]], input_op_ids = [(1,0), (2,1)]' "
                            "WHERE rowid % 50 = 0")
    changed = dict(query(p, f"SELECT start, rowid FROM {NVTX} WHERE rowid % 50 = 0 AND eventType = 59"))
    tr = load_nsys(p)
    ops = _of(tr, Kind.CPU_OP)
    at = dict(zip(abs_ns(tr, ops).tolist(), ops.tolist()))
    names = dict(query(SAMPLE, f"SELECT rowid, substr(text, 1, instr(text, ', op_id = ') - 1) FROM {NVTX} "
                               "WHERE rowid % 50 = 0"))
    for start, rowid in changed.items():
        e = at[start]
        a = tr.args(e)
        assert tr.name(e) == names[rowid]
        assert int(tr.seq[e]) == rowid * 3 == a["Sequence number"]
        assert a["Input Dims"] == [[2, 3], [], [7]]
        assert a["input_op_ids"] == "[(1,0), (2,1)]"
    assert int((tr.seq[ops] >= 0).sum()) == len(changed)


def test_nvtx_ranges_of_the_user_are_annotations_and_steps(tmp_path):
    """Three ``train_step`` ranges (plain NVTX text) at the top of process 111's thread: the
    steps of the trace, as ProfilerStep ranges are in a Kineto trace."""
    cuts = _idle_cuts(P111 | 111, 3)
    rows = [f"INSERT INTO {NVTX} (start, \"end\", eventType, globalTid, text) VALUES ({a}, {b}, 59, {P111 | 111}, "
            "'train_step')" for a, b in zip(cuts, cuts[1:])]
    tr = load_nsys(copy_with(tmp_path, *rows))
    ann = _of(tr, Kind.ANNOTATION)
    assert [tr.name(e) for e in ann] == ["train_step"] * 3 and tr.category(int(ann[0])) == "user_annotation"
    steps = find_steps(tr)
    assert steps.how == "annotation" and [s.name for s in steps.steps] == ["train_step"] * 3
    inside = query(SAMPLE, f'SELECT count(*) FROM {NVTX} WHERE globalTid = {P111 | 111} AND start >= {cuts[1]} '
                           f"AND start < {cuts[2]}")[0][0]
    second = int(ann[1])
    below = [e for e in range(tr.n_events) if tr.kind[e] == int(Kind.CPU_OP) and _under(tr, e, second)]
    assert len(below) == inside
    # critical-path --step finds the same steps (issue 37: NVTX ranges as annotations and steps)
    from tracetui.critical import step_window

    w = step_window(tr, 2)
    assert w.kind == "step" and (w.start_us, w.end_us) == (float(tr.ts[second]), float(tr.ts[second] + tr.dur[second]))


def _idle_cuts(thread: int, parts: int) -> list[int]:
    """Times that split a thread's NVTX ranges and API calls into ``parts`` runs of about equal
    length, each in a moment when none of them is open (and one before and after all)."""
    spans = sorted(query(SAMPLE, f'SELECT start, "end" FROM {NVTX} WHERE globalTid = {thread} UNION ALL '
                                 f'SELECT start, "end" FROM {RUNTIME} WHERE globalTid = {thread}'))
    gaps, reach = [], spans[0][1]
    for a, b in spans[1:]:
        if a > reach:
            gaps.append((reach + a) // 2)
        reach = max(reach, b)
    lo, hi = spans[0][0], reach
    inner = [min(gaps, key=lambda g: abs(g - (lo + k * (hi - lo) // parts))) for k in range(1, parts)]
    return [lo - 1000, *inner, hi + 1000]


def _under(tr, e: int, top: int) -> bool:
    while e >= 0 and e < tr.n_events:
        if e == top:
            return True
        e = int(tr.parent[e])
    return False


def test_a_graph_launch_owns_the_kernels_with_its_correlation(tmp_path):
    kpid = PID.replace("x", "k.globalPid")
    call_corr, call_start = query(SAMPLE, f"SELECT r.correlationId, r.start FROM {RUNTIME} r JOIN {KERNEL} k ON "
                                          f"k.correlationId = r.correlationId AND {kpid} = 111 "
                                          f"WHERE r.globalTid = {P111 | 111} ORDER BY r.start LIMIT 1")[0]
    lonely = [r for (r,) in query(SAMPLE, f"SELECT k.rowid FROM {KERNEL} k WHERE {kpid} = 111 AND NOT EXISTS "
                                          f"(SELECT 1 FROM {RUNTIME} r WHERE r.correlationId = k.correlationId) "
                                          "ORDER BY k.start LIMIT 3")]
    p = copy_with(tmp_path, "INSERT INTO StringIds (id, value) VALUES (987654, 'cudaGraphLaunch_v10000')",
                  f"UPDATE {RUNTIME} SET nameId = 987654 WHERE correlationId = {call_corr} "
                  f"AND globalTid = {P111 | 111}",
                  f"UPDATE {KERNEL} SET correlationId = {call_corr}, graphId = 5, graphNodeId = rowid "
                  f"WHERE rowid IN ({', '.join(map(str, lonely))})")
    tr = load_nsys(p)
    calls = _of(tr, Kind.RUNTIME)
    launch = int(calls[abs_ns(tr, calls) == call_start][0])
    assert tr.name(launch) == "cudaGraphLaunch"
    owned = np.flatnonzero(tr.launch_of == launch)
    assert owned.size == 4 and all(int(tr.parent[e]) == launch for e in owned)
    assert sorted(tr.args(int(e)).get("graph node id", -1) for e in owned)[1:] == sorted(lonely)
    assert tr.gpu_stats.graph_launches == 1 and tr.gpu_stats.graph_kernels == 4


H100 = {"computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxRegistersPerBlock": 65536,
        "maxRegistersPerSm": 65536, "threadsPerWarp": 32, "maxShmemPerBlock": 49152, "maxShmemPerBlockOptin": 232448,
        "maxShmemPerSm": 233472, "maxWarpsPerSm": 64, "smCount": 132, "totalMemory": 85018279936}


def test_gpu_properties_give_kinetos_device_properties_and_the_occupancy(tmp_path):
    cols = ", ".join(H100)
    p = copy_with(tmp_path, f"CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, {cols})",
                  *(f"INSERT INTO TARGET_INFO_GPU (vmId, id, name, {cols}) VALUES (1, {d}, 'NVIDIA H100 80GB HBM3', "
                    f"{', '.join(str(v) for v in H100.values())})" for d in (0, 1)))
    tr = load_nsys(p)
    props = tr.device_props(1)
    assert props["name"] == "NVIDIA H100 80GB HBM3" and props["maxThreadsPerMultiprocessor"] == 64 * 32
    assert props["sharedMemPerMultiprocessor"] == 233472 and props["regsPerMultiprocessor"] == 65536
    want = {"id": 1, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
            "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
            "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472, "numSms": 132,
            "totalGlobalMem": 85018279936}
    row = query(p, f'SELECT blockX * blockY * blockZ, registersPerThread, staticSharedMemory + dynamicSharedMemory, '
                   f"start FROM {KERNEL} WHERE deviceId = 1 ORDER BY start LIMIT 1")[0]
    k = _of(tr, Kind.KERNEL)
    e = int(k[abs_ns(tr, k) == row[3]][0])
    occ = kernel_occupancy(tr, e)
    assert occ.pct is not None and occ == theoretical_occupancy(want, row[0], row[1], row[2])
    assert load_shared_nsys().device_props(0) is None  # the sample itself has no TARGET_INFO_GPU


def test_a_stream_wait_names_the_event_record_it_waits_for(tmp_path):
    sync_rows = query(SAMPLE, f"SELECT min(start), eventSyncId FROM {SYNC} WHERE syncType = 2 AND "
                              f"{PID.replace('x', 'globalPid')} = 111 GROUP BY 2 ORDER BY 1 LIMIT 2")
    # event sync ids repeat across processes (as correlation ids do): a wait is matched within its own
    waiting = {es: n for es, n in query(SAMPLE, f"SELECT eventSyncId, count(*) FROM {SYNC} WHERE "
                                                f"{PID.replace('x', 'globalPid')} = 111 GROUP BY 1")}
    rec = query(SAMPLE, f"SELECT r.correlationId FROM {RUNTIME} r JOIN StringIds s ON s.id = r.nameId WHERE "
                        f"s.value LIKE 'cudaEventRecord%' AND r.globalTid = {P111 | 111} ORDER BY r.start LIMIT 2")
    p = copy_with(tmp_path, *(f"INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId, contextId, streamId, "
                              f"correlationId, globalPid, eventId, eventSyncId) VALUES (0, 1, 7, {c}, {P111}, 1, {es})"
                              for (_, es), (c,) in zip(sync_rows, rec)))
    tr = load_nsys(p)
    calls = _of(tr, Kind.RUNTIME)
    key = {tr.args(int(e))["correlationId"]: int(tr.correlation[e]) for e in calls if tr.pids[e] == 111}
    waits = [tr.args(int(e)) for e in _of(tr, Kind.SYNC)]
    resolved = Counter(a["wait_on_cuda_event_record_corr_id"] for a in waits if a["wait_on_stream"] == 7)
    assert resolved == {key[c]: waiting[es] for (_, es), (c,) in zip(sync_rows, rec)}
    assert sum(a["wait_on_stream"] == -1 for a in waits) == len(waits) - sum(resolved.values())


def test_the_cache_keeps_an_export_as_it_was_read(tmp_path, monkeypatch):
    from tracetui.store.traces import entry_path, load_cached

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    p = copy_with(tmp_path)
    first = load_cached([str(p)]).kineto
    assert entry_path(p).exists()
    again = load_cached([str(p)]).kineto
    assert again is not first and again.source_format == "nsys"
    for col in ("ts", "dur", "kind", "name_id", "correlation", "external_id", "parent", "launch_of", "device"):
        assert np.array_equal(getattr(again, col), getattr(first, col)), col
    assert again.names == first.names and [ln.label for ln in again.lanes] == [ln.label for ln in first.lanes]
    e = int(_of(again, Kind.KERNEL)[0])
    assert again.args(e) == first.args(e)


def test_diff_of_two_exports_shows_the_kernels_that_changed(tmp_path, capsys):
    name, = query(SAMPLE, f"SELECT s.value FROM {KERNEL} k JOIN StringIds s ON s.id = k.demangledName "
                          "WHERE s.value LIKE '%reduce_kernel%' GROUP BY 1")[0]
    n, total = query(SAMPLE, f'SELECT count(*), sum("end" - start) FROM {KERNEL} k JOIN StringIds s '
                             "ON s.id = k.demangledName WHERE s.value = ?", (name,))[0]
    b = copy_with(tmp_path, f'UPDATE {KERNEL} SET "end" = start + 2 * ("end" - start) WHERE demangledName = '
                            f"(SELECT id FROM StringIds WHERE value = '{name}')", name="after.sqlite")
    assert main(["diff", str(SAMPLE), str(b), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    changed = [k for k in doc["kernels"] if abs(k["delta_us"]) > 1e-6]
    assert [k["name"] for k in changed] == [name]
    assert changed[0]["count_a"] == changed[0]["count_b"] == n
    assert changed[0]["total_us_a"] == pytest.approx(total / 1000) == changed[0]["delta_us"]
    assert doc["alignment"]["paired_ops"] == 16782  # every emit_nvtx op matched by name


@pytest.mark.parametrize("command", [
    ["summary", "--json"], ["query", "SELECT count(*) AS n, sum(dur_us) AS t FROM kernels", "--json"],
    ["check", "--json"], ["critical-path", "--json"]])
def test_the_commands_run_on_an_export(command, capsys):
    assert main([command[0], str(SAMPLE), *command[1:]]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    if command[0] == "query":
        (n, ns), = query(SAMPLE, f'SELECT count(*), sum("end" - start) FROM {KERNEL}')
        assert doc[0]["n"] == n and doc[0]["t"] == pytest.approx(ns / 1000)
    assert doc


def test_export_and_slice_write_traces_that_read_back(tmp_path, capsys):
    out = tmp_path / "all.json.gz"
    assert main(["export", str(SAMPLE), "-f", "chrome", "-o", str(out)]) == 0
    from tracetui.kineto import load_kineto

    back = load_kineto(out)
    assert back.kind_counts() == load_shared_nsys().kind_counts()
    part = tmp_path / "part.json.gz"
    assert main(["slice", str(SAMPLE), "--window", "100:200", "-o", str(part)]) == 0
    sliced = load_kineto(part)
    assert 0 < sliced.n_events < back.n_events
