"""Link ET nodes to Kineto events.

Exact rule: ET attr ``rf_id`` == Kineto cpu_op/user_annotation arg ``Record function id``
(0 means none; PyTorch 2.4+ writes it when the ET observer runs inside the profiler).

Fallback, only when the Kineto trace carries no Record function ids at all (older
pairs such as ``param_*``): align ET op names (id order, per ET thread) with Kineto op
names (start order, per thread) and link equal names along the alignment.  Such links
are flagged *heuristic* everywhere they are shown; they are never presented as exact.

Different runs: a pair is flagged ``suspect_mismatch`` (with a warning) when fewer than half
of the ET rf_ids are found in Kineto or over 10% of the rf_id links name different ops, or
when order alignment links fewer than half of the ET ops.  In a flagged rf_id pair, the
links whose names differ are dropped (counted in ``LinkStats.dropped``): they would point at
unrelated ops.
``External id`` is never used: equality with ``rf_id`` in some old files is a coincidence.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from ..errors import LoadWarning
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace


@dataclass
class LinkStats:
    """Counts of ET ops (process/thread root nodes excluded) and Kineto ops (cpu_op + user_annotation)."""

    method: str = "none"  #: "rf_id", "order" (heuristic) or "none"
    et_ops: int = 0
    kineto_ops: int = 0
    linked: int = 0  #: ET ops linked to a Kineto event (exact + heuristic)
    heuristic: int = 0  #: of ``linked``, those found by name-and-order alignment
    et_only: int = 0  #: ET ops with no Kineto event
    kineto_only: int = 0  #: Kineto ops with no ET node
    et_with_rf_id: int = 0  #: ET ops whose rf_id != 0
    name_mismatches: int = 0  #: ET rf_ids found in Kineto on an op of another name
    dropped: int = 0  #: of those, links not kept because the pair looks like different runs
    suspect_mismatch: bool = False  #: the two files look like different runs

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class ETLink:
    """``et_to_kineto[et_pos]`` -> Kineto event (-1 none); ``kineto_to_et[event]`` -> ET node position."""

    et_to_kineto: np.ndarray
    kineto_to_et: np.ndarray
    heuristic: np.ndarray  #: bool per ET node: the link came from order alignment
    stats: LinkStats
    warnings: list[LoadWarning] = field(default_factory=list)


def _et_op_mask(et) -> np.ndarray:
    """Bool per ET node: an op (not a structural process/thread root)."""
    return ~et.structural_mask()


def link_et_kineto(et, kt: KinetoTrace) -> ETLink:
    """Link an ETTrace to a KinetoTrace (see module docstring for the rules)."""
    n_et = len(et.ids)
    et_to_k = np.full(n_et, -1, dtype=np.int32)
    k_to_et = np.full(kt.n_events, -1, dtype=np.int32)
    heur = np.zeros(n_et, dtype=bool)
    stats = LinkStats()
    warnings: list[LoadWarning] = []
    et_ops = _et_op_mask(et)
    k_ops = np.flatnonzero(np.isin(kt.kind, [int(Kind.CPU_OP), int(Kind.ANNOTATION)]))
    stats.et_ops = int(et_ops.sum())
    stats.kineto_ops = int(k_ops.size)
    stats.et_with_rf_id = int((et_ops & (et.rf_id != 0)).sum())
    k_rf = kt.rf_id[k_ops]
    if (k_rf != 0).any():
        stats.method = "rf_id"
        sel = k_ops[k_rf != 0]
        rf = kt.rf_id[sel]
        o = np.argsort(rf, kind="stable")
        rf_sorted, ev_sorted = rf[o], sel[o]
        cand = np.flatnonzero(et_ops & (et.rf_id != 0))
        pos = np.searchsorted(rf_sorted, et.rf_id[cand])
        pos_c = np.minimum(pos, max(rf_sorted.size - 1, 0))
        hit = rf_sorted[pos_c] == et.rf_id[cand]
        linked, events = cand[hit], ev_sorted[pos_c[hit]]
        differ = _names_differ(et, kt, linked, events)
        stats.name_mismatches = int(differ.sum())
        found = int(hit.sum())
        if stats.et_with_rf_id and (found < 0.5 * stats.et_with_rf_id
                                    or stats.name_mismatches > 0.1 * max(found, 1)):
            stats.suspect_mismatch = True
            stats.dropped = stats.name_mismatches
            linked, events = linked[~differ], events[~differ]
        et_to_k[linked] = events
        k_to_et[events] = linked
    elif stats.et_ops and stats.kineto_ops:
        stats.method = "order"
        _align_by_order(et, kt, et_ops, k_ops, et_to_k, k_to_et, heur)
        stats.suspect_mismatch = bool(int((et_to_k >= 0).sum()) < 0.5 * stats.et_ops)
    stats.linked = int((et_to_k >= 0).sum())
    stats.heuristic = int(heur.sum())
    stats.et_only = stats.et_ops - stats.linked
    stats.kineto_only = stats.kineto_ops - int((k_to_et[k_ops] >= 0).sum())
    if stats.method == "order":
        warnings.append(LoadWarning(
            "heuristic_link", f"the Kineto trace has no Record function ids: {stats.heuristic:,} ET ops were "
            "linked by name-and-order alignment (heuristic, may be wrong)", stats.heuristic))
    if stats.suspect_mismatch and stats.method == "rf_id":
        found = stats.linked + stats.dropped
        msg = (f"the ET and Kineto traces look like different runs: {found:,} of {stats.et_with_rf_id:,} ET "
               f"rf_ids found in Kineto, {stats.name_mismatches:,} linked names differ")
        if stats.dropped:
            msg += f" (those {stats.dropped:,} are not shown as links)"
        warnings.append(LoadWarning("mismatched_pair", msg, stats.dropped))
    elif stats.suspect_mismatch:
        warnings.append(LoadWarning(
            "mismatched_pair", f"the ET and Kineto traces look like different runs: name-and-order alignment "
            f"linked only {stats.linked:,} of {stats.et_ops:,} ET ops", stats.et_only))
    elif stats.method == "none" and stats.et_ops:
        warnings.append(LoadWarning("no_link", "no ET op could be linked: the Kineto trace has no cpu_op events",
                                    stats.et_ops))
    if stats.et_only and stats.method != "none":
        warnings.append(LoadWarning("et_only", f"{stats.et_only:,} ET ops have no Kineto event (ET records every "
                                    "thread; Kineto only the profiled ones)", stats.et_only))
    return ETLink(et_to_k, k_to_et, heur, stats, warnings)


def _names_differ(et, kt: KinetoTrace, et_pos: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Bool per pair: the ET node's name differs from the Kineto event's name."""
    if not et_pos.size:
        return np.zeros(0, dtype=bool)
    et_names = np.array(et.names, dtype=object)[et.name_ids[et_pos]]
    k_names = np.array(kt.names, dtype=object)[kt.name_id[events]]
    return et_names != k_names


