"""An XSpace's columns (:mod:`.reader`) as the decoded columns Kineto's build takes
(:class:`~tracetui.kineto.decode.DecodedTrace`), then the trace: the same
:func:`~tracetui.kineto.build.build_trace` that builds a PyTorch trace nests the host events per
thread and hangs every kernel under the API call with its correlation id, so the tree, the links
and every analysis keep Kineto's definitions.

What each plane, line, event and stat becomes (docs/formats.md, "JAX/XLA XPlane"):

* a GPU plane ``/device:GPU:<n>``: device ``n``; each of its lines a stream (its id), each event
  a ``kernel`` (``gpu_memcpy`` / ``gpu_memset`` for copies and sets) with Kineto's ``device``,
  ``stream``, ``correlation`` and, from ``kernel_details``, ``grid``, ``block``, ``registers per
  thread`` and ``shared memory``; derived lines (``XLA Ops``, ``Steps`` ...) are not read;
* a host plane ``/host:...``: each line a thread (pid: the plane's ``process_id``); an event with
  a ``correlation_id`` is an API call (``cuda_driver`` for ``cu*``, else ``cuda_runtime``); an
  event named as some ``hlo_op`` is the XLA op (``cpu_op``); the module span
  (``<module>:XLA GPU module``) and step annotations (a ``step_num`` stat) are
  ``user_annotation``; ``$``-named Python tracer events ``python_function``; the rest plain spans;
* every stat of an event is kept in its args under its own name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.formats import Progress, no_progress
from ..kineto import schema as ks
from ..kineto.build import build_trace
from ..kineto.columns import DecodedEvents, Interned
from ..kineto.decode import DecodedTrace
from ..kineto.schema import KEY_DEFAULTS, KEY_FIELDS
from ..kineto.trace import KinetoTrace
from . import schema as s
from .details import EventArgs, event_args
from .reader import Space
from .sniff import FORMAT_NAME
from .threads import call_line_owners

#: Kineto's names of the metadata events that name processes and threads
_PROCESS_NAME, _THREAD_NAME = "process_name", "thread_name"
#: the name of an event whose metadata id has no entry in its plane
NO_METADATA = "(no event metadata)"
_PS_PER_US = 1_000_000


class _Roles:
    """Planes and lines: which are read, and as what."""

    def __init__(self, space: Space) -> None:
        planes, lines = space.planes, space.lines
        self.device = np.array([_gpu_number(p.name) for p in planes] or [-1], dtype=np.int64)
        self.host = np.array([p.name.startswith(s.HOST_PLANE_PREFIX) for p in planes] or [False], dtype=bool)
        lp = lines.plane
        on_gpu = self.device[lp] >= 0 if lines.n else np.zeros(0, bool)
        self.derived = on_gpu & np.array([nm in s.DERIVED_LINES for nm in lines.name], dtype=bool)
        self.stream = on_gpu & ~self.derived
        self.thread = self.host[lp] if lines.n else np.zeros(0, bool)
        self.pid = [_host_pid(space, p) for p in planes]


def _gpu_number(name: str) -> int:
    m = s.GPU_PLANE.match(name)
    return int(m.group(1)) if m and int(m.group(1)) < 1 << 31 else -1


def _host_pid(space: Space, plane) -> Any:
    """A host plane's pid: its ``process_id`` stat, else the host's name, else the plane's."""
    pid = plane.stats.get(s.STAT_PROCESS_ID)
    if isinstance(pid, int) and not isinstance(pid, bool):
        return pid
    return space.hostnames[0] if space.hostnames else plane.name


