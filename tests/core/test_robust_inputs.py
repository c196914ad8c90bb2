"""Inputs that are not a trace, or not yet one (issue 40, the reading cases): containers and
encodings tracetui does not read, zstd, empty traces, padding.  Each case runs through the
command line in a child process with stdout a pipe (never a terminal) and ends in exactly
one line on stderr and the exit code the table in tests/README.md gives; the API raises the
same line.  The files are made here with the standard library's own writers (zipfile, bz2,
lzma, tarfile, the codecs), so the bytes are what those tools write.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest
from shared_traces import kineto_path

from tracetui import formats
from tracetui.errors import TraceError
from tracetui.io import formats as io_formats
from tracetui.io.containers import text_encoding, zstd_module
from tracetui.io.formats import GZIP_BLANK_MAX, HEAD_BYTES, read_head
from tracetui.io.inflate import Stream
from tracetui.kineto import load_kineto

SYNC = "a100_event_sync_multistream.json.gz"
MIB = 1 << 20


def _trace() -> bytes:
    return gzip.decompress(kineto_path(SYNC).read_bytes())


def _cli(*args: str, tmp_path: Path, pre: str = "") -> subprocess.CompletedProcess:
    """``tracetui ARGS`` in a child, stdout and stderr pipes; ``pre``: Python run first."""
    code = f"import sys\n{pre}\nfrom tracetui.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)


def _one_line(out: subprocess.CompletedProcess, path: Path, message: str) -> None:
    assert (out.returncode, out.stdout) == (2, ""), out.stderr
    assert out.stderr == f"tracetui: {path}: {message}\n"


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("trace.json", data)
    return buf.getvalue()


def _tar(data: bytes, mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        info = tarfile.TarInfo("trace.json")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _utf(data: bytes, codec: str) -> bytes:
    return data.decode("utf-8").encode(codec)


ICONV = "convert it to UTF-8 (iconv -f {0} -t UTF-8)"
#: name -> (file bytes from the trace's JSON, the message after "<path>: ")
NOT_READ = {
    "zip": (_zip, "is a zip archive: unzip it first"),
    "bzip2": (bz2.compress, "is bzip2-compressed: decompress it first (bunzip2 -k)"),
    "xz": (lzma.compress, "is xz-compressed: decompress it first (xz -dk)"),
    "lz4": (lambda d: b"\x04\x22\x4d\x18\x64\x40\xa7" + d[:100], "is lz4-compressed: decompress it first (lz4 -d)"),
    "7z": (lambda d: b"7z\xbc\xaf\x27\x1c\x00\x04" + d[:100], "is a 7-Zip archive: extract it first (7z x)"),
    "tar": (_tar, "is a tar archive: extract it first (tar -xf)"),
    "tar.gz": (lambda d: _tar(d, "w:gz"), "is a tar archive, gzip-compressed: extract it first (tar -xf)"),
    "utf-16 with a byte order mark": (lambda d: _utf(d, "utf-16"), "is UTF-16 text: " + ICONV.format("UTF-16")),
    "utf-16le": (lambda d: _utf(d, "utf-16-le"), "is UTF-16LE text: " + ICONV.format("UTF-16LE")),
    "utf-16be": (lambda d: _utf(d, "utf-16-be"), "is UTF-16BE text: " + ICONV.format("UTF-16BE")),
    "utf-32 with a byte order mark": (lambda d: _utf(d, "utf-32"), "is UTF-32 text: " + ICONV.format("UTF-32")),
    "utf-32le": (lambda d: _utf(d, "utf-32-le"), "is UTF-32LE text: " + ICONV.format("UTF-32LE")),
    "utf-16, gzip-compressed": (lambda d: gzip.compress(_utf(d, "utf-16")),
                                "is UTF-16 text, gzip-compressed: decompress it, then " + ICONV.format("UTF-16")),
}


@pytest.mark.parametrize("case", sorted(NOT_READ))
def test_a_container_or_encoding_tracetui_does_not_read_is_named_in_one_line(case, tmp_path):
    make, message = NOT_READ[case]
    p = tmp_path / "trace.json"
    p.write_bytes(make(_trace()))
    _one_line(_cli("info", str(p), tmp_path=tmp_path), p, message)
    for read in (load_kineto, formats.detect):  # the loader alone, and format detection, say the same
        with pytest.raises(TraceError) as err:
            read(p)
        assert str(err.value) == f"{p}: {message}"


def test_nul_padding_and_json_are_no_encoding():
    assert text_encoding(b"\x00" * 4096) is None and text_encoding(b'{"traceEvents": []}') is None
    assert text_encoding(b"\x00\x00\x00{") is None  # padding before the content
    assert text_encoding('{"a": 1}'.encode("utf-16-le")) == "UTF-16LE"


# ------------------------------------------------------------------ zstd
needs_zstd = pytest.mark.skipif(zstd_module() is None, reason="no compression.zstd / backports.zstd (tracetui[zstd])")


def _zstd(data: bytes, level: int = 3) -> bytes:
    return zstd_module().compress(data, level=level)


@lru_cache(maxsize=None)
def _blank(byte: bytes, compression: str) -> bytes:
    """128 MiB of one byte as one gzip member or zstd frame (compressed once; a bomb repeats it)."""
    data = byte * (128 * MIB)
    return gzip.compress(data, 6) if compression == "gzip" else _zstd(data, 1)


def _bomb(start: bytes, byte: bytes, mib: int, compression: str) -> bytes:
    """``start`` then ``mib`` MiB (a multiple of 128) of ``byte``, members or frames one after another."""
    first = gzip.compress(start) if compression == "gzip" else _zstd(start)
    return first + _blank(byte, compression) * (mib // 128)


@needs_zstd
def test_a_zstd_trace_opens_as_its_gzip_does(tmp_path):
    raw = _trace()
    p = tmp_path / "t.json.zst"
    p.write_bytes(_zstd(raw[: len(raw) // 2]) + _zstd(raw[len(raw) // 2:]))  # two frames, as zstd -c a b writes
    assert formats.detect(p) == formats.FileKind.KINETO and read_head(p).compressed == "zstd"
    kt, want = load_kineto(p), load_kineto(kineto_path(SYNC))
    assert kt.n_events == want.n_events and kt.names == want.names and kt.warnings == want.warnings
    out = _cli("info", "--json", "--no-cache", str(p), tmp_path=tmp_path)
    assert out.returncode == 0 and out.stderr == "", out.stderr


@needs_zstd
def test_a_zstd_trace_cut_short_keeps_its_complete_events(tmp_path):
    """zstd writes blocks of up to 128 KiB: a cut loses the block it falls in, and a file cut
    inside its first block says so as a cut gzip file does."""
    name = "h100_bert_inference.json.gz"
    comp = _zstd(gzip.decompress(kineto_path(name).read_bytes()))
    p = tmp_path / "cut.json.zst"
    p.write_bytes(comp[: len(comp) * 2 // 3])
    kt = load_kineto(p)
    first, second = [w.message for w in kt.warnings if w.kind == "truncated"]
    assert first.startswith(f"zstd stream ends early (the file was cut off after {p.stat().st_size:,} compressed "
                            "bytes)")
    assert second.startswith("file is cut short at byte ") and "(decompressed): kept the " in second
    assert 0 < kt.n_events < load_kineto(kineto_path(name)).n_events
    p.write_bytes(comp[:1000])
    _one_line(_cli("info", str(p), tmp_path=tmp_path), p, "zstd stream ends after 1,000 bytes, before any data "
                                                          "could be decompressed")


@needs_zstd
def test_a_zstd_bomb_is_refused_by_its_expansion(tmp_path):
    p = tmp_path / "bomb.json.zst"
    p.write_bytes(_bomb(b'{"traceEvents": [', b"\x00", 1024, "zstd"))
    out = _cli("info", str(p), tmp_path=tmp_path)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"tracetui: {p}: decompresses ") and "refused as a decompression bomb" in out.stderr


def test_a_zstd_trace_without_a_decoder_says_what_to_install(tmp_path):
    p = tmp_path / "t.json.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(64))  # a zstd frame header: the magic is what is looked at
    no_decoder = "sys.modules['compression.zstd'] = sys.modules['backports.zstd'] = None"
    _one_line(_cli("info", str(p), tmp_path=tmp_path, pre=no_decoder), p,
              "is zstd-compressed: install tracetui[zstd] to open it, or decompress it first (zstd -d)")


# ------------------------------------------------------------------ the head reader inflates only the head
@pytest.mark.slow
@pytest.mark.parametrize("compression", ["gzip", pytest.param("zstd", marks=needs_zstd)])
def test_the_head_reader_inflates_only_the_head(compression, tmp_path, monkeypatch):
    """A bomb of 1 GiB of NULs (blank content): the head reader gives up after
    ``GZIP_BLANK_MAX`` of blank, a step at most past it; a trace: only its head."""
    inflated = []
    real = Stream.inflate

    def counted(self, data, n):
        out = real(self, data, n)
        inflated.append(len(out))
        return out

    monkeypatch.setattr(Stream, "inflate", counted)
    p = tmp_path / "bomb"
    p.write_bytes(_blank(b"\x00", compression) * 8)  # 1 GiB
    head = read_head(p)
    assert head.text == b"" and not head.whole and GZIP_BLANK_MAX < sum(inflated) <= GZIP_BLANK_MAX + HEAD_BYTES
    inflated.clear()
    raw = _trace() * 40  # 1.4 MB of JSON
    p.write_bytes(gzip.compress(raw) if compression == "gzip" else _zstd(raw))
    head = read_head(p)
    assert head.text == raw.lstrip()[:HEAD_BYTES] and sum(inflated) == HEAD_BYTES + head.blank == HEAD_BYTES + 1
    assert io_formats.HEAD_BYTES == HEAD_BYTES


# ------------------------------------------------------------------ empty traces, padding
_MEASURED = """
import resource, sys, time
from tracetui.cli import main
import tracetui.cli.info, tracetui.session, tracetui.kineto.loader, tracetui.io.files
def vm(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":")) * 1024
base, cpu = vm("VmRSS"), time.process_time()
rc = main(["info", "--no-cache", sys.argv[1]])
print(f"cpu={time.process_time() - cpu:.3f} base={base} peak={vm('VmHWM')}", file=sys.stderr)
sys.exit(rc)
"""


def _measured(path: Path, tmp_path: Path) -> tuple[int, str, float, int]:
    """(exit code, the error line, CPU seconds of the command, peak RSS above the imports)."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _MEASURED, str(path)], capture_output=True, text=True, timeout=300,
                         env=env)
    *lines, last = out.stderr.splitlines()
    facts = dict(kv.split("=") for kv in last.split())
    return out.returncode, "\n".join(lines), float(facts["cpu"]), int(facts["peak"]) - int(facts["base"])


