"""Resource limits (issue 7, item 6): deep trees never hit the recursion limit and keep
their links right; a trace too large for memory fails early with a clear message."""

from __future__ import annotations

import gzip
import sys

import numpy as np
import orjson
import pytest

from tracetui.errors import TraceFileError, TraceTooLargeError
from tracetui.kineto import Kind, load_kineto

DEPTH = 50_000


@pytest.fixture(scope="module")
def deep_trace(tmp_path_factory):
    """50,000 cpu_ops each nested in the previous one, a launch at the bottom, its kernel."""
    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 2 * DEPTH - 2 * i,
            "args": {"External id": i}} for i in range(DEPTH)]
    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": DEPTH,
                "dur": 1, "args": {"correlation": 7}})
    evs.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": DEPTH + 5, "dur": 3,
                "args": {"correlation": 7, "device": 0, "stream": 7}})
    p = tmp_path_factory.mktemp("deep") / "deep.json.gz"
    p.write_bytes(gzip.compress(orjson.dumps({"traceEvents": evs}), compresslevel=1))
    return load_kineto(p)


@pytest.mark.slow
def test_deep_nesting_loads_with_exact_depths(deep_trace):
    kt = deep_trace
    assert DEPTH > sys.getrecursionlimit() * 10
    kernel, launch = DEPTH + 1, DEPTH
    assert kt.depth[DEPTH - 1] == DEPTH and kt.depth[launch] == DEPTH + 1 and kt.depth[kernel] == DEPTH + 2
    assert kt.depth.dtype == np.int32
    assert (kt.parent[1:DEPTH] == np.arange(DEPTH - 1)).all()
    assert kt.launch_of[kernel] == launch and kt.parent[kernel] == launch
    # the innermost cpu_op of the kernel is the deepest op, not a clamped or wrapped one
    assert kt.cpu_op_of[kernel] == DEPTH - 1 and kt.cpu_op_of[launch] == DEPTH - 1


@pytest.mark.slow
def test_deep_nesting_walks_without_recursion(deep_trace):
    from tracetui.export.tree_text import format_parent_chain, format_subtree
    from tracetui.kineto.rollup import subtree_gpu_totals

    kt = deep_trace
    root = kt.roots()[0]
    assert kt.subtree(root).size == DEPTH + 3  # the lane root, the ops, the launch, the kernel
    assert kt.ancestors(DEPTH + 1)[:2] == [DEPTH, DEPTH - 1] and len(kt.ancestors(DEPTH + 1)) == DEPTH + 2
    assert kt.gpu_events_of(0).tolist() == [DEPTH + 1]
    gtime, gcount = subtree_gpu_totals(kt)
    # every op on the chain owns the one kernel (3 µs)
    assert (gcount[:DEPTH] == 1).all() and (gtime[:DEPTH] == 3.0).all() and gcount[root] == 1
    text = format_subtree(kt, 0, depth=20)
    assert text.count("\n") == 20 and "op20" in text
    text = format_subtree(kt, DEPTH - 2_000)
    assert text.count("\n") == 2_000 + 1 and text.rstrip().endswith("dev=0 stream=7")
    chain = format_parent_chain(kt, 2_000)
    assert chain.count("\n") == 2_001 and chain.splitlines()[0].startswith("[lane]")
    # the whole 50,000-deep chain: indentation stops at 64 levels (128 spaces), deeper lines
    # carry a depth tag, so the text stays linear in size (was ~2.5 GB)
    lines = format_subtree(kt, root).splitlines()
    assert len(lines) == DEPTH + 3 and max(len(ln) for ln in lines) < 300
    assert lines[64].startswith(" " * 128 + "[cpu_op] op63 ")
    assert lines[65].startswith(" " * 128 + "[d=65] [cpu_op] op64 ")
    assert lines[-1].startswith(" " * 128 + f"[d={DEPTH + 2}] [kernel] k ")
    chain = format_parent_chain(kt, DEPTH + 1).splitlines()
    assert len(chain) == DEPTH + 3 and chain[-1].startswith(" " * 128 + f"[d={DEPTH + 2}] [kernel] k ")
    assert chain == [ln.split(" gpu=")[0] for ln in lines]
    assert kt.nopy_children(root).tolist() == [0]


def test_preorder_of_a_deep_chain_walks_in_linear_time(deep_trace):
    import time

    from tracetui.tree.preorder import tree_preorder

    def preorder(kt):
        return tree_preorder(kt.parent, kt.depth, kt.child_start, kt.child_index, np.asarray(kt.roots()))

    kt = deep_trace
    t0 = time.process_time()
    order = preorder(kt)
    assert time.process_time() - t0 < 2.0  # one numpy step per level took 0.8 s; the walk ~0.03 s
    root = kt.roots()[0]
    assert order.by_pre[:DEPTH + 3].tolist() == [root, *range(DEPTH + 2)]
    assert order.size[root] == DEPTH + 3 and order.size[DEPTH] == 2 and order.size[DEPTH + 1] == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v100x2_nccl_216k.json.gz", "mi300_resnet_train_checkpointing.json.gz",
                                  "h100_bert_inference.json.gz"])
