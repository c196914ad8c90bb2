"""The generic reading of a Chrome trace's decoded columns (before the Kineto build).

Every event keeps its own category; the build shows an event whose category has no Kineto
kind as a plain span on its thread, and is told (:func:`adapt` returns them) that these
categories are the file's own, not categories of a PyTorch trace it fails to understand.

One convention is read as GPU work: the TensorFlow/JAX profiler's trace viewer JSON (xprof's
Chrome trace of an XSpace, JAX's ``trace.json.gz``) names a GPU's process ``/device:GPU:<n>``
and each of its streams' threads ``Stream #<id>(...)``.  The complete events on such a thread
are the GPU's kernels (``Memcpy*``/``Memset*`` ones its copies and sets), as in the XPlane they
come from: they get Kineto's ``kernel`` (``gpu_memcpy``/``gpu_memset``) category, device ``n``
and stream ``id``.  Other threads of a device process (``XLA Ops``, ``XLA Modules``, ``Steps``:
the same kernels grouped by op and step) stay plain spans.  Nothing else is renamed.
"""

from __future__ import annotations

import msgspec
import numpy as np

from ..kineto.columns import DecodedEvents, lenient_decode
from ..kineto.decode import DecodedTrace
from . import schema as s


def _names(ev: DecodedEvents) -> tuple[dict, dict]:
    """(process name by pid, thread name by (pid, tid)) from the metadata events."""
    meta_ph = [i for i, v in enumerate(ev.ph.values) if v == s.META_PHASE]
    wanted = [i for i, v in enumerate(ev.name.values) if v in (s.PROCESS_NAME, s.THREAD_NAME)]
    procs: dict = {}
    threads: dict = {}
    if not meta_ph or not wanted:
        return procs, threads
    rows = np.flatnonzero(np.isin(ev.ph.codes, meta_ph) & np.isin(ev.name.codes, wanted))
    for r in rows.tolist():
        a, b = int(ev.args_offsets[r]), int(ev.args_offsets[r + 1])
        try:
            args = lenient_decode(ev.args_blob[a:b]) if b > a else {}
        except msgspec.DecodeError:
            continue
        if not isinstance(args, dict) or not isinstance(args.get(s.META_NAME), str):
            continue
        if ev.name[r] == s.PROCESS_NAME:
            procs[ev.pid[r]] = args[s.META_NAME]
        else:
            threads[(ev.pid[r], ev.tid[r])] = args[s.META_NAME]
    return procs, threads


def gpu_streams(procs: dict, threads: dict) -> dict:
    """(pid, tid) -> (device, stream) of every GPU stream thread (the module's convention)."""
    devices = {}
    for pid, name in procs.items():
        m = s.GPU_PROCESS.match(name)
        if m:
            devices[pid] = int(m.group(1))
    out = {}
    for (pid, tid), name in threads.items():
        m = s.STREAM_THREAD.match(name)
        if pid in devices and m:
            out[(pid, tid)] = (devices[pid], int(m.group(1)))
    return out


def _category_code(ev: DecodedEvents, cat: str) -> int:
    try:
        return ev.cat.values.index(cat)
    except ValueError:
        ev.cat.values.append(cat)
        return len(ev.cat.values) - 1


def adapt(dec: DecodedTrace) -> frozenset[str]:
    """Read the GPU streams' events as GPU work (in place); give the file's own categories."""
    ev = dec.events
    streams = gpu_streams(*_names(ev))
    if streams:
        pid_code = {v: i for i, v in enumerate(ev.pid.values)}
        tid_code = {v: i for i, v in enumerate(ev.tid.values)}
        width = len(ev.tid.values) + 1
        keys = {pid_code[p] * width + tid_code[t]: dt for (p, t), dt in streams.items()
                if p in pid_code and t in tid_code}
        span = [i for i, v in enumerate(ev.ph.values) if v in s.SPAN_PHASES]
        pair = ev.pid.codes.astype(np.int64) * width + ev.tid.codes
        rows = np.flatnonzero(np.isin(pair, list(keys)) & np.isin(ev.ph.codes, span))
        if rows.size:
            _mark_gpu_work(ev, rows, pair[rows], keys)
    return frozenset(str(c) for c in ev.cat.values)


def _mark_gpu_work(ev: DecodedEvents, rows: np.ndarray, pair: np.ndarray, keys: dict) -> None:
    """Give the GPU stream events ``rows`` their GPU category, device and stream."""
    names = ev.name.values
    kind_of_name = np.array([s.CAT_MEMCPY if str(nm).startswith(s.MEMCPY_PREFIX) else
                             s.CAT_MEMSET if str(nm).startswith(s.MEMSET_PREFIX) else s.CAT_KERNEL
                             for nm in names] or [s.CAT_KERNEL], dtype=object)
    codes = {c: _category_code(ev, c) for c in (s.CAT_KERNEL, s.CAT_MEMCPY, s.CAT_MEMSET)}
    cat = ev.cat.codes
    if not cat.flags.writeable:
        cat = ev.cat.codes = cat.copy()
    cat[rows] = np.array([codes[c] for c in kind_of_name[ev.name.codes[rows]].tolist()], dtype=cat.dtype)
    uk, inv = np.unique(pair, return_inverse=True)
    dev = np.array([keys[int(k)][0] for k in uk.tolist()], dtype=np.int64)[inv.reshape(-1)]
    stream = np.array([keys[int(k)][1] for k in uk.tolist()], dtype=np.int64)[inv.reshape(-1)]
    for name, values in (("device", dev), ("stream", stream)):
        col = ev.key_args[name]
        if not col.flags.writeable:
            col = ev.key_args[name] = col.copy()
        col[rows] = values