@pytest.mark.parametrize("doc", [b'{"traceEvents": []}', b"[]", b'{"traceEvents": [],\n "deviceProperties": []}\n'])
def test_an_empty_trace_is_bad_input(doc, tmp_path):
    p = tmp_path / "empty.json"
    p.write_bytes(doc)
    what = "top-level" if doc == b"[]" else "traceEvents"
    _one_line(_cli("info", str(p), tmp_path=tmp_path), p, f"no events: the trace is empty (its {what} array holds "
                                                          "nothing)")


@pytest.mark.slow
def test_the_start_of_a_trace_then_1_gib_of_spaces_ends_in_one_line_fast(tmp_path):
    """``{"traceEvents":[`` and 1 GiB of spaces: it took 20 s and 2.1 GB and exited 0 (issue 40).
    Now the padding is found from the end of the file in C-speed blocks and never read into
    memory: exit 2, "no events", under 2 s of CPU and 200 MB above the imports."""
    p = tmp_path / "padded.json"
    with open(p, "wb") as fh:
        fh.write(b'{"traceEvents":[')
        for _ in range(1024):
            fh.write(b" " * MIB)
    code, err, cpu, peak = _measured(p, tmp_path)
    assert code == 2 and err == (f"tracetui: {p}: no events: the file is cut short at byte 16, before its first "
                                 "complete event, then 1,073,741,824 bytes of padding"), err
    assert cpu < 2.0 and peak < 200e6, (cpu, peak)


