"""How much reading one trace file may hold: the memory this process can still use, the cap
on a trace's JSON, and the expansion a compressed file is allowed (:class:`Budget`).

Memory: the tightest of MemAvailable, what every cgroup above the process leaves (v2 and v1,
nested: Slurm job > step > task, ``systemd-run -p MemoryMax``, a container), ``ulimit -v``/``-d``
and ``$TRACETUI_MEMORY_LIMIT_MB`` (:func:`available_memory_bytes`); a load needs
:data:`MEMORY_FACTOR` bytes of it per byte of JSON.

Cap: ``$TRACETUI_MAX_TRACE_MB`` (default ``config.MAX_TRACE_MB``) bytes of JSON, whatever the
memory.  Expansion: a compressed file whose content passes ``config.EXPANSION_FLOOR_MB`` and
``$TRACETUI_MAX_EXPANSION`` (default ``config.MAX_EXPANSION``) times the compressed bytes read
so far is a decompression bomb: no trace expands that much (the shared traces: 7-32x gzip,
8-48x zstd -19; zeros: 1,032x gzip).  A bomb is thus refused once it has inflated the floor
(256 MB), not when it reaches the memory limit (several GB on a workstation).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import config
from ..errors import TraceTooLargeError
from ..units import bytes_rounded

#: Bytes of memory loading needs per byte of decompressed JSON: the text plus ~1.5x for
#: decoding and columns.  Refuse early instead of swapping.
MEMORY_FACTOR = 2.5


#: (limit, usage, reclaimable page cache in memory.stat) file names of cgroup v2 and v1
_CGROUP_FILES = {"v2": ("memory.max", "memory.current", b"inactive_file"),
                 "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes", b"total_inactive_file")}


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None


def _cgroup_level_left(folder: str, version: str) -> int | None:
    """Memory left under the limit of one cgroup folder (limit - usage + its inactive page
    cache, which the kernel reclaims before it kills), or None when it sets no limit."""
    limit_f, usage_f, cache_key = _CGROUP_FILES[version]
    raw = _read_text(os.path.join(folder, limit_f))
    if raw is None or raw.strip() in ("", "max"):
        return None
    try:
        limit = int(raw.strip())
        usage = int((_read_text(os.path.join(folder, usage_f)) or "0").strip() or 0)
    except ValueError:
        return None
    if limit >= 1 << 60:  # v1 writes a huge number for "no limit"
        return None
    reclaimable = 0
    for line in (_read_text(os.path.join(folder, "memory.stat")) or "").splitlines():
        name, _, value = line.partition(" ")
        if name.encode() == cache_key and value.strip().isdigit():
            reclaimable = int(value)
            break
    return max(limit - usage + min(reclaimable, usage), 0)


def _cgroup_mounts(mountinfo: str) -> dict[str, tuple[str, str]]:
    """{"v2" or "v1": (mount point, root of the mount inside the hierarchy)} from
    /proc/self/mountinfo (v1: the hierarchy holding the memory controller)."""
    out: dict[str, tuple[str, str]] = {}
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, after = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(after) < 3:
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        if after[0] == "cgroup2":
            out.setdefault("v2", (point, root))
        elif after[0] == "cgroup" and "memory" in after[2].split(","):
            out.setdefault("v1", (point, root))
    return out


def cgroup_memory_left(proc_cgroup: str, mountinfo: str, prefix: str = "") -> int | None:
    """Memory this process can still take before a cgroup limit stops it (bytes), or None
    when no limit is set: the tightest over the process's own cgroup and every cgroup above
    it (limits nest: Slurm job > step > task, ``systemd-run -p MemoryMax``, a container), for
    cgroup v2 and v1.  ``proc_cgroup`` and ``mountinfo`` are the texts of
    /proc/self/cgroup and /proc/self/mountinfo; ``prefix`` is put before every mount point
    (tests)."""
    mounts = _cgroup_mounts(mountinfo)
    best: int | None = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        version = "v2" if hid == "0" and controllers == "" else "v1" if "memory" in controllers.split(",") else None
        if version is None or version not in mounts:
            continue
        point, root = mounts[version]
        # the mount shows the hierarchy from ``root`` down (a container's own cgroup)
        if root == "/":
            rel = path
        elif path == root or path.startswith(root + "/"):
            rel = path[len(root):]
        else:  # the process's cgroup lies outside what the mount shows: its root is the nearest
            rel = "/"
        folder = os.path.normpath(prefix + point + "/" + rel.strip("/"))
        top = os.path.normpath(prefix + point)
        while True:
            left = _cgroup_level_left(folder, version)
            if left is not None:
                best = left if best is None else min(best, left)
            if folder == top or len(folder) <= len(top):
                break
            folder = os.path.dirname(folder)
    return best


def _rlimit_left() -> int | None:
    """Address space left under ``ulimit -v`` (RLIMIT_AS) or the data limit (RLIMIT_DATA),
    from the sizes in /proc/self/status; None when neither is set."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return None
    status = _read_text("/proc/self/status") or ""
    sizes = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmSize", "VmData") and value.split() and value.split()[0].isdigit():
            sizes[key] = int(value.split()[0]) * 1024
    best = None
    for limit_id, key in ((resource.RLIMIT_AS, "VmSize"), (getattr(resource, "RLIMIT_DATA", None), "VmData")):
        if limit_id is None:
            continue
        soft = resource.getrlimit(limit_id)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        left = max(soft - sizes.get(key, 0), 0)
        best = left if best is None else min(best, left)
    return best