def decoded(space: Space, path: str, progress: Progress = no_progress) -> DecodedTrace:
    """The space's events that are read, as Kineto's decoded columns (and the warnings)."""
    warnings: list[LoadWarning] = []
    roles = _Roles(space)
    ev, lines = space.events, space.lines
    line_read = roles.stream | roles.thread
    keep = line_read[ev.line] & (ev.occurrences == 0) if ev.n else np.zeros(0, bool)
    _warn_not_read(space, roles, keep, warnings)
    idx = np.flatnonzero(keep)
    n = idx.size
    line = ev.line[idx]
    on_gpu = roles.stream[line]
    progress("classifying events", 0.45)
    ea = event_args(space, idx, on_gpu, roles.device[lines.plane[line]], lines.id[line])
    cat = _categories(space, ea, idx, on_gpu)
    owners = _call_line_owners(space, ea, idx, line, cat, n)
    is_call = np.isin(cat, [s.CATEGORIES.index(s.CAT_RUNTIME), s.CATEGORIES.index(s.CAT_DRIVER)])
    ea.set_launches(space.names, ev.name[idx], is_call)
    tid_line = line.copy()
    if owners:
        moved = np.isin(line, list(owners))
        remap = np.arange(lines.n)
        for a, b in owners.items():
            remap[a] = b
        tid_line = remap[line]
        ea.add_moved(np.flatnonzero(moved), line[moved], lines.name)
        warnings.append(LoadWarning("xplane_moved_calls", f"{int(moved.sum()):,} API calls on {len(owners)} lines of "
                                    "their own are shown on the line of the XLA ops that issue them (one thread: "
                                    "every call lies in an op named as its hlo_op there, docs/formats.md)",
                                    int(moved.sum())))
    names = [*space.names, NO_METADATA, _PROCESS_NAME, _THREAD_NAME]
    name_code = np.where(ev.name[idx] >= 0, ev.name[idx], len(space.names)).astype(np.int32)
    name_code = ea.copy_names(space, name_code, cat == s.CATEGORIES.index(s.CAT_MEMCPY), names)
    progress("writing args", 0.5)
    blob, offsets = ea.blob(n, space)
    warnings += ea.warnings + _warn_unknown(space)
    line_pid = [roles.pid[p] if roles.device[p] < 0 else int(roles.device[p]) for p in lines.plane.tolist()]
    meta = _meta_rows(space, np.unique(tid_line[~on_gpu]), np.unique(line[on_gpu]), owners, line_pid)
    n_all = n + len(meta)
    pid_vals: dict = {}
    line_pid_code = np.array([pid_vals.setdefault((type(v), v), len(pid_vals)) for v in line_pid] or [0],
                             dtype=np.int32)
    meta_pid = np.array([pid_vals.setdefault((type(m[1]), m[1]), len(pid_vals)) for m in meta], dtype=np.int32)
    pid = Interned(np.concatenate((line_pid_code[tid_line], meta_pid)), [v for _, v in pid_vals])
    tid_all = np.concatenate((lines.id[tid_line], np.array([m[2] for m in meta], dtype=np.int64)))
    tid_vals, tid_code = np.unique(tid_all, return_inverse=True)
    tid = Interned(tid_code.reshape(-1).astype(np.int32), [int(v) for v in tid_vals.tolist()])
    ts_int, ts_frac = _times(space, idx, line)
    meta_name = np.array([names.index(m[0]) for m in meta], dtype=np.int32)
    meta_args = [_meta_json(m[3]) for m in meta]
    key_args = {f: np.full(n_all, KEY_DEFAULTS[f], dtype=np.int64) for f in KEY_FIELDS}
    key_args["correlation"][:n] = ea.correlation
    key_args["device"][:n] = np.where(on_gpu, ea.device, -1)
    key_args["stream"][:n] = np.where(on_gpu, ea.stream, -1)
    meta_lens = np.fromiter(map(len, meta_args), dtype=np.int64, count=len(meta_args))
    all_offsets = np.concatenate((offsets, offsets[-1] + np.cumsum(meta_lens)))
    events = DecodedEvents(
        ph=Interned(np.concatenate((np.zeros(n, np.int32), np.ones(len(meta), np.int32))), ["X", "M"]),
        cat=Interned(np.concatenate((cat, np.zeros(len(meta), np.int32))).astype(np.int32), list(s.CATEGORIES)),
        name=Interned(np.concatenate((name_code, meta_name)), names), pid=pid, tid=tid,
        ts_int=np.concatenate((ts_int, np.full(len(meta), int(ts_int.min()) if n else 0, np.int64))),
        ts_frac=np.concatenate((ts_frac, np.zeros(len(meta)))),
        dur=np.concatenate((ev.dur_ps[idx] / _PS_PER_US, np.zeros(len(meta)))), flow_id=[None] * n_all,
        args_blob=_joined(blob, b"".join(meta_args)), args_offsets=all_offsets, key_args=key_args,
        n_elements=n_all)
    metadata: dict[str, Any] = {s.META_XPLANE: _space_facts(space)}
    props = device_properties(space, roles)
    if props:
        metadata[ks.DEVICE_PROPERTIES] = props
    return DecodedTrace(events, metadata, warnings, "object")


def _joined(blob, tail: bytes):
    if not tail:
        return blob
    if isinstance(blob, bytes):
        return blob + tail
    size = len(blob)
    blob.resize(size + len(tail))
    blob[size:] = tail
    return blob


