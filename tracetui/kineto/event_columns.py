"""Stages of :func:`~tracetui.kineto.build.build_trace` that read columns out of the decoded
rows: the flow table (ph s/f/t) and the event columns, for every row that becomes an event
(not metadata, not a flow, not an E merged into its B): names and categories interned
afresh, the kind of each event, times in µs with the durations checked, pid/tid, the key
args and the args bytes.  Everything here is columnar (numpy over all rows at once)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from .. import units
from ..errors import LoadWarning
from ..io.interning import compact
from .columns import DecodedEvents, cut_args
from .decode import DecodedTrace
from .kinds import CATEGORY_KIND, DEVICE_NAME_KINDS, KNOWN_OTHER_CATEGORIES, KNOWN_PHASES, Kind
from .trace import FlowTable

#: the longest duration taken as real (µs; 31 years): longer ones are kept with zero duration
#: and named in the warnings, so sums over durations never overflow
MAX_DURATION_US = 1e15


@dataclass
class AllRows:
    """Every decoded row (events, metadata and flows, in file order) once phases and times are
    read (the first stage of the build, ``build._phases_and_times``).

    ``ph``: uint8, the first character of the row's phase (0: missing or not one byte); B
    and E rows are ``X`` once merged.  ``ts``: float64 µs from ``origin`` (absolute µs of
    time 0); NaN where the time is unusable.  ``dur``: float64 µs as in the file, a B's set
    from its E.  ``keep``: the rows that become events (not metadata, not flows, not E rows).
    ``rejected``: reason -> elements of traceEvents that are not separate events in the
    model, ``rejected_first``: reason -> the traceEvents index of the first."""

    ph: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    origin: int
    is_meta: np.ndarray
    is_flow: np.ndarray
    keep: np.ndarray
    rejected: Counter
    rejected_first: dict


@dataclass
class EventColumns:
    """The columns of the events, length ``n`` (event ``i`` is decoded row ``rows[i]``).

    ``names``/``cats`` hold only the values the events use (``name_id``/``cat_id`` index
    them).  ``kind``: uint8 :class:`~tracetui.kineto.kinds.Kind` (ph i/I/n: ``INSTANT``).
    ``ts``: float64 µs from the origin, NaN where ``no_ts``.  ``dur``: float64 µs, finite,
    at most :data:`MAX_DURATION_US`, never negative (bad ones are 0 and warned about).
    ``pids``/``tids``: as in the file.  ``key_args``: the int64 columns of
    :class:`~tracetui.kineto.columns.DecodedEvents` (``correlation``, ``seq`` ...);
    ``external_id`` the External id, else the old spelling's.  Event ``i``'s args are
    ``args_blob[args_offsets[i]:args_offsets[i + 1]]``."""

    rows: np.ndarray
    name_id: np.ndarray
    names: Any
    cat_id: np.ndarray
    cats: Any
    ph: np.ndarray
    kind: np.ndarray
    ts: np.ndarray
    no_ts: np.ndarray
    dur: np.ndarray
    pids: list
    tids: list
    key_args: dict[str, np.ndarray]
    external_id: np.ndarray
    args_blob: Any
    args_offsets: np.ndarray

    @property
    def n(self) -> int:
        return int(self.rows.size)


def take_list(values: list, rows) -> list:
    """``[values[i] for i in rows]`` in one C call (``itemgetter``)."""
    rows = rows.tolist() if isinstance(rows, np.ndarray) else rows
    if len(rows) < 2:
        return [values[i] for i in rows]
    return list(itemgetter(*rows)(values))


def first_rows(dec: DecodedTrace, rows: np.ndarray) -> str:
    """``"traceEvents[i]"`` of the first decoded row in ``rows``."""
    return f"traceEvents[{dec.events.source_index(int(rows[0]))}]" if rows.size else "?"


def flow_table(ev: DecodedEvents, rows: AllRows) -> tuple[FlowTable, np.ndarray]:
    """Stage: flows.  The flow rows (ph s/f/t: launch and forward/backward arrows) as a
    :class:`~tracetui.kineto.trace.FlowTable` in file order (times in µs from the origin),
    and their decoded rows (int64), whose interned cat/pid/tid codes the cache keeps."""
    fidx = np.flatnonzero(rows.is_flow)
    flows = FlowTable(
        ph=rows.ph[fidx], cat=ev.cat.take(fidx), flow_id=take_list(ev.flow_id, fidx),
        pid=ev.pid.take(fidx), tid=ev.tid.take(fidx), ts=rows.ts[fidx])
    return flows, fidx


def event_columns(dec: DecodedTrace, rows: AllRows, warnings: list[LoadWarning],
                  plain_categories: frozenset[str] = frozenset()) -> EventColumns:
    """Stage: event columns.  Takes the decoded rows with their phases and times and gives
    the columns of the rows in ``rows.keep``: kinds from categories (and names), durations
    and times checked, key args, args bytes.  Appends, in this order, the warnings about
    categories and phases not understood (but ``plain_categories``: plain spans by design),
    bad and negative durations, missing times.

    After this stage ``dec.events.args_blob`` may be gone (cut in place, see
    :func:`_event_args`)."""
    ev = dec.events
    idx = np.flatnonzero(rows.keep)
    name_id, names = compact(ev.name.codes[idx], ev.name.values)
    cat_id, cats = compact(ev.cat.codes[idx], ev.cat.values)
    ph = rows.ph[idx]
    kind = _kinds(ph, cat_id, name_id, cats, names, rows.ph, warnings, plain_categories)
    ts = rows.ts[idx]
    dur = _checked_durations(dec, idx, rows.dur[idx], warnings)
    no_ts = np.isnan(ts)
    if no_ts.any():
        nt = int(no_ts.sum())
        warnings.append(LoadWarning("no_timestamp", f"{nt:,} events have no usable timestamp (kept at time 0, "
                                    f"outside the tree; first: {first_rows(dec, idx[no_ts])})", nt))
    ka = {k: v[idx] for k, v in ev.key_args.items()}
    ext = np.where(ka["external_id"] >= 0, ka["external_id"], ka["external_id_old"])
    args_blob, args_offsets = _event_args(ev, rows.keep, idx)
    return EventColumns(
        rows=idx, name_id=name_id, names=names, cat_id=cat_id, cats=cats, ph=ph, kind=kind, ts=ts, no_ts=no_ts,
        dur=dur, pids=ev.pid.take(idx), tids=ev.tid.take(idx), key_args=ka, external_id=ext, args_blob=args_blob,
        args_offsets=args_offsets)


def _kinds(ph: np.ndarray, cat_id: np.ndarray, name_id: np.ndarray, cats, names, ph_all: np.ndarray,
           warnings: list[LoadWarning], plain_categories: frozenset[str] = frozenset()) -> np.ndarray:
    """The uint8 :class:`Kind` of each event: from its category (unknown ones: ``OTHER``),
    then the device rules by (category, name), then ``INSTANT`` for ph i/I/n.  Warns about
    every category and phase (``ph_all``: of every decoded row) the loader has no rule for."""
    cat_kind = np.array([int(CATEGORY_KIND.get(c, Kind.OTHER)) for c in cats] or [0], dtype=np.uint8)
    kind = cat_kind[cat_id] if cat_id.size else np.zeros(0, np.uint8)
    _refine_device_kinds(kind, cat_id, name_id, cats, names)
    _warn_not_understood(cats, cat_id, ph_all, warnings, plain_categories)
    return np.where(np.isin(ph, [ord("i"), ord("I"), ord("n")]), np.uint8(Kind.INSTANT), kind).astype(np.uint8)


def _refine_device_kinds(kind: np.ndarray, cat_id: np.ndarray, name_id: np.ndarray, cats, names) -> None:
    """Apply :data:`~tracetui.kineto.kinds.DEVICE_NAME_KINDS` (one mask per rule present)."""
    cat_at = {str(c): i for i, c in enumerate(cats)}
    name_at = None
    for (c, nm), k in DEVICE_NAME_KINDS.items():
        ci = cat_at.get(c)
        if ci is None:
            continue
        if name_at is None:
            name_at = {str(x): i for i, x in enumerate(names)}
        ni = name_at.get(nm)
        if ni is not None:
            kind[(cat_id == ci) & (name_id == ni)] = int(k)


def _warn_not_understood(cats, cat_id: np.ndarray, ph_all: np.ndarray, warnings: list[LoadWarning],
                         plain: frozenset[str] = frozenset()) -> None:
    """Name every category (but those in ``plain``) and phase the loader has no rule for,
    with its event count."""
    unknown = [i for i, c in enumerate(cats)
               if str(c) not in CATEGORY_KIND and str(c) not in KNOWN_OTHER_CATEGORIES and str(c) not in plain]
    if unknown:
        counts = np.bincount(cat_id, minlength=len(cats))
        for i in sorted(unknown, key=lambda i: (-int(counts[i]), str(cats[i]))):
            c = int(counts[i])
            warnings.append(LoadWarning("unknown_category", f"{c:,} events of category {str(cats[i])!r} are not "
                                        "understood: kept as plain spans on their thread (not device work, no "
                                        "launch link)", c))
    codes, counts = np.unique(ph_all, return_counts=True)
    for code, c in zip(codes.tolist(), counts.tolist()):
        if code and chr(code) in KNOWN_PHASES:
            continue
        what = repr(chr(code)) if code else "missing or not one byte"
        warnings.append(LoadWarning("unknown_phase", f"{c:,} events of phase (ph) {what} are not understood: "
                                    "kept, on no timeline lane", c))


def _checked_durations(dec: DecodedTrace, idx: np.ndarray, dur: np.ndarray,
                       warnings: list[LoadWarning]) -> np.ndarray:
    """The events' durations (float64 µs) with those that are no real duration set to 0, each
    class warned about with its count and first event: not finite (NaN, inf), over
    :data:`MAX_DURATION_US` (1e308 µs: every sum over it overflows; no profile lasts that
    long), negative (the events are kept, as zero length)."""
    bad_dur = ~np.isfinite(dur)
    if bad_dur.any():
        nb = int(bad_dur.sum())
        warnings.append(LoadWarning("bad_duration", f"{nb:,} events have a duration that is not a finite number "
                                    f"(kept with zero duration; first: {first_rows(dec, idx[bad_dur])})", nb))
        dur = np.where(bad_dur, 0.0, dur)
    huge = np.abs(dur) > MAX_DURATION_US
    if huge.any():
        nh = int(huge.sum())
        over, longest = units.us_text(MAX_DURATION_US, ".0e"), units.us_text(float(np.abs(dur[huge]).max()), ".3g")
        warnings.append(LoadWarning("bad_duration", f"{nh:,} events have a duration over {over} "
                                    f"(31 years; the longest {longest}), not a real one "
                                    f"(kept with zero duration; first: {first_rows(dec, idx[huge])})", nh))
        dur = np.where(huge, 0.0, dur)
    neg = dur < 0
    if neg.any():
        warnings.append(LoadWarning("negative_duration", f"{int(neg.sum())} events with a negative duration "
                                    "(kept, treated as zero length)", int(neg.sum())))
        dur = np.where(neg, 0.0, dur)
    return dur


def _event_args(ev: DecodedEvents, keep: np.ndarray, idx: np.ndarray) -> tuple[Any, np.ndarray]:
    """(blob, int64 offsets of length n + 1) of the events' args: event ``i``'s are
    ``blob[offsets[i]:offsets[i + 1]]``.  When rows were dropped, their args (most dropped
    rows, flows, have none) are cut out of the decoded blob, in place where it is a memory
    map (:func:`~tracetui.kineto.columns.cut_args`: ``ev.args_blob`` is then None)."""
    n = idx.size
    lens = ev.args_offsets[1:] - ev.args_offsets[:-1]
    args_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens[idx], out=args_offsets[1:])
    if n == len(ev.name):
        return ev.args_blob, args_offsets
    cut = np.flatnonzero(~keep & (lens > 0))
    return (cut_args(ev, cut) if cut.size else ev.args_blob), args_offsets
