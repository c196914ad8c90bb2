"""What the rules share about one linked trace, computed once per check run: the GPU events
frame, the idle gaps, the launch classes, the synchronising calls and ops, the step spans.

Each rule reads what it needs from a :class:`CheckContext`; nothing here is a second
definition of a number of ``tracetui.analysis``: the frames, gaps, launch classes and the
GPU idle after a sync come from there.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.categories import KernelCategorizer
from ..analysis.driver import sync_calls
from ..analysis.frames import gpu_events_frame, gpu_totals, resolve_categorizer
from ..analysis.gaps import idle_gaps
from ..analysis.launches import copy_direction, launch_classes
from ..analysis.waits import IdleAfter, gpu_idle_after
from ..driver import DriverTrace
from ..kineto.kinds import BLOCKING_SYNC_RE, GPU_WORK_KINDS, LAUNCH_KINDS, Kind, LaunchClass
from ..session import LinkedTrace
from ..tree.propagate import fill_down, nearest_kept_ancestor

#: ops through which a host reads a GPU value: ``.item()`` and ``.cpu()`` / ``.to("cpu")``
ITEM_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"})
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
#: the op the autograd engine runs each backward node under
BACKWARD_NODE = "autograd::engine::evaluate_function"
_BUILTIN = "<built-in"


class CheckContext:
    """One linked trace (Kineto part, with its ET link and driver-call link when given)."""

    def __init__(self, linked: LinkedTrace, categorizer: KernelCategorizer | None = None) -> None:
        self.linked = linked
        self.kt = linked.kineto
        self.categorizer = resolve_categorizer(categorizer)
        self.names = np.asarray(self.kt.names, dtype=object)

    # ---- basics ------------------------------------------------------------------------------
    def name(self, event: int) -> str:
        return self.kt.name(int(event))

    def names_of(self, events: np.ndarray) -> np.ndarray:
        events = np.asarray(events, dtype=np.int64)
        return self.names[self.kt.name_id[events]] if events.size else np.zeros(0, dtype=object)

    def kind_mask(self, kinds: Any) -> np.ndarray:
        return np.isin(self.kt.kind, [int(k) for k in kinds])

    @cached_property
    def gpu(self) -> pd.DataFrame:
        """:func:`~tracetui.analysis.frames.gpu_events_frame` (kernels, memcpys, memsets)."""
        return gpu_events_frame(self.kt, self.categorizer)

    @cached_property
    def gaps(self) -> pd.DataFrame:
        """:func:`~tracetui.analysis.gaps.idle_gaps` with the default thresholds."""
        return idle_gaps(self.kt, self.gpu)

    @cached_property
    def has_gpu_work(self) -> bool:
        return bool(self.kind_mask(GPU_WORK_KINDS).any())

    @cached_property
    def launch_class(self) -> np.ndarray:
        """Per event: its :class:`~tracetui.kineto.kinds.LaunchClass` (runtime/driver calls;
        every other event OTHER)."""
        out = np.zeros(self.kt.n_events, dtype=np.int64)
        calls = np.flatnonzero(self.kind_mask(LAUNCH_KINDS))
        out[calls] = launch_classes(self.kt, calls)
        return out

    @cached_property
    def subtree_gpu_us(self) -> np.ndarray:
        """Per node: summed duration of every GPU event under it (µs)."""
        return gpu_totals(self.kt)[0]

    # ---- synchronisation -----------------------------------------------------------------------
    @cached_property
    def kineto_syncs(self) -> np.ndarray:
        """Runtime/driver calls that block the host until the GPU catches up (device, stream,
        event synchronize; CUDA and HIP names: ``kineto/kinds.py``'s ``BLOCKING_SYNC_RE``)."""
        calls = np.flatnonzero(self.launch_class == int(LaunchClass.SYNC))
        uniq = np.unique(self.kt.name_id[calls])
        blocking = [int(u) for u in uniq.tolist() if BLOCKING_SYNC_RE.search(self.kt.names[int(u)])]
        return calls[np.isin(self.kt.name_id[calls], blocking)]

    @cached_property
    def driver_syncs(self) -> np.ndarray:
        """Synchronize calls of a driver-call trace (empty for a Kineto trace alone)."""
        kt = self.kt
        if not isinstance(kt, DriverTrace) or not kt.n_driver:
            return np.zeros(0, np.int64)
        return sync_calls(kt)

    @cached_property
    def _scalar(self) -> tuple[np.ndarray, np.ndarray]:
        """(outermost ops that read a GPU value on the host and synchronised, per node the
        outermost candidate op at or above it)."""
        kt = self.kt
        n = kt.n_events
        op_names = self.names[kt.name_id] if n else np.zeros(0, dtype=object)
        is_cpu = kt.kind == int(Kind.CPU_OP)
        item = is_cpu & np.isin(op_names, list(ITEM_OPS))
        copy = is_cpu & np.isin(op_names, list(COPY_OPS))
        own = np.full(kt.n_nodes, -1, dtype=np.int64)
        own[:n][item | copy] = np.flatnonzero(item | copy)
        top = fill_down(kt.parent, kt.depth, own, outermost=True)
        memcpy = np.flatnonzero(kt.kind == int(Kind.MEMCPY))
        mnames = self.names_of(memcpy)
        dtoh = memcpy[np.array([copy_direction(s) == "DtoH" for s in mnames], dtype=bool)] if memcpy.size \
            else memcpy
        pageable = dtoh[np.array(["Pageable" in s for s in self.names_of(dtoh)], dtype=bool)] if dtoh.size else dtoh

        def holders(events: np.ndarray) -> np.ndarray:
            flag = np.zeros(kt.n_nodes, dtype=bool)
            t = top[events]
            flag[t[t >= 0]] = True
            return flag

        has_sync, has_dtoh, has_pageable = holders(self.kineto_syncs), holders(dtoh), holders(pageable)
        cand = np.flatnonzero(own[:n] >= 0)
        cand = cand[top[cand] == cand]  # outermost only
        ok = np.where(item[cand], has_sync[cand] | has_dtoh[cand],
                      has_dtoh[cand] & (has_sync[cand] | has_pageable[cand]))
        ops = cand[ok]
        return ops[np.argsort(kt.ts[ops], kind="stable")], top

    @property
    def scalar_sync_ops(self) -> np.ndarray:
        """The outermost ``aten::item`` / ``_local_scalar_dense`` / ``is_nonzero`` ops that
        synchronised (a blocking sync call or a device-to-host copy under them), and the
        outermost ``aten::to`` / ``_to_copy`` / ``copy_`` ops that copied device to host and
        synchronised (a blocking sync call or a copy into pageable memory): ``.item()`` and
        ``.cpu()``; in time order."""
        return self._scalar[0]

    def in_scalar_sync(self, events: np.ndarray) -> np.ndarray:
        """Bool per event: it lies under (or is) a :attr:`scalar_sync_ops` op."""
        events = np.asarray(events, dtype=np.int64)
        ops, top = self._scalar
        t = top[events] if events.size else np.zeros(0, np.int64)
        return np.isin(t, ops)

    def idle_after(self, events: np.ndarray) -> IdleAfter:
        """GPU idle after synchronising events (:func:`~tracetui.analysis.waits.gpu_idle_after`)."""
        return gpu_idle_after(self.kt, events)

    # ---- where an event sits -----------------------------------------------------------------
    @cached_property
    def _where(self) -> np.ndarray:
        kt = self.kt
        n = kt.n_events
        keep = np.zeros(kt.n_nodes, dtype=bool)
        names = self.names[kt.name_id] if n else np.zeros(0, dtype=object)
        py = kt.kind == int(Kind.PYTHON)
        builtin = np.array([str(s).startswith(_BUILTIN) for s in names], dtype=bool) if n else np.zeros(0, bool)
        keep[:n] = (py & ~builtin) | np.isin(kt.kind, [int(Kind.CPU_OP), int(Kind.ANNOTATION)])
        return nearest_kept_ancestor(kt.parent.astype(np.int64), ~keep)

    def above(self, events: np.ndarray) -> np.ndarray:
        """Per event: its nearest ancestor that is a Python frame (not a ``<built-in ...>``
        binding), a cpu_op or an annotation; -1 when none."""
        events = np.asarray(events, dtype=np.int64)
        return self._where[events] if events.size else np.zeros(0, np.int64)

    def above_names(self, events: np.ndarray) -> list[str]:
        a = self.above(events)
        return [self.name(x) if x >= 0 else "(top level)" for x in a.tolist()]

    # ---- shapes ----------------------------------------------------------------------------
    def shape_of(self, op: int) -> str:
        """The first input's shape of ``op``: from the linked ET node when there is one, else
        the Kineto ``Input Dims``; "" when neither records it."""
        link, et = self.linked.link, self.linked.et
        if link is not None and et is not None and 0 <= op < link.kineto_to_et.size:
            pos = int(link.kineto_to_et[op])
            if pos >= 0:
                for arg in et.node(pos).inputs:
                    if arg.shape is not None:
                        return _shape_text(arg.shape)
        from ..kineto import schema  # noqa: PLC0415

        dims = self.kt.args(op).get(schema.INPUT_DIMS)
        if isinstance(dims, list) and dims:
            return _shape_text(dims[0])
        return ""

    # ---- profiler steps ----------------------------------------------------------------------
    def matching(self, pattern: str, kinds: tuple[Kind, ...]) -> np.ndarray:
        """Events of ``kinds`` whose name matches ``pattern`` (regex search), in time order."""
        rx = re.compile(pattern)
        uniq = np.unique(self.kt.name_id[self.kind_mask(kinds)])
        ids = [int(u) for u in uniq.tolist() if rx.search(self.kt.names[int(u)])]
        ev = np.flatnonzero(self.kind_mask(kinds) & np.isin(self.kt.name_id, ids))
        return ev[np.argsort(self.kt.ts[ev], kind="stable")]


def _shape_text(shape: Any) -> str:
    if isinstance(shape, (list, tuple)):
        return "[" + ", ".join(_shape_text(x) for x in shape) + "]"
    return str(shape)

