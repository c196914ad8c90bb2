"""Bounded reading (issue 24): only regular files are read, never a device or a pipe, and a
gzip bomb is refused before it holds more memory than the tightest limit the process is
under (MemAvailable, every cgroup above the process, v1 and v2, ``ulimit -v``).

Each read of something that could block runs in a thread or a child process with a
timeout, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest
from shared_traces import kineto_path

from tracetui.errors import TraceFileError
from tracetui.io.files import read_trace_bytes
from tracetui.io.limits import available_memory_bytes, cgroup_memory_left
from tracetui.session import load_trace


def _in_thread(fn, timeout: float = 20.0):
    """``fn()`` in a daemon thread; its result or exception, or a failure after ``timeout``."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"still reading after {timeout} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "trace.json"
    os.mkfifo(p)
    return p


def test_a_device_is_refused_at_once():
    with pytest.raises(TraceFileError) as err:
        _in_thread(lambda: read_trace_bytes("/dev/zero"))
    assert str(err.value) == "/dev/zero: is a character device, not a regular file: only trace files are read"


def test_a_fifo_is_refused_without_blocking(fifo):
    with pytest.raises(TraceFileError) as err:
        _in_thread(lambda: load_trace(fifo))  # no writer: opening it for reading would wait forever
    assert str(err.value).endswith("is a named pipe (FIFO), not a regular file: only trace files are read")


@pytest.mark.parametrize("which", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("command", ["info", "summary", "tree"])
def test_the_cli_says_so_in_one_line(which, command, fifo, tmp_path):
    path = str(fifo) if which == "fifo" else which
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "tracetui", command, path], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and re.match(rf"tracetui: {re.escape(path)}: is a (character device|named "
                                                    r"pipe \(FIFO\)), not a regular file", out.stderr)


def test_links_that_lead_nowhere_are_named(tmp_path):
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    (tmp_path / "gone.json").symlink_to(tmp_path / "never-written.json")
    with pytest.raises(TraceFileError, match=r"a\.json: is a symbolic link loop$"):
        load_trace(tmp_path / "a.json")
    with pytest.raises(TraceFileError, match=r"gone\.json: is a symbolic link to a file that does not exist$"):
        load_trace(tmp_path / "gone.json")


def test_paths_as_str_bytes_and_pathlike_or_a_clear_error():
    p = kineto_path("mi250_minitoy_train.json.gz")
    counts = {load_trace(x).n_events for x in (str(p), os.fsencode(p), p)}
    assert counts == {load_trace(p).n_events}
    with pytest.raises(TraceFileError, match=r"^<input>: a trace path must be a str, bytes or os.PathLike, not int$"):
        load_trace(3)


# ------------------------------------------------------------------ memory limits
def _cgroup_tree(root: Path, levels: dict[str, dict[str, str]]) -> None:
    for rel, files in levels.items():
        folder = root / rel.strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)


MIB = 1 << 20


def test_cgroup_v2_limits_nest_and_the_tightest_counts(tmp_path):
    """A Slurm-like nesting: the job allows 4 GiB, its step 1.5 GiB, the task no limit."""
    _cgroup_tree(tmp_path, {
        "sys/fs/cgroup": {"memory.max": "max\n", "memory.current": str(900 * MIB)},
        "sys/fs/cgroup/slurm/job_7": {"memory.max": str(4096 * MIB), "memory.current": str(1000 * MIB)},
        "sys/fs/cgroup/slurm/job_7/step_0": {"memory.max": str(1536 * MIB), "memory.current": str(1000 * MIB),
                                             "memory.stat": f"anon 1\ninactive_file {200 * MIB}\nactive_file 5\n"},
        "sys/fs/cgroup/slurm/job_7/step_0/task_0": {"memory.max": "max", "memory.current": str(1000 * MIB)},
    })
    mountinfo = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
    left = cgroup_memory_left("0::/slurm/job_7/step_0/task_0\n", mountinfo, prefix=str(tmp_path))
    assert left == (1536 - 1000 + 200) * MIB  # the step's limit, less its use, plus reclaimable cache
    assert cgroup_memory_left("0::/\n", mountinfo, prefix=str(tmp_path)) is None  # the root: no limit


def test_cgroup_v1_in_a_container_reads_the_mounted_hierarchy(tmp_path):
    """Docker without a cgroup namespace: /proc/self/cgroup names the host path, the mount
    shows the container's own cgroup at its root."""
    _cgroup_tree(tmp_path, {
        "sys/fs/cgroup/memory": {"memory.limit_in_bytes": str(768 * MIB), "memory.usage_in_bytes": str(100 * MIB),
                                 "memory.stat": f"cache 9\ntotal_inactive_file {50 * MIB}\n"},
    })
    mountinfo = ("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                 "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                 "36 31 0:33 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")
    proc = "5:cpu:/docker/abc\n4:memory:/docker/abc\n0::/\n"
    assert cgroup_memory_left(proc, mountinfo, prefix=str(tmp_path)) == (768 - 100 + 50) * MIB
    # v1 writes a huge number for "no limit"
    (tmp_path / "sys/fs/cgroup/memory/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_memory_left(proc, mountinfo, prefix=str(tmp_path)) is None


def test_the_memory_of_this_process_is_readable():
    avail = available_memory_bytes()
    assert avail is not None and 0 < avail < 1 << 50


def _bomb(path: Path, gib: int = 4) -> Path:
    """A 4 MB gzip file of 64 MiB members that inflates to ``gib`` GiB of zeros."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    member = comp.compress(bytes(64 * MIB)) + comp.flush()
    path.write_bytes(member * (16 * gib))
    return path


_CHILD = """
import resource, sys
limit = int(sys.argv[2]) << 20
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from tracetui.cli import main
# what `info` imports on its way to the file (the command line imports it lazily): counted in
# the base, so the peak above it is the load's own
import tracetui.cli.info, tracetui.session, tracetui.kineto.loader, tracetui.et.loader, tracetui.io.files
def vm(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":")) * 1024
base = vm("VmRSS")
rc = main(["info", "--no-cache", sys.argv[1]])
print(f"base={base} peak={vm('VmHWM')}", file=sys.stderr)
sys.exit(rc)
"""


def _run_bomb(bomb: Path, limit_mb: int, preexec=None, **env_vars: str) -> tuple[int, str, int, int]:
    """``tracetui info`` of ``bomb`` in a child under ``ulimit -v`` ``limit_mb`` MiB (0: none):
    (exit code, stderr, RSS before the load, peak RSS)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MALLOC_ARENA_MAX="2", **env_vars)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(bomb), str(limit_mb)], capture_output=True, text=True,
                         timeout=300, env=env, preexec_fn=preexec)
    lines = out.stderr.strip().splitlines()
    m = re.match(r"base=(\d+) peak=(\d+)", lines[-1]) if lines else None
    assert m, out.stderr
    return out.returncode, "\n".join(lines[:-1]), int(m.group(1)), int(m.group(2))


