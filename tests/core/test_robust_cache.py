"""A cache that verifies (issue 24): a damaged entry is never a wrong answer, a hang or a
SIGBUS, and an entry is never used for a trace file whose bytes changed.

* single-byte flips across a whole entry: each one is found by a checksum (the entry is
  dropped, the trace read again, a warning says so) or changed nothing that is read;
* an entry truncated while a process uses the trace: the process goes on (the entry is read
  into private memory, nothing of the file stays mapped);
* a trace edited in its middle with its size and mtime restored: parsed again.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import numpy as np
import pytest
from cache_helpers import assert_same_trace, cache_home  # noqa: F401 - the autouse fixture: a cache folder per test
from shared_traces import kineto_path

import tracetui.store.traces as cache
from tracetui.cli import main as cli_main
from tracetui.errors import TraceFileError
from tracetui.export.tree_text import format_subtree
from tracetui.kineto.persist import DEFERRED, CacheCorruptError, load_trace_file, read_header


def _answers(kt) -> str:
    """What the user reads of a trace: the whole tree as text, every event's args."""
    tree = "\n".join(format_subtree(kt, int(r)) for r in kt.roots())
    return tree + repr([kt.args(i) for i in range(kt.n_events)])


def test_every_flipped_byte_is_found_or_harmless():
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    fresh = cache.load_cached([p]).kineto
    want = _answers(fresh)
    entry = cache.entry_path(p)
    good = entry.read_bytes()
    header = read_header(entry)
    sections = [(s["off"], s["off"] + s["nbytes"]) for s in header["sections"] if s["nbytes"]]
    # every byte of the preamble and the start of the header, then ~600 spread over the rest
    spots = sorted(set(range(0, 96)) | set(np.linspace(96, len(good) - 1, 600).astype(int).tolist()))
    found = harmless = 0
    for at in spots:
        data = bytearray(good)
        data[at] ^= 0xFF
        entry.write_bytes(data)
        damaged: list = []
        kt = cache.read_cached(p, damaged=damaged)
        if kt is None:
            assert len(damaged) == 1 and damaged[0].kind == "cache" and not entry.exists(), at
            found += 1
            continue
        assert _answers(kt) == want, f"byte {at}: a wrong answer from a damaged entry"
        # only the alignment padding between sections is outside every checksum
        assert not any(a <= at < b for a, b in sections), at
        harmless += 1
    assert found >= 0.9 * len(spots), (found, harmless)


@pytest.mark.parametrize("damage", ["truncate", "grow", "flip in the args blob", "flip in a column"])
def test_a_damaged_entry_is_rebuilt_and_the_user_told(damage, capsys):
    p = str(kineto_path("h100_bert_inference.json.gz"))
    fresh = cache.load_cached([p]).kineto
    entry = cache.entry_path(p)
    data = bytearray(entry.read_bytes())
    header = read_header(entry)
    blob = next(s for s in header["sections"] if s["dtype"] == "bytes" and s["nbytes"])
    column = next(s for s in header["sections"] if s["dtype"] != "bytes" and s["nbytes"] > 64)
    if damage == "truncate":
        del data[len(data) * 2 // 3:]
    elif damage == "grow":
        data += b"\0" * 4096
    elif damage == "flip in the args blob":
        data[blob["off"] + blob["nbytes"] // 2] ^= 0x01
    else:
        data[column["off"] + 8] ^= 0x10
    entry.write_bytes(bytes(data))
    # found at the open (header, size, the fields read then), or when the damaged field is
    # first read: never a value from the damaged bytes
    with pytest.raises((CacheCorruptError, TraceFileError), match="checksum|damaged|ends|file is|header|length"):
        kt = load_trace_file(entry)
        for name in sorted(DEFERRED):
            getattr(kt, name)
    entry.write_bytes(bytes(data))  # a late find removed it: damaged again, for the open below
    linked = cache.load_cached([p])
    assert_same_trace(fresh, linked.kineto)
    notes = [w.message for w in linked.all_warnings() if w.kind == "cache"]
    assert len(notes) == 1 and "was damaged" in notes[0] and "read again from the file" in notes[0]
    # rebuilt: the next open is from a sound entry, and says nothing more
    assert not [w for w in cache.load_cached([p]).all_warnings() if w.kind == "cache"]
    assert cli_main(["info", p]) == 0 and "damaged" not in capsys.readouterr().out


def test_the_cli_shows_the_warning_once(capsys):
    p = str(kineto_path("mi250_minitoy_train.json.gz"))
    assert cli_main(["info", p]) == 0
    entry = cache.entry_path(p)
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    capsys.readouterr()
    assert cli_main(["info", p]) == 0
    first = capsys.readouterr().out
    assert "warning: the cached copy of mi250_minitoy_train.json.gz was damaged" in first.replace("\n", " ")
    assert cli_main(["info", p]) == 0
    assert "damaged" not in capsys.readouterr().out


_TRUNCATE_WHILE_USED = """
import os, sys
import tracetui.store.traces as cache
from tracetui.export.tree_text import format_subtree
p, mode = sys.argv[1], sys.argv[2]
kt = cache.read_cached(p)
assert kt is not None, "no entry"
entry = cache.entry_path(p)
if mode == "truncate":
    os.truncate(entry, 0)
else:  # rewritten in place by someone else
    with open(entry, "r+b") as fh:
        fh.write(b"\\0" * os.path.getsize(entry))
text = "\\n".join(format_subtree(kt, int(r)) for r in kt.roots())
args = [kt.args(i) for i in range(kt.n_events)]
print(len(text), sum(len(a) for a in args))
"""


@pytest.mark.parametrize("mode", ["truncate", "overwrite"])
def test_an_entry_changed_while_in_use_cannot_kill_the_reader(mode, cache_home):
    """The child opens the cached trace, the entry is truncated to 0 bytes (or zeroed in
    place), then every column and every event's args are read: with the entry mapped this
    was a SIGBUS (-7); read into private memory, the answers are the ones loaded."""
    p = str(kineto_path("h100_bert_inference.json.gz"))
    kt = cache.load_cached([p]).kineto
    want = f"{len(chr(10).join(format_subtree(kt, int(r)) for r in kt.roots()))} " \
           f"{sum(len(kt.args(i)) for i in range(kt.n_events))}"
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(cache_home), TRACETUI_CODE_FINGERPRINT="tests")
    out = subprocess.run([sys.executable, "-c", _TRUNCATE_WHILE_USED, p, mode], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, (out.returncode, out.stderr[-500:])
    assert out.stdout.strip() == want


def test_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path):
    """The key holds a CRC-32 of every byte: a duration changed in the middle of the file,
    with the file's size and modification time put back, is parsed again."""
    raw = gzip.decompress(kineto_path("mi250_minitoy_train.json.gz").read_bytes())
    p = tmp_path / "trace.json"
    p.write_bytes(raw)
    st = p.stat()
    kt = cache.load_cached([str(p)]).kineto
    at = raw.index(b'"dur": ', len(raw) // 2) + len(b'"dur": ')
    old_digit = raw[at:at + 1]
    assert old_digit.isdigit()
    new_digit = b"9" if old_digit != b"9" else b"8"
    p.write_bytes(raw[:at] + new_digit + raw[at + 1:])
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    again = cache.load_cached([str(p)]).kineto
    assert not np.array_equal(kt.dur, again.dur)  # the edited duration, not the cached one
    assert again.n_events == kt.n_events
