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


def test_deep_nesting_walks_without_recursion(deep_trace):
    from tracetui.kineto.rollup import subtree_gpu_totals
    from tracetui.navigate import format_parent_chain, format_subtree

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
    # the full text of the bottom part: indentation grows with depth, so keep it to 2,000 levels
    text = format_subtree(kt, DEPTH - 2_000)
    assert text.count("\n") == 2_000 + 1 and text.rstrip().endswith("dev=0 stream=7")
    chain = format_parent_chain(kt, 2_000)
    assert chain.count("\n") == 2_001 and chain.splitlines()[0].startswith("[lane]")
    assert kt.nopy_children(root).tolist() == [0]
