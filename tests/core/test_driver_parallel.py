"""Driver lines decoded by forked workers give exactly the serial result (every column, the
string table, the args blob, the skipped-line counts), in a fresh interpreter so that no
test thread is forked."""

from __future__ import annotations

import subprocess
import sys

from driver_files import bpftrace_file

CHECK = r"""
import sys
import numpy as np
import tracetui.driver.lines as lines
from tracetui.driver import load_driver

path = sys.argv[1]
serial = load_driver(path)
lines.decode_workers = lambda n: 3  # any size: the file is small
par = load_driver(path)
for k in ("ts", "dur", "kind", "name_id", "cat_id", "what", "flags", "line_no", "end_line_no", "retval", "size",
          "total_allocated", "direction", "grid", "block", "ioctl_cmd", "layout", "parent", "child_index"):
    a, b = getattr(serial, k), getattr(par, k)
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k
assert serial.names == par.names and bytes(serial.args_blob) == bytes(par.args_blob)
assert serial.lines == par.lines, (serial.lines, par.lines)
assert [w.message for w in serial.warnings] == [w.message for w in par.warnings]
print("equal", serial.n_events)
"""


def test_workers_equal_serial(tmp_path):
    path = tmp_path / "trace.jsonl"
    # more lines, bad ones among them, and a cut last line: every worker sees some of each
    lines = bpftrace_file().data().decode().splitlines()
    mixed = []
    for i, ln in enumerate(lines * 20):
        mixed.append(ln)
        if i % 97 == 5:
            mixed.append('{"ts": 1, "tid": oops}')
    path.write_text("\n".join(mixed) + '\n{"ts": 3.0, "tid": 7, "phase": "B"')
    out = subprocess.run([sys.executable, "-c", CHECK, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("equal")