@pytest.mark.slow
def test_the_start_of_a_trace_then_spaces_gzipped_is_a_bomb(tmp_path):
    """The same gzipped (1 MB): it decompresses 1,000x, which no trace does."""
    p = tmp_path / "padded.json.gz"
    p.write_bytes(_bomb(b'{"traceEvents":[', b" ", 512, "gzip"))
    out = _cli("info", str(p), tmp_path=tmp_path)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert "refused as a decompression bomb (TRACETUI_MAX_EXPANSION raises the limit)" in out.stderr
    # under 256 MB the expansion check does not start: read, and no events
    p.write_bytes(gzip.compress(b'{"traceEvents":[' + b" " * (64 * MIB), 6))
    _one_line(_cli("info", str(p), tmp_path=tmp_path), p, "no events: the file is cut short at byte 16 "
              f"(decompressed), before its first complete event, then {64 * MIB:,} bytes of padding")


@pytest.mark.parametrize("compressed", [False, True])
def test_more_json_than_a_trace_may_hold_is_refused(compressed, tmp_path, monkeypatch):
    """``$TRACETUI_MAX_TRACE_MB`` (default 8,000 MB) caps a trace's JSON whatever the memory:
    a plain file before it is read, a compressed one while it inflates."""
    raw = _trace() * 40  # 1.4 MB of JSON (not one document: refused before that matters)
    p = tmp_path / ("big.json.gz" if compressed else "big.json")
    p.write_bytes(gzip.compress(raw) if compressed else raw)
    monkeypatch.setenv("TRACETUI_MAX_TRACE_MB", "1")
    with pytest.raises(TraceError) as err:
        load_kineto(p)
    if compressed:
        assert str(err.value).startswith(f"{p}: decompresses to more than 1.0 MB (stopped at compressed byte ")
        assert str(err.value).endswith("), more JSON than a trace may hold (TRACETUI_MAX_TRACE_MB raises it)")
    else:
        assert str(err.value) == f"{p}: holds 1.4 MB of JSON, more than a trace may (1.0 MB; TRACETUI_MAX_TRACE_MB " \
                                 "raises it)"


@pytest.mark.slow
@needs_zstd
def test_a_job_folder_of_zstd_ranks_opens(tmp_path):
    """``.zst`` is among the names a job folder is listed by; the ranks are told apart by
    their content (distributedInfo), as gzip ones are."""
    from shared_traces import SHARED

    from tracetui.job import open_job

    job = SHARED / "multirank" / "param_dlrm_8ranks"
    for r in (0, 1):
        (tmp_path / f"rank{r}_kineto.json.zst").write_bytes(
            _zstd(gzip.decompress((job / f"rank{r}_kineto.json.gz").read_bytes())))
    opened = open_job([str(tmp_path)], workers=1, use_cache=False)
    assert sorted(opened.results) == [0, 1]
