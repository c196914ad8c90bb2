"""ET <-> Kineto link without Record function ids: by evidence first, order only between it.

Older pairs (PyTorch before 2.4, e.g. the 2023 ``param_*`` pairs) carry no ``Record
function id``.  The ET records one iteration; the Kineto trace often many.  The link:

1. **Sequence-number anchors.**  An ET op's ``seq_id`` is the autograd sequence number
   that Kineto writes as the cpu_op arg ``Sequence number``.  A (name, number) key held by
   exactly one ET op and exactly one Kineto op pairs them: an anchor (found by "sequence
   number").  Numbers are per process and grow every iteration, so anchors also say which
   iteration the ET recorded.
2. **Threads.**  Each ET thread (``tid``) maps to the Kineto thread holding most of its
   anchors, else to the unused thread whose op names overlap its names most.
3. **The window.**  The Kineto iteration the ET covers, on the thread of the ET's main
   thread (the one with most anchors, else most ops), among its *iteration-level* ops
   (top-level ops, ``ProfilerStep#N`` annotations opened to their children): with anchors,
   the run of as many iteration-level ops as the ET has, placed by the anchors (median
   offset); without anchors, the ``ProfilerStep#N`` whose op names overlap the ET's most,
   else the run that best repeats the ET's iteration-level names.  Its time span bounds
   every thread's ops.
4. **Order.**  Per thread pair, ET ops (id order) and the window's Kineto ops (start
   order) are aligned by name with :func:`~tracetui.link.align.align_names` (O(n log n)),
   the anchors held fixed (found by "order").
5. **Contradictions.**  An order link is dropped when the two ops carry different
   sequence numbers (only when the ET's numbers occur in the Kineto trace at all), or when
   the ET op's parent is linked to a Kineto op that does not enclose this one.

When the ET's sequence numbers do not occur in the Kineto trace, the two files recorded
different iterations (``param_dlrm_rank0_cuda_pair``: ET 440-479, Kineto 480-519): order
links then point at the same op of the Kineto trace's iteration, and the warning says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import units
from ..kineto.trace import KinetoTrace
from ..tree.propagate import nearest_kept_ancestor
from .align import align_names, longest_increasing

#: what found a link, per ET node (``ETLink.found_by``)
FOUND_NONE, FOUND_RF_ID, FOUND_SEQUENCE, FOUND_ORDER = 0, 1, 2, 3
FOUND_BY_NAMES = ("", "rf_id", "sequence number", "order")

_STEP_PREFIX = "ProfilerStep#"
_STEP = re.compile(r"^ProfilerStep#\d+$")
#: candidate iteration starts examined when no anchor places the window
_MAX_CANDIDATES = 20_000


@dataclass
class EvidenceLink:
    """What :func:`link_by_evidence` found (arrays are filled in place by the caller's)."""

    by_sequence: int = 0
    by_order: int = 0
    contradicted: int = 0
    window: str = ""  #: which Kineto iteration the ET covers, in words
    et_seq: tuple[int, int] | None = None  #: min, max ET seq_id (ops with one)
    kineto_seq: tuple[int, int] | None = None  #: min, max Kineto Sequence number


class _Side:
    """One trace's ops as the link sees them: names in the ET's name space, op parents."""

    def __init__(self, ops: np.ndarray, names: np.ndarray, op_parent: np.ndarray, group: np.ndarray) -> None:
        self.ops = ops  #: node/event indices, in start order within each group
        self.names = names  #: per op, name id in the ET's names (-1: not an ET name)
        self.op_parent = op_parent  #: per op, index into ``ops`` of the enclosing op, -1
        self.group = group  #: per op, its thread (ET tid / Kineto lane)


def link_by_evidence(et, kt: KinetoTrace, et_ops: np.ndarray, k_ops: np.ndarray, et_to_k: np.ndarray,
                     k_to_et: np.ndarray, found_by: np.ndarray) -> EvidenceLink:
    """Link ``et_ops`` (bool mask over ET positions) to ``k_ops`` (event indices); fills
    ``et_to_k``, ``k_to_et`` and ``found_by`` in place."""
    res = EvidenceLink()
    e = _et_side(et, et_ops)
    k = _kineto_side(et, kt, k_ops)
    if not e.ops.size or not k.ops.size:
        return res
    e_seq = et.seq_id[e.ops]
    k_seq = kt.seq[k.ops]
    if (e_seq >= 0).any():
        res.et_seq = (int(e_seq[e_seq >= 0].min()), int(e_seq[e_seq >= 0].max()))
    if (k_seq >= 0).any():
        res.kineto_seq = (int(k_seq[k_seq >= 0].min()), int(k_seq[k_seq >= 0].max()))
    ae, ak = _anchors(e.names, e_seq, k.names, k_seq)  # indices into e.ops / k.ops
    e_link = np.full(e.ops.size, -1, dtype=np.int64)  # index into k.ops
    how = np.zeros(e.ops.size, dtype=np.uint8)
    e_link[ae] = ak
    how[ae] = FOUND_SEQUENCE
    k_taken = np.zeros(k.ops.size, dtype=bool)
    k_taken[ak] = True

    lane_of_thread = _map_threads(e, k, ae, ak)
    main = _main_thread(e, ae)
    t0, t1, res.window = _window(kt, et.names, e, k, main, lane_of_thread.get(main), ae, ak)
    k_ts = kt.ts[k.ops]
    in_window = (k_ts >= t0) & (k_ts < t1)
    _map_remaining_threads(e, k, in_window, lane_of_thread)

    for thread, lane in lane_of_thread.items():
        a_idx = np.flatnonzero((e.group == thread) & ((how == 0) | (how == FOUND_SEQUENCE)))
        b_idx = np.flatnonzero((k.group == lane) & in_window)
        # anchors on this pair stay fixed; ops anchored elsewhere take no part
        a_fixed = a_idx[(how[a_idx] == FOUND_SEQUENCE) & np.isin(e_link[a_idx], b_idx)]
        # an anchor out of order (against the others) cannot separate ranges: it stays a
        # link but takes no part here
        a_fixed = a_fixed[longest_increasing(np.searchsorted(b_idx, e_link[a_fixed]))]
        a_idx = a_idx[(how[a_idx] == 0) | np.isin(a_idx, a_fixed)]
        b_idx = b_idx[~k_taken[b_idx] | np.isin(b_idx, e_link[a_fixed])]
        fa = np.searchsorted(a_idx, a_fixed)
        fb = np.searchsorted(b_idx, e_link[a_fixed])
        ia, ib = align_names(e.names[a_idx], k.names[b_idx], fixed=(fa, fb))
        ea, kb = a_idx[ia], b_idx[ib]
        new = how[ea] == 0
        e_link[ea[new]] = kb[new]
        how[ea[new]] = FOUND_ORDER
        k_taken[kb[new]] = True

    comparable = ae.size > 0
    res.contradicted = _drop_contradicted(kt, e, k, e_seq, k_seq, e_link, how, comparable)
    linked = np.flatnonzero(e_link >= 0)
    et_to_k[e.ops[linked]] = k.ops[e_link[linked]]
    k_to_et[k.ops[e_link[linked]]] = e.ops[linked]
    found_by[e.ops[linked]] = how[linked]
    res.by_sequence = int((how == FOUND_SEQUENCE).sum())
    res.by_order = int((how == FOUND_ORDER).sum())
    return res


# --------------------------------------------------------------------------- the two sides
def _et_side(et, et_ops: np.ndarray) -> _Side:
    ops = np.flatnonzero(et_ops)  # positions = id order = start order
    skip = ~et_ops
    par = nearest_kept_ancestor(et.parent.astype(np.int64), skip)[ops]
    op_parent = np.where(par >= 0, np.searchsorted(ops, np.maximum(par, 0)), -1)
    o = np.argsort(et.tid[ops], kind="stable")  # group by thread, id order within
    ops = ops[o]
    inv = np.empty_like(o)
    inv[o] = np.arange(o.size)
    op_parent = np.where(op_parent[o] >= 0, inv[np.maximum(op_parent[o], 0)], -1)
    return _Side(ops, et.name_ids[ops].astype(np.int64), op_parent, et.tid[ops].astype(np.int64))


def _kineto_side(et, kt: KinetoTrace, k_ops: np.ndarray) -> _Side:
    index = {nm: i for i, nm in enumerate(et.names)}
    to_et = np.array([index.get(nm, -1) for nm in kt.names] or [-1], dtype=np.int64)
    lanes = kt.lane_of[k_ops].astype(np.int64)
    o = np.lexsort((k_ops, -kt.dur[k_ops], kt.ts[k_ops], lanes))  # per lane, start order (outer first)
    ops = k_ops[o]
    is_op = np.zeros(kt.n_nodes, dtype=bool)
    is_op[ops] = True
    par = nearest_kept_ancestor(kt.parent.astype(np.int64), ~is_op)[ops]
    where = np.full(kt.n_nodes, -1, dtype=np.int64)
    where[ops] = np.arange(ops.size)
    op_parent = np.where(par >= 0, where[np.maximum(par, 0)], -1)
    return _Side(ops, to_et[kt.name_id[ops]], op_parent, lanes[o])


def _anchors(e_names, e_seq, k_names, k_seq) -> tuple[np.ndarray, np.ndarray]:
    """(ET index, Kineto index) of every (name, sequence number) key held by exactly one op
    on each side."""
    e_has = np.flatnonzero(e_seq >= 0)
    k_has = np.flatnonzero((k_seq >= 0) & (k_names >= 0))
    if not e_has.size or not k_has.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    names = np.concatenate([e_names[e_has], k_names[k_has]])
    seqs = np.concatenate([e_seq[e_has], k_seq[k_has]])
    side = np.concatenate([np.zeros(e_has.size, np.int8), np.ones(k_has.size, np.int8)])
    o = np.lexsort((side, seqs, names))
    ns, ss, sd = names[o], seqs[o], side[o]
    start = np.r_[True, (ns[1:] != ns[:-1]) | (ss[1:] != ss[:-1])]
    run = np.cumsum(start) - 1
    n_k = np.bincount(run, weights=sd)
    n_all = np.bincount(run)
    ok = (n_k == 1) & (n_all == 2)
    first = np.flatnonzero(start)[ok]  # ET member first (side 0 sorts first)
    return e_has[o[first]], k_has[o[first + 1] - e_has.size]


# --------------------------------------------------------------------------- threads
def _map_threads(e: _Side, k: _Side, ae: np.ndarray, ak: np.ndarray) -> dict[int, int]:
    """ET thread -> Kineto lane holding most of its anchors (each lane used once)."""
    out: dict[int, int] = {}
    if not ae.size:
        return out
    # (thread, lane) pairs as one key that sorts like the pair (np.unique(axis=0) is slow)
    threads, tc = np.unique(e.group[ae], return_inverse=True)
    lanes, lc = np.unique(k.group[ak], return_inverse=True)
    keys, counts = np.unique(tc.astype(np.int64) * lanes.size + lc, return_counts=True)
    used: set[int] = set()
    for i in np.argsort(-counts, kind="stable").tolist():
        t, ln = int(threads[keys[i] // lanes.size]), int(lanes[keys[i] % lanes.size])
        if t not in out and ln not in used:
            out[t] = ln
            used.add(ln)
    return out


def _main_thread(e: _Side, ae: np.ndarray) -> int:
    """The ET thread with most anchors, else with most ops."""
    if ae.size:
        t, c = np.unique(e.group[ae], return_counts=True)
        return int(t[np.argmax(c)])
    t, c = np.unique(e.group, return_counts=True)
    return int(t[np.argmax(c)])


def _map_remaining_threads(e: _Side, k: _Side, in_window: np.ndarray, out: dict[int, int]) -> None:
    """ET threads without anchors -> the unused lane whose window ops share most names
    (ties: the lowest lane number)."""
    threads, sizes = np.unique(e.group, return_counts=True)
    lanes, lane_idx = np.unique(k.group, return_inverse=True)
    used = np.isin(lanes, list(out.values()))
    n_names = int(max(e.names.max(initial=-1), k.names.max(initial=-1))) + 2
    # per lane, how often each name occurs among its window ops (column 0: not an ET name)
    got = np.bincount(lane_idx[in_window] * n_names + k.names[in_window] + 1,
                      minlength=lanes.size * n_names).reshape(lanes.size, n_names)[:, 1:]
    for t in threads[np.argsort(-sizes, kind="stable")].tolist():
        if t in out:
            continue
        have = np.bincount(e.names[e.group == t] + 1, minlength=n_names)[1:]
        score = np.minimum(have, got).sum(axis=1)
        score[used] = 0
        if score.size and score.max() > 0:
            i = int(np.argmax(score))
            out[t] = int(lanes[i])
            used[i] = True


# --------------------------------------------------------------------------- the window
def _iteration_level(side: _Side, sel: np.ndarray, is_step: np.ndarray) -> np.ndarray:
    """Indices (in ``sel``'s order) of the top-level ops of ``sel``, ``ProfilerStep#N``
    ops replaced by their children."""
    top = sel[side.op_parent[sel] < 0]
    par = side.op_parent[sel]
    under_step = sel[(par >= 0) & is_step[np.maximum(par, 0)] & (side.op_parent[np.maximum(par, 0)] < 0)]
    return np.sort(np.concatenate([top[~is_step[top]], under_step]))


def _window(kt: KinetoTrace, et_names: list[str], e: _Side, k: _Side, main: int, lane: int | None, ae: np.ndarray,
            ak: np.ndarray) -> tuple[float, float, str]:
    """Time span [t0, t1) of the Kineto iteration the ET covers, and its description."""
    whole = (-np.inf, np.inf, "the whole Kineto trace")
    e_step = _is_step(et_names, e.names)
    k_step = _is_step(kt.names, kt.name_id[k.ops])
    if lane is None:
        lane = _best_lane(e, k, main)
        if lane is None:
            return whole
    E = _iteration_level(e, np.flatnonzero(e.group == main), e_step)
    K = _iteration_level(k, np.flatnonzero(k.group == lane), k_step)
    if not E.size or not K.size:
        return whole
    starts, ends = kt.ts[k.ops[K]], kt.ts[k.ops[K]] + kt.dur[k.ops[K]]
    thread = kt.lanes[lane].label if 0 <= lane < len(kt.lanes) else f"lane {lane}"
    steps = np.flatnonzero(k_step & (k.group == lane) & (k.op_parent < 0))
    if steps.size:
        return _step_window(kt, e, k, steps, ae, ak)
    m = E.size
    cands = _candidates(e.names[E], k.names[K])
    on_lane = ak[k.group[ak] == lane]
    if on_lane.size:
        top_k = _top_index(k, on_lane, K)
        top_e = _top_index(e, ae[k.group[ak] == lane], E)
        ok = (top_k >= 0) & (top_e >= 0)
        if not ok.any():
            return whole
        s = int(np.median(top_k[ok] - top_e[ok]))
    elif cands.size:
        s = int(cands[np.argmax(_scores(e.names[E], k.names[K], cands))])
    else:
        return whole
    s0, s1 = max(s, 0), min(s + m, K.size)
    if s0 >= s1:
        return whole
    t0 = float(starts[s0])
    t1 = float(starts[s1]) if s1 < K.size else float(ends[s0:s1].max()) + 1.0
    reps = _repeats(e.names[E], k.names[K], cands, m)
    where = f"on {thread}"
    if reps.size > 1 and np.any(np.abs(reps - s) < max(1, m // 2)):
        nth = int(np.argmin(np.abs(reps - s))) + 1
        return t0, t1, f"iteration {nth:,} of {reps.size:,} {where}"
    if s1 - s0 == 1:
        return t0, t1, f"{kt.name(int(k.ops[K[s0]]))} at {t0 / 1e3:,.3f} {units.MS} {where}"
    return t0, t1, f"{s1 - s0:,} top-level ops from {t0 / 1e3:,.3f} {units.MS} {where}"


def _is_step(names: list[str], name_ids: np.ndarray) -> np.ndarray:
    """Bool per op (its id into ``names``): a ``ProfilerStep#N`` op."""
    step = np.array([nm.startswith(_STEP_PREFIX) and bool(_STEP.match(nm)) for nm in names] + [False],
                    dtype=bool)  # id -1: not a step
    return step[name_ids]


def _step_window(kt, e: _Side, k: _Side, steps: np.ndarray, ae, ak) -> tuple[float, float, str]:
    """The ``ProfilerStep#N`` holding most anchors, else whose op names overlap the ET's most."""
    t0s = kt.ts[k.ops[steps]]
    t1s = t0s + kt.dur[k.ops[steps]]
    if ae.size:
        at = kt.ts[k.ops[ak]]
        score = np.array([int(((at >= a) & (at <= b)).sum()) for a, b in zip(t0s, t1s)])
    else:
        n_names = int(max(e.names.max(initial=-1), k.names.max(initial=-1))) + 2
        have = np.bincount(e.names + 1, minlength=n_names)[1:]
        k_ts = kt.ts[k.ops]
        score = np.array([int(np.minimum(have, np.bincount(k.names[(k_ts >= a) & (k_ts <= b)] + 1,
                                                            minlength=n_names)[1:]).sum())
                          for a, b in zip(t0s, t1s)])
    i = int(np.argmax(score))
    name = kt.name(int(k.ops[steps[i]]))
    return float(t0s[i]), float(t1s[i]) + 1e-6, f"{name} ({i + 1:,} of {steps.size:,} steps)"


def _best_lane(e: _Side, k: _Side, main: int) -> int | None:
    probe: dict[int, int] = {}
    _map_remaining_threads(_Side(e.ops[e.group == main], e.names[e.group == main], e.op_parent[e.group == main],
                                 e.group[e.group == main]), k, np.ones(k.ops.size, dtype=bool), probe)
    return probe.get(main)


def _top_index(side: _Side, idx: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Per op, the position in ``top`` of its iteration-level ancestor (or itself), -1."""
    where = np.full(side.ops.size, -1, dtype=np.int64)
    where[top] = np.arange(top.size)
    cur = idx.copy()
    out = np.full(idx.size, -1, dtype=np.int64)
    live = np.arange(idx.size)
    while live.size:
        hit = where[cur[live]]
        out[live[hit >= 0]] = hit[hit >= 0]
        live = live[hit < 0]
        nxt = side.op_parent[cur[live]]
        cur[live] = nxt
        live = live[nxt >= 0]
    return out


def _candidates(E: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Starts in ``K`` where the first (up to 3) names of ``E`` occur."""
    q = min(3, E.size)
    if K.size < q:
        return np.zeros(0, dtype=np.int64)
    ok = np.ones(K.size - q + 1, dtype=bool)
    for j in range(q):
        ok &= K[j:K.size - q + 1 + j] == E[j]
    c = np.flatnonzero(ok)
    if c.size > _MAX_CANDIDATES:
        c = c[np.linspace(0, c.size - 1, _MAX_CANDIDATES).astype(np.int64)]
    return c


def _scores(E: np.ndarray, K: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """Per candidate start, how many of ``E``'s names are repeated in place."""
    out = np.zeros(cands.size, dtype=np.int64)
    for i, s in enumerate(cands.tolist()):
        seg = K[s:s + E.size]
        out[i] = int((seg == E[:seg.size]).sum())
    return out


def _repeats(E: np.ndarray, K: np.ndarray, cands: np.ndarray, m: int) -> np.ndarray:
    """Starts of the iterations of ``K``: candidates repeating >= 90% of the best score,
    taken left to right at least ``m`` apart (or half of it)."""
    if not cands.size:
        return cands
    sc = _scores(E, K, cands)
    good = cands[sc >= 0.9 * sc.max()]
    out: list[int] = []
    gap = max(1, m // 2)
    for s in good.tolist():
        if not out or s - out[-1] >= gap:
            out.append(s)
    return np.asarray(out, dtype=np.int64)


# --------------------------------------------------------------------------- contradictions
def _drop_contradicted(kt: KinetoTrace, e: _Side, k: _Side, e_seq, k_seq, e_link: np.ndarray, how: np.ndarray,
                       comparable: bool) -> int:
    """Drop order links that a sequence number or the parent's link contradicts; returns
    how many were dropped."""
    dropped = 0
    order = np.flatnonzero(how == FOUND_ORDER)
    if comparable and order.size:
        kk = e_link[order]
        bad = order[(e_seq[order] >= 0) & (k_seq[kk] >= 0) & (e_seq[order] != k_seq[kk])]
        e_link[bad] = -1
        how[bad] = FOUND_NONE
        dropped += bad.size
    # parents first (ET index order within a thread is start order: a parent precedes its
    # children), so a child is checked against its parent's final link
    depth = _depth(e.op_parent)
    for d in range(1, int(depth.max(initial=0)) + 1):
        cand = np.flatnonzero((depth == d) & (how == FOUND_ORDER))
        if not cand.size:
            continue
        pl = e_link[e.op_parent[cand]]
        has = pl >= 0
        cand, pl = cand[has], pl[has]
        ok = _encloses(kt, k, pl, e_link[cand])
        bad = cand[~ok]
        e_link[bad] = -1
        how[bad] = FOUND_NONE
        dropped += bad.size
    return dropped


def _depth(op_parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(op_parent.size, dtype=np.int64)
    cur = op_parent.copy()
    live = np.flatnonzero(cur >= 0)
    while live.size:
        depth[live] += 1
        cur[live] = op_parent[cur[live]]
        live = live[cur[live] >= 0]
    return depth


def _encloses(kt: KinetoTrace, k: _Side, outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Per pair, does Kineto op ``outer`` enclose ``inner`` (indices into k.ops): same
    thread, and the inner span inside the outer one, ends included?  Time, not the built
    tree: with whole-µs timestamps, ops that start together nest either way."""
    o, i = k.ops[outer], k.ops[inner]
    return ((k.group[outer] == k.group[inner]) & (kt.ts[o] <= kt.ts[i])
            & (kt.ts[i] + kt.dur[i] <= kt.ts[o] + kt.dur[o]))
