"""Subtree selectors: text that names one node of the Kineto op tree.

    ext:<External id>     the cpu_op (else user_annotation) with that External id; the
                          earliest when several threads carry it
    et:<ET node id>       the Kineto event linked to that ET node (needs the ET and the link)
    name:<op name>[#<n>]  the n-th host event with exactly that name, in start-time order,
                          counting from 1 (default 1).  A name that itself ends in
                          ``#<digits>`` (``ProfilerStep#6``) is matched whole first;
                          write ``name:ProfilerStep#6#2`` for its second occurrence
    node:<id>             a node id of the model (events, then one root per lane)

No selector (None or "") means the whole trace.  Bad selectors raise
:class:`SelectorError` (a :class:`~tracetui.errors.TraceError`: one line, the CLI exits 2).
"""

from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..kineto.kinds import GPU_KINDS, Kind
from ..kineto.trace import KinetoTrace
from ..session import LinkedTrace

SELECTOR_HELP = "ext:<External id>, et:<ET node id>, name:<op name>[#<n>] or node:<node id>"


class SelectorError(TraceError):
    """A --select value that is malformed or matches nothing."""


def _int(text: str, selector: str, path: str | None) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise SelectorError(path, f"selector {selector!r}: {text.strip()!r} is not an integer") from None


def _host_events_named(kt: KinetoTrace, name: str) -> np.ndarray:
    try:
        nid = kt.names.index(name)
    except ValueError:
        return np.zeros(0, dtype=np.int64)
    ev = np.flatnonzero(kt.name_id == nid)
    host = ~np.isin(kt.kind[ev], [int(k) for k in GPU_KINDS] + [int(Kind.INSTANT)]) & (kt.parent[ev] >= 0)
    gpu = ev[~host]
    ev = ev[host] if host.any() else gpu
    return ev[np.lexsort((ev, kt.ts[ev]))]


def _by_name(kt: KinetoTrace, text: str, selector: str) -> int:
    base, nth = text, 1
    hits = _host_events_named(kt, text)
    if not hits.size and "#" in text:
        head, _, tail = text.rpartition("#")
        if tail.strip().isdigit():
            base, nth = head, int(tail)
            hits = _host_events_named(kt, base)
    if not hits.size:
        raise SelectorError(kt.path, f"selector {selector!r}: no event named {base!r}")
    if nth < 1 or nth > hits.size:
        raise SelectorError(kt.path, f"selector {selector!r}: {base!r} occurs {hits.size} time(s); "
                                     f"#{nth} is out of range (count from 1)")
    return int(hits[nth - 1])


def resolve_selector(linked: LinkedTrace, selector: str | None) -> int | None:
    """The Kineto node id a selector names, or None for no selector (the whole trace)."""
    if selector is None or not selector.strip():
        return None
    kt = linked.kineto
    if kt is None:
        path = linked.et.path if linked.et is not None else None
        raise SelectorError(path, "selecting a subtree needs a Kineto trace")
    sel = selector.strip()
    kind, sep, value = sel.partition(":")
    kind = kind.strip().lower()
    if not sep or not value.strip():
        raise SelectorError(kt.path, f"selector {selector!r}: expected {SELECTOR_HELP}")
    if kind == "node":
        node = _int(value, selector, kt.path)
        if not 0 <= node < kt.n_nodes:
            raise SelectorError(kt.path, f"selector {selector!r}: node ids run from 0 to {kt.n_nodes - 1}")
        return node
    if kind == "ext":
        ext = _int(value, selector, kt.path)
        hits = kt.find_by_external_id(ext)
        if not hits:
            raise SelectorError(kt.path, f"selector {selector!r}: no cpu_op or user_annotation has External id {ext}")
        ops = [h for h in hits if kt.kind[h] == int(Kind.CPU_OP)] or hits
        return int(min(ops, key=lambda h: (kt.ts[h], h)))
    if kind == "name":
        return _by_name(kt, value, selector)
    if kind == "et":
        node_id = _int(value, selector, kt.path)
        if linked.et is None or linked.link is None:
            raise SelectorError(kt.path, f"selector {selector!r}: no Execution Trace is loaded (give it with --et)")
        try:
            pos = linked.et.pos_of_id(node_id)
        except KeyError:
            raise SelectorError(linked.et.path, f"selector {selector!r}: no ET node has id {node_id}") from None
        ev = int(linked.link.et_to_kineto[pos])
        if ev < 0:
            raise SelectorError(linked.et.path, f"selector {selector!r}: ET node {node_id} "
                                                f"({linked.et.name(pos)}) has no Kineto event")
        return ev
    raise SelectorError(kt.path, f"selector {selector!r}: unknown kind {kind!r}; expected {SELECTOR_HELP}")