def _align_by_order(et, kt: KinetoTrace, et_ops: np.ndarray, k_ops: np.ndarray, et_to_k: np.ndarray,
                    k_to_et: np.ndarray, heur: np.ndarray) -> None:
    """Per ET thread, align its op names with the best-matching Kineto thread's op names."""
    et_pos = np.flatnonzero(et_ops)
    by_tid: dict[int, np.ndarray] = {}
    tids = et.tid[et_pos]
    for t in np.unique(tids).tolist():
        by_tid[t] = et_pos[tids == t]  # ids ascending = start order
    k_lanes = kt.lane_of[k_ops]
    lane_seqs: dict[int, np.ndarray] = {}
    for ln in np.unique(k_lanes).tolist():
        evs = k_ops[k_lanes == ln]
        o = np.lexsort((evs, -kt.dur[evs], kt.ts[evs]))
        lane_seqs[ln] = evs[o]
    used_lanes: set[int] = set()
    for _tid, nodes in sorted(by_tid.items(), key=lambda kv: -kv[1].size):
        a = [et.names[i] for i in et.name_ids[nodes].tolist()]
        best = None
        for ln, evs in lane_seqs.items():
            if ln in used_lanes:
                continue
            b = [kt.names[i] for i in kt.name_id[evs].tolist()]
            sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
            blocks = sm.get_matching_blocks()
            score = sum(bl.size for bl in blocks)
            if best is None or score > best[0]:
                best = (score, ln, blocks, evs)
        if best is None or best[0] == 0:
            continue
        _, ln, blocks, evs = best
        used_lanes.add(ln)
        for bl in blocks:
            if bl.size == 0:
                continue
            e_sel = nodes[bl.a:bl.a + bl.size]
            k_sel = evs[bl.b:bl.b + bl.size]
            et_to_k[e_sel] = k_sel
            k_to_et[k_sel] = e_sel
            heur[e_sel] = True
