"""Link ET nodes to Kineto events.

Exact rule: ET attr ``rf_id`` == Kineto cpu_op/user_annotation arg ``Record function id``
(0 means none; PyTorch 2.4+ writes it when the ET observer runs inside the profiler).

Without Record function ids (the Kineto trace carries none: older pairs such as
``param_*``), :mod:`tracetui.link.et_evidence` links by evidence: unique (name, sequence
number) pairs first, then name-and-order alignment inside the Kineto iteration the ET
covers, between those anchors.  Each link keeps what found it (``ETLink.found_by``: rf_id,
sequence number, order); every link not found by rf_id is flagged *heuristic* wherever
it is shown, never presented as exact.

Different runs: a pair is flagged ``suspect_mismatch`` (with a warning) when fewer than half
of the ET rf_ids are found in Kineto or over 10% of the rf_id links name different ops, or
when the evidence link links fewer than half of the ET ops.  In a flagged rf_id pair, the
links whose names differ are dropped (counted in ``LinkStats.dropped``): they would point at
unrelated ops.
``External id`` is never used: equality with ``rf_id`` in some old files is a coincidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import LoadWarning
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from .et_evidence import FOUND_BY_NAMES, FOUND_ORDER, FOUND_RF_ID, FOUND_SEQUENCE, link_by_evidence


@dataclass
class LinkStats:
    """Counts of ET ops (process/thread root nodes excluded) and Kineto ops (cpu_op + user_annotation)."""

    #: "rf_id"; "sequence" (no rf ids: sequence-number anchors, order between them);
    #: "order" (no rf ids, no anchors: order alignment alone); or "none"
    method: str = "none"
    et_ops: int = 0
    kineto_ops: int = 0
    linked: int = 0  #: ET ops linked to a Kineto event (exact + heuristic)
    heuristic: int = 0  #: of ``linked``, those not found by rf_id (by_sequence + by_order)
    by_rf_id: int = 0  #: of ``linked``, found by ``rf_id`` == ``Record function id`` (exact)
    by_sequence: int = 0  #: of ``linked``, found by a unique (name, sequence number) pair
    by_order: int = 0  #: of ``linked``, found by name-and-order alignment
    contradicted: int = 0  #: order links dropped: a sequence number or the parent's link disagreed
    window: str = ""  #: the Kineto iteration the ET was found to cover (no rf ids)
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
    found_by: np.ndarray  #: uint8 per ET node: FOUND_* code of what found its link (0: none)
    stats: LinkStats
    warnings: list[LoadWarning] = field(default_factory=list)

    @property
    def heuristic(self) -> np.ndarray:
        """Bool per ET node: linked, and not by rf_id (sequence number or order)."""
        return self.found_by >= FOUND_SEQUENCE

    def found_by_name(self, pos: int) -> str:
        """``"rf_id"``, ``"sequence number"``, ``"order"`` or ``""`` (not linked)."""
        return FOUND_BY_NAMES[int(self.found_by[pos])]


def _et_op_mask(et) -> np.ndarray:
    """Bool per ET node: an op (not a structural process/thread root)."""
    return ~et.structural_mask()


def link_et_kineto(et, kt: KinetoTrace) -> ETLink:
    """Link an ETTrace to a KinetoTrace (see module docstring for the rules)."""
    n_et = len(et.ids)
    et_to_k = np.full(n_et, -1, dtype=np.int32)
    k_to_et = np.full(kt.n_events, -1, dtype=np.int32)
    found_by = np.zeros(n_et, dtype=np.uint8)
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
        found_by[linked] = FOUND_RF_ID
    elif stats.et_ops and stats.kineto_ops:
        ev = link_by_evidence(et, kt, et_ops, k_ops, et_to_k, k_to_et, found_by)
        stats.method = "sequence" if ev.by_sequence else "order"
        stats.contradicted, stats.window = ev.contradicted, ev.window
        stats.suspect_mismatch = bool(int((et_to_k >= 0).sum()) < 0.5 * stats.et_ops)
    stats.linked = int((et_to_k >= 0).sum())
    stats.by_rf_id = int((found_by == FOUND_RF_ID).sum())
    stats.by_sequence = int((found_by == FOUND_SEQUENCE).sum())
    stats.by_order = int((found_by == FOUND_ORDER).sum())
    stats.heuristic = stats.by_sequence + stats.by_order
    stats.et_only = stats.et_ops - stats.linked
    stats.kineto_only = stats.kineto_ops - int((k_to_et[k_ops] >= 0).sum())
    if stats.method in ("sequence", "order"):
        warnings.append(LoadWarning("heuristic_link", _heuristic_message(stats, ev), stats.heuristic))
    if stats.suspect_mismatch and stats.method == "rf_id":
        found = stats.linked + stats.dropped
        msg = (f"the ET and Kineto traces look like different runs: {found:,} of {stats.et_with_rf_id:,} ET "
               f"rf_ids found in Kineto, {stats.name_mismatches:,} linked names differ")
        if stats.dropped:
            msg += f" (those {stats.dropped:,} are not shown as links)"
        warnings.append(LoadWarning("mismatched_pair", msg, stats.dropped))
    elif stats.suspect_mismatch:
        warnings.append(LoadWarning(
            "mismatched_pair", f"the ET and Kineto traces look like different runs: "
            f"{'sequence numbers and ' if stats.by_sequence else ''}name-and-order alignment linked only "
            f"{stats.linked:,} of {stats.et_ops:,} ET ops", stats.et_only))
    elif stats.method == "none" and stats.et_ops:
        warnings.append(LoadWarning("no_link", "no ET op could be linked: the Kineto trace has no cpu_op events",
                                    stats.et_ops))
    if stats.et_only and stats.method != "none":
        warnings.append(LoadWarning("et_only", f"{stats.et_only:,} ET ops have no Kineto event (ET records every "
                                    "thread; Kineto only the profiled ones)", stats.et_only))
    return ETLink(et_to_k, k_to_et, found_by, stats, warnings)


def _heuristic_message(stats: LinkStats, ev) -> str:
    """The one line saying how a link without rf ids was found (and what it may get wrong)."""
    msg = (f"the Kineto trace has no Record function ids: {stats.by_sequence:,} ET ops were linked by sequence "
           f"number, {stats.by_order:,} by name-and-order alignment")
    if stats.window:
        msg += f" inside {stats.window}"
    if stats.contradicted:
        msg += f"; {stats.contradicted:,} order links contradicted by a sequence number or a parent were dropped"
    if (not stats.by_sequence and ev.et_seq is not None and ev.kineto_seq is not None
            and (ev.et_seq[1] < ev.kineto_seq[0] or ev.et_seq[0] > ev.kineto_seq[1])):
        msg += (f"; the ET's sequence numbers ({ev.et_seq[0]:,}-{ev.et_seq[1]:,}) are not in the Kineto trace "
                f"({ev.kineto_seq[0]:,}-{ev.kineto_seq[1]:,}): the two files recorded different iterations, and "
                "links point at the same op of the Kineto trace's iteration")
    return msg + " (heuristic, may be wrong)"


def _names_differ(et, kt: KinetoTrace, et_pos: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Bool per pair: the ET node's name differs from the Kineto event's name."""
    if not et_pos.size:
        return np.zeros(0, dtype=bool)
    et_names = np.array(et.names, dtype=object)[et.name_ids[et_pos]]
    k_names = np.array(kt.names, dtype=object)[kt.name_id[events]]
    return et_names != k_names