def test_a_gzip_bomb_is_refused_before_it_holds_more_than_the_cap(tmp_path):
    """Under ``ulimit -v`` 1 GiB, the expansion check off: the cap on decompressed bytes is
    what the limit leaves, divided by the memory a load needs per byte; the child's peak RSS
    stays within it."""
    code, err, base, peak = _run_bomb(_bomb(tmp_path / "bomb.json.gz"), 1024, TRACETUI_MAX_EXPANSION="0")
    assert code == 2 and err.count("\n") == 0, err
    m = re.match(r"tracetui: \S+bomb\.json\.gz: decompresses to more than ([\d.]+) MB \(stopped at compressed byte "
                 r"[\d,]+ of [\d,]+\); loading it needs over [\d.]+ (MB|GB) of memory but only ([\d.]+) MB is "
                 r"available$", err)
    assert m, err
    cap, avail = float(m.group(1)) * 1e6, float(m.group(3)) * 1e6  # SI MB (tracetui/units.py)
    assert avail < 1024 * MIB and cap <= avail / 2.4  # from the limit, not from the machine's memory
    assert peak - base < cap + 48 * MIB, (peak, base, cap)  # at most one inflate step past the cap


def test_a_31_mb_bomb_is_refused_by_its_expansion_under_1_gb_without_a_ulimit(tmp_path):
    """No ``ulimit``, the machine's memory (GBs): 30 GiB of zeros in 31 MB of gzip members (the
    issue's bomb peaked at 5.2 GB before it was refused).  No trace expands over 200x
    (config.MAX_EXPANSION; the shared traces: 7-32x): refused once past 256 MB, the child's
    peak RSS under 1 GB."""
    bomb = _bomb(tmp_path / "bomb.json.gz", gib=30)
    assert 30e6 < bomb.stat().st_size < 32e6
    code, err, base, peak = _run_bomb(bomb, 0)
    assert code == 2 and err.count("\n") == 0, err
    m = re.match(rf"tracetui: {re.escape(str(bomb))}: decompresses ([\d,]+)x \(([\d.]+) MB from the first [\d,]+ "
                 r"of 31,\d{3},\d{3} compressed bytes\): no trace expands that much, so past 200x a file is refused "
                 r"as a decompression bomb \(TRACETUI_MAX_EXPANSION raises the limit\)$", err)
    assert m, err
    assert int(m.group(1).replace(",", "")) > 1000 and 256 < float(m.group(2)) < 270
    assert peak < 1e9 and peak - base < 256e6 + 64 * MIB, (peak, base)  # the floor and a few inflate steps


def _own_memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory folder when it can be written (root on a host that
    lets us make a child cgroup); None otherwise."""
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines()
                    if x.split(":")[1] == "memory")
    except (OSError, StopIteration, IndexError):
        return None
    folder = Path("/sys/fs/cgroup/memory") / line.split(":", 2)[2].lstrip("/")
    return folder if folder.is_dir() and os.access(folder, os.W_OK) else None


def test_a_bomb_inside_a_small_cgroup_ends_in_one_line_not_a_kill(tmp_path):
    """A real cgroup (v1 here) of 768 MiB below this process's own: the limit of the nested
    cgroup is found by walking /proc/self/cgroup, and the load is refused (exit 2) instead
    of ending in exit 137.  Skipped where a child cgroup cannot be made."""
    own = _own_memory_cgroup()
    if own is None:
        pytest.skip("no writable cgroup v1 memory hierarchy for a child cgroup")
    child = own / f"tracetui-test-{os.getpid()}"
    try:
        child.mkdir()
        (child / "memory.limit_in_bytes").write_text(str(768 * MIB))
    except OSError as exc:
        pytest.skip(f"cannot make a child cgroup: {exc}")
    try:
        code, err, base, peak = _run_bomb(_bomb(tmp_path / "bomb.json.gz"), 8192,
                                          preexec=lambda: (child / "cgroup.procs").write_text(str(os.getpid())),
                                          TRACETUI_MAX_EXPANSION="0")
        assert code == 2, err
        m = re.search(r"but only ([\d.]+) MB is available$", err)
        assert m and float(m.group(1)) * 1e6 < 768 * MIB, err  # SI MB
    finally:
        child.rmdir()