def _times(space: Space, idx: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 µs, float64 fraction of a µs) of each event's start: its line's ns plus its ps."""
    tns = space.lines.ts_ns[line]
    rem = (tns % 1000) * 1000 + space.events.offset_ps[idx]
    return tns // 1000 + rem // _PS_PER_US, (rem % _PS_PER_US).astype(np.float64) / _PS_PER_US


def _categories(space: Space, ea: EventArgs, idx: np.ndarray, on_gpu: np.ndarray) -> np.ndarray:
    """The index into :data:`~.schema.CATEGORIES` of each event (rules of the module docstring)."""
    names = space.names
    code = space.events.name[idx]

    def by_name(test) -> np.ndarray:
        out = np.array([test(nm) for nm in names] + [False], dtype=bool)
        return out[code]  # code -1 (no metadata): the last entry

    op_names = set(ea.hlo_ops)
    cat = np.full(idx.size, s.CATEGORIES.index(s.CAT_OTHER), dtype=np.int32)
    host = ~on_gpu
    cat[host & by_name(lambda nm: nm.startswith(s.PYTHON_PREFIX))] = s.CATEGORIES.index(s.CAT_PYTHON)
    annotation = by_name(lambda nm: nm.endswith(s.MODULE_SUFFIX) or s.JIT_CALL.match(nm) is not None)
    cat[host & (annotation | ea.step_annotation)] = \
        s.CATEGORIES.index(s.CAT_ANNOTATION)
    cat[host & by_name(op_names.__contains__)] = s.CATEGORIES.index(s.CAT_OP)
    call = host & (ea.correlation >= 0)
    driver = by_name(lambda nm: s.DRIVER_API.match(nm) is not None)
    cat[call] = np.where(driver[call], s.CATEGORIES.index(s.CAT_DRIVER), s.CATEGORIES.index(s.CAT_RUNTIME))
    cat[on_gpu] = s.CATEGORIES.index(s.CAT_KERNEL)
    copy = on_gpu & (ea.memcpy | by_name(lambda nm: nm.startswith(s.MEMCPY_PREFIX)))
    cat[copy] = s.CATEGORIES.index(s.CAT_MEMCPY)
    cat[on_gpu & (ea.memset | by_name(lambda nm: nm.startswith(s.MEMSET_PREFIX)))] = s.CATEGORIES.index(s.CAT_MEMSET)
    return cat


def _call_line_owners(space: Space, ea: EventArgs, idx: np.ndarray, line: np.ndarray, cat: np.ndarray,
                      n: int) -> dict[int, int]:
    """Host lines of API calls that belong with the line of the ops issuing them (:mod:`.threads`)."""
    is_call = np.isin(cat, [s.CATEGORIES.index(s.CAT_RUNTIME), s.CATEGORIES.index(s.CAT_DRIVER)])
    calls = np.flatnonzero(is_call & (ea.hlo_op >= 0))
    ops = np.flatnonzero(cat == s.CATEGORIES.index(s.CAT_OP))
    if not calls.size or not ops.size:
        return {}
    rank = {nm: k for k, nm in enumerate(ea.hlo_ops)}
    op_rank = np.array([rank.get(nm, -1) for nm in space.names] + [-1], dtype=np.int64)[space.events.name[idx[ops]]]
    t0, t1 = _ns_span(space, idx, line)
    return call_line_owners(line[calls].astype(np.int64), ea.hlo_op[calls].astype(np.int64), t0[calls], t1[calls],
                            line[ops].astype(np.int64), op_rank, t0[ops], t1[ops], space.lines.plane)


def _ns_span(space: Space, idx: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each event in ns from the earliest start (int64; ends rounded up)."""
    tns = space.lines.ts_ns[line]
    off = space.events.offset_ps[idx]
    start = tns + off // 1000
    end = tns + -(-(off + np.maximum(space.events.dur_ps[idx], 0)) // 1000)
    base = int(start.min()) if start.size else 0
    return start - base, end - base


def _meta_rows(space: Space, host_lines: np.ndarray, gpu_lines: np.ndarray, owners: dict[int, int],
               pid_of_line: list) -> list[tuple[str, Any, Any, str]]:
    """Kineto's ``process_name``/``thread_name`` rows: (kind, pid, tid, name)."""
    lines = space.lines
    rows: list[tuple[str, Any, Any, str]] = []
    joined: dict[int, list[int]] = {}
    for a, b in owners.items():
        joined.setdefault(b, []).append(a)
    seen: set = set()
    for k in host_lines.tolist():
        pid = pid_of_line[k]
        if pid not in seen:
            seen.add(pid)
            rows.append((_PROCESS_NAME, pid, 0, space.planes[lines.plane[k]].name))
        label = " + ".join(_line_label(lines, j) for j in [k, *sorted(joined.get(k, []))])
        rows.append((_THREAD_NAME, pid, int(lines.id[k]), label))
    for k in gpu_lines.tolist():  # a stream line named otherwise than "Stream #<id>(...)" keeps its name
        m = s.STREAM_LINE.match(lines.name[k])
        if lines.name[k] and not (m and int(m.group(1)) == int(lines.id[k])):
            rows.append((_THREAD_NAME, int(pid_of_line[k]), int(lines.id[k]), lines.name[k]))
    return rows


def _line_label(lines, k: int) -> str:
    return lines.display[k] or lines.name[k] or f"line {int(lines.id[k])}"


def _meta_json(name: str) -> bytes:
    import msgspec

    return msgspec.json.encode({ks.META_NAME: name})


def _space_facts(space: Space) -> dict[str, Any]:
    """The trace's ``metadata["xplane"]`` (a top-level key of Chrome exports and slices):
    hostnames, planes, the profile's start and stop, the profiler's own errors and warnings."""
    out: dict[str, Any] = {"hostnames": space.hostnames, "planes": [p.name for p in space.planes]}
    for key, vals in (("errors", space.errors), ("warnings", space.warnings)):
        if vals:
            out[key] = vals[:20]
    env = next((p for p in space.planes if p.name == s.ENV_PLANE), None)
    if env is not None:
        out.update({k: v for k, v in env.stats.items() if isinstance(v, (int, float, str))})
    return out


def device_properties(space: Space, roles: _Roles) -> list[dict[str, Any]]:
    """Each GPU plane's own stats as Kineto's ``deviceProperties`` entry."""
    out = []
    for p in space.planes:
        dev = int(roles.device[p.index])
        if dev < 0:
            continue
        st = p.stats
        entry: dict[str, Any] = {ks.DEV_ID: dev}
        name = st.get(s.PLANE_DEVICE_NAME) or st.get(s.PLANE_VENDOR)
        if isinstance(name, str):
            entry[ks.DEV_NAME] = name
        for stat, key in ((s.PLANE_CC_MAJOR, ks.DEV_CC_MAJOR), (s.PLANE_CC_MINOR, ks.DEV_CC_MINOR),
                          (s.PLANE_CORES, ks.DEV_NUM_SMS), (s.PLANE_MEMORY, ks.DEV_TOTAL_MEMORY)):
            if isinstance(st.get(stat), int):
                entry[key] = st[stat]
        out.append(entry)
    return sorted(out, key=lambda e: e[ks.DEV_ID])


def _warn_not_read(space: Space, roles: _Roles, keep: np.ndarray, warnings: list[LoadWarning]) -> None:
    """Name what is not read, with counts: derived lines, planes neither GPU nor host, aggregated events."""
    ev, lines = space.events, space.lines
    if not ev.n:
        return
    per_line = np.bincount(ev.line, minlength=lines.n)
    derived = np.flatnonzero(roles.derived & (per_line > 0))
    if derived.size:
        c = int(per_line[derived].sum())
        which = sorted({lines.name[k] for k in derived.tolist()})
        warnings.append(LoadWarning("xplane_derived_lines", f"{c:,} events on lines derived from the streams' "
                                    f"({', '.join(which)}) are not read: the kernels' own stats say the same", c))
    other = np.flatnonzero(~(roles.stream | roles.thread | roles.derived) & (per_line > 0))
    if other.size:
        c = int(per_line[other].sum())
        which = sorted({space.planes[lines.plane[k]].name for k in other.tolist()})
        warnings.append(LoadWarning("xplane_other_planes", f"{c:,} events on planes that are neither a GPU "
                                    f"(/device:GPU:n) nor the host ({', '.join(which[:6])}) are not read", c))
    agg = int((ev.occurrences != 0).sum())
    if agg:
        warnings.append(LoadWarning("xplane_aggregated", f"{agg:,} aggregated events (num_occurrences, no time) "
                                    "are not read", agg))


def _warn_unknown(space: Space) -> list[LoadWarning]:
    out = []
    if space.unknown_metadata:
        out.append(LoadWarning("xplane_metadata", f"{space.unknown_metadata:,} events or stats name a metadata id "
                               f"their plane does not define: shown as {NO_METADATA!r} / skipped",
                               space.unknown_metadata))
    if space.bad_utf8:
        out.append(LoadWarning("invalid_utf8", f"{space.bad_utf8:,} names are not valid UTF-8 (bad bytes read as "
                               "U+FFFD)", space.bad_utf8))
    meta_stats = sum(p.meta_stats for p in space.planes if p.event_ids.size and
                     (space.lines.plane == p.index).any())
    if meta_stats:
        out.append(LoadWarning("xplane_metadata_stats", f"{meta_stats:,} event metadata entries of planes with "
                               "events carry stats of their own: not shown", meta_stats))
    return out


def build(path: str, space: Space, progress: Progress = no_progress) -> KinetoTrace:
    """The trace of a read XSpace (``loader.load_xplane`` runs the same steps, freeing the
    space before the Kineto build)."""
    dec = decoded(space, path, progress)
    progress("building", 0.55)
    trace = build_trace(path, dec, progress=progress)
    trace.source_format = FORMAT_NAME
    return trace


__all__ = ["build", "decoded", "device_properties"]