def test_vectorised_preorder_equals_the_walk(name):
    """kt.subtree / gpu_events_of slice a cached preorder; both numberings (one numpy step per
    level, and the Python walk used for deep thin trees) equal the explicit-stack walk."""
    from shared_traces import KINETO

    from tracetui.tree.preorder import _walk_preorder, tree_preorder

    def preorder(kt):
        return tree_preorder(kt.parent, kt.depth, kt.child_start, kt.child_index, np.asarray(kt.roots()))

    kt = load_kineto(KINETO / name)
    by_level = preorder(kt)
    by_walk = _walk_preorder(kt.parent.astype(np.int64), kt.child_start, kt.child_index,
                             np.asarray(kt.roots(), dtype=np.int64))
    assert np.array_equal(by_level.pre, by_walk.pre) and np.array_equal(by_level.by_pre, by_walk.by_pre)
    inside = by_level.pre >= 0
    assert np.array_equal(by_level.size[inside], by_walk.size[inside])
    rng = np.random.default_rng(0)
    outside = np.flatnonzero(kt.parent[:kt.n_events] < 0)
    nodes = kt.roots() + rng.choice(kt.n_events, 300, replace=False).tolist() + outside[:20].tolist()
    for node in nodes:
        assert kt.subtree(node).tolist() == kt._walk(node).tolist()
        walked = kt._walk(node)
        gpu = walked[(walked < kt.n_events)]
        gpu = gpu[np.isin(kt.kind[gpu], [int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET)])]
        assert kt.gpu_events_of(node).tolist() == gpu[np.argsort(kt.ts[gpu], kind="stable")].tolist()


# ---------------------------------------------------------------- memory

def _small_memory(monkeypatch, nbytes):
    import tracetui.io.limits as limits

    monkeypatch.setattr(limits, "available_memory_bytes", lambda: nbytes)


def test_plain_trace_larger_than_memory_fails_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents": [' + b" " * (4 << 20) + b"]}")
    _small_memory(monkeypatch, 8 << 20)
    with pytest.raises(TraceTooLargeError) as ei:
        load_kineto(p)
    assert str(ei.value) == f"{p}: needs about 10.5 MB of memory to load but only 8.4 MB is available"  # SI


def test_gzip_that_inflates_past_the_limit_stops_early(tmp_path, monkeypatch):
    """A 40 MB document compressed to ~40 kB: refused while inflating, not after."""
    import tracetui.io.inflate as fileio

    body = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1},' * 450_000
    p = tmp_path / "bomb.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": [' + body + b"{}]}", compresslevel=9))
    size = p.stat().st_size
    assert size < 1 << 20 and len(body) > 38 << 20
    _small_memory(monkeypatch, 20 << 20)
    seen = []
    real = fileio.zlib.decompressobj

    class Spy:
        def __init__(self, *a):
            self.d = real(*a)

        def decompress(self, piece, max_length=0):
            out = self.d.decompress(piece, max_length)
            seen.append(len(out))
            return out

        def __getattr__(self, k):
            return getattr(self.d, k)

    monkeypatch.setattr(fileio.zlib, "decompressobj", Spy)
    with pytest.raises(TraceTooLargeError, match=r"^.*bomb\.json\.gz: decompresses to more than (8|9|1\d)\.\d MB "
                                                 r"\(stopped at compressed byte [\d,]+ of [\d,]+\); loading it "
                                                 r"needs over \d\d\.\d MB of memory but only [12]\d\.\d MB is "
                                                 r"available$"):
        load_kineto(p)
    assert sum(seen) < 12 << 20  # stopped a few steps past the limit, never inflated the 40 MB


def test_cli_reports_a_too_large_trace_in_one_line(tmp_path, monkeypatch, capsys):
    from tracetui.cli import main

    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents": []}' + b" " * (1 << 20))
    _small_memory(monkeypatch, 1 << 20)
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err == f"tracetui: {p}: needs about 2.6 MB of memory to load but only 1.0 MB is available\n"


def test_unreadable_inputs_are_file_errors(tmp_path):
    with pytest.raises(TraceFileError, match=r"no such file$"):
        load_kineto(tmp_path / "nope.json")
    with pytest.raises(TraceFileError, match=r"is a directory, not a trace file$"):
        load_kineto(tmp_path)