def available_memory_bytes() -> int | None:
    """Memory this process can still use (bytes): the tightest of MemAvailable from
    /proc/meminfo, what the limits of the process's cgroups leave (:func:`cgroup_memory_left`)
    and what ``ulimit -v``/``-d`` leaves; None where none of them can be read."""
    found = []
    for line in (_read_text("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:") and len(line.split()) > 1 and line.split()[1].isdigit():
            found.append(int(line.split()[1]) * 1024)
            break
    proc_cgroup = _read_text("/proc/self/cgroup")
    mountinfo = _read_text("/proc/self/mountinfo")
    if proc_cgroup and mountinfo:
        cg = cgroup_memory_left(proc_cgroup, mountinfo)
        if cg is not None:
            found.append(cg)
    rl = _rlimit_left()
    if rl is not None:
        found.append(rl)
    if config.env("TRACETUI_MEMORY_LIMIT_MB"):
        found.append(config.env_megabytes("TRACETUI_MEMORY_LIMIT_MB", float("inf")))
    return min(found) if found else None


def max_trace_bytes() -> int:
    """The most JSON a trace may hold (``$TRACETUI_MAX_TRACE_MB``), in bytes."""
    return config.env_megabytes("TRACETUI_MAX_TRACE_MB", config.MAX_TRACE_MB)


def max_expansion() -> float:
    """How many times its compressed size a file may expand (``$TRACETUI_MAX_EXPANSION``);
    infinite when set to 0 or less."""
    try:
        ratio = float(config.env("TRACETUI_MAX_EXPANSION") or config.MAX_EXPANSION)
    except ValueError:
        ratio = float(config.MAX_EXPANSION)
    return ratio if ratio > 0 else float("inf")


@dataclass
class Budget:
    """What reading the file at ``path`` may produce: ``avail`` bytes of memory (None: not
    known) hold ``avail / MEMORY_FACTOR`` bytes of JSON; never more than
    :func:`max_trace_bytes`; for a file of ``size`` compressed bytes, never more than
    :func:`max_expansion` times the compressed bytes read so far once past
    ``config.EXPANSION_FLOOR_MB``.  :meth:`check` raises :class:`TraceTooLargeError` in one
    line saying which limit was passed, where, and how to raise it."""

    path: str
    size: int
    avail: int | None
    memory: float = field(init=False)
    cap: int = field(init=False, default_factory=max_trace_bytes)
    ratio: float = field(init=False, default_factory=max_expansion)
    floor: int = field(init=False, default=config.EXPANSION_FLOOR_MB * 10**6)

    def __post_init__(self) -> None:
        self.memory = float("inf") if self.avail is None else self.avail / MEMORY_FACTOR

    def check_plain(self, nbytes: int) -> None:
        """Refuse a plain file of ``nbytes`` bytes of JSON before it is read."""
        if nbytes > self.cap:
            raise TraceTooLargeError(self.path, f"holds {bytes_rounded(nbytes)} of JSON, more than a trace may "
                                                f"({bytes_rounded(self.cap)}; TRACETUI_MAX_TRACE_MB raises it)")
        if nbytes > self.memory:
            raise TraceTooLargeError(
                self.path, f"needs about {bytes_rounded(nbytes * MEMORY_FACTOR)} of memory to load "
                           f"but only {bytes_rounded(self.avail or 0)} is available")

    def check(self, total: int, used: int) -> None:
        """Refuse a compressed file that has decompressed to ``total`` bytes from its first
        ``used`` compressed bytes."""
        where = f"stopped at compressed byte {used:,} of {self.size:,}"
        if total > self.floor and total > self.ratio * max(used, 1):
            raise TraceTooLargeError(
                self.path, f"decompresses {total / max(used, 1):,.0f}x ({bytes_rounded(total)} from the first "
                           f"{used:,} of {self.size:,} compressed bytes): no trace expands that much, so past "
                           f"{self.ratio:,.0f}x a file is refused as a decompression bomb "
                           "(TRACETUI_MAX_EXPANSION raises the limit)")
        if total > self.cap:
            raise TraceTooLargeError(self.path, f"decompresses to more than {bytes_rounded(self.cap)} ({where}), "
                                                "more JSON than a trace may hold (TRACETUI_MAX_TRACE_MB raises it)")
        if total > self.memory:
            raise TraceTooLargeError(
                self.path, f"decompresses to more than {bytes_rounded(total)} ({where}); loading it needs over "
                           f"{bytes_rounded(total * MEMORY_FACTOR)} of memory but only "
                           f"{bytes_rounded(self.avail or 0)} is available")

    def room(self, total: int, used: int) -> float:
        """How many more bytes may come out now (for an inflater's step size)."""
        expansion = max(self.floor, self.ratio * max(used, 1))
        return min(self.cap, self.memory, expansion) - total
