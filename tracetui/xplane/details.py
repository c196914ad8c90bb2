"""What the stats of the events that are read say (correlation ids, XLA ops, kernel details,
copies, steps), per event; and every event's args (:meth:`EventArgs.blob`): Kineto's args
first (``device``, ``stream``, ``correlation``, ``grid``, ``block``, ``registers per thread``,
``shared memory``, ``bytes``), then every stat under its own name.

A stat whose name is one the Kineto model reads from args (``device``, ``stream``,
``correlation``, ``External id`` ...) is kept as ``xplane <name>``, so a host span's ``device``
stat never reads as a GPU's.  Strings that recur (``hlo_op``, ``kernel_details``) are compared
in numpy (:func:`~.wire.intern_ranges`) and parsed once per distinct text.
"""

from __future__ import annotations

import numpy as np

from ..errors import LoadWarning
from ..kineto import schema as ks
from ..kineto.launch_facts import WORK_ITEM_LAUNCHES
from . import schema as s
from .args import (
    SRC_FILE,
    SRC_INT,
    SRC_POOL,
    SRC_UINT,
    ArgRows,
    TextPool,
    decimal_lengths,
    float_texts,
    int_rows,
    json_texts,
    plain_ascii,
    write_blob,
)
from .reader import Space
from .wire import intern_ranges

#: Kineto's args written first, in this order
KINETO_KEYS = (ks.DEVICE, ks.STREAM, ks.CORRELATION, ks.GRID, ks.BLOCK, ks.REGISTERS_PER_THREAD, ks.SHARED_MEMORY,
               ks.BYTES, s.ARG_LINE, s.ARG_NAME)
#: arg names the Kineto model reads: a stat so named is renamed (``xplane <name>``)
_RESERVED = frozenset(KINETO_KEYS) | frozenset(ks.KEY_JSON.values()) | ks.DISTINCTIVE_ARG_NAMES


def parse_details(text: str) -> dict[str, str]:
    """The ``key:value`` words of a ``kernel_details`` / ``memcpy_details`` text."""
    return dict(s.DETAIL_WORD.findall(text))


def _dims(v: str | None) -> list[int] | None:
    if not v:
        return None
    try:
        out = [int(x) for x in v.split(",")]
    except ValueError:
        return None
    return out if len(out) == 3 and all(x >= 0 for x in out) else None


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def kernel_args(text: str) -> dict[str, object]:
    """Kineto's launch args read from a ``kernel_details`` text (what it does not say is absent):
    ``grid`` and ``block`` as [x, y, z], ``registers per thread`` (``regs``) and ``shared memory``
    (bytes: ``static_shared`` + ``dynamic_shared`` on NVIDIA, ``group_mem`` on AMD)."""
    d = parse_details(text)
    out: dict[str, object] = {}
    for key, word in ((ks.GRID, s.DETAIL_GRID), (ks.BLOCK, s.DETAIL_BLOCK)):
        dims = _dims(d.get(word))
        if dims is not None:
            out[key] = dims
    regs = _int(d.get(s.DETAIL_REGISTERS))
    if regs is not None:
        out[ks.REGISTERS_PER_THREAD] = regs
    shared = [_int(d[w]) for w in s.DETAIL_SHARED if w in d]
    if shared and None not in shared:
        out[ks.SHARED_MEMORY] = sum(shared)  # type: ignore[arg-type]
    return out


class EventArgs:
    """Per event read (length n, in the order of ``idx``): ``correlation``, ``device``,
    ``stream`` (int64, -1: none), ``hlo_op`` (int32 into ``hlo_ops``, -1: none), ``memcpy`` /
    ``memset`` (a copy's or set's details stat), ``step_annotation`` (a ``step_num`` stat)."""

    def __init__(self, space: Space, idx: np.ndarray, on_gpu: np.ndarray, device: np.ndarray,
                 stream: np.ndarray) -> None:
        n = idx.size
        self.n = n
        self.on_gpu = on_gpu
        st = space.stats
        out_of = np.full(space.events.n + 1, -1, dtype=np.int64)
        out_of[idx] = np.arange(n)
        self.rows = np.flatnonzero((out_of[st.event] >= 0) & (st.key >= 0)) if st.n else np.zeros(0, np.int64)
        self.row_event = out_of[st.event[self.rows]]
        self.warnings: list[LoadWarning] = []
        self.device = np.where(on_gpu, device, -1).astype(np.int64)
        self.stream = np.where(on_gpu, stream, -1).astype(np.int64)
        self.correlation = np.full(n, -1, dtype=np.int64)
        rows, ev = self._of(space, s.STAT_CORRELATION_ID, (s.V_UINT, s.V_INT))
        vals = st.raw[rows].view(np.int64)
        ok = vals >= 0
        self.correlation[ev[ok]] = vals[ok]
        self.hlo_op = np.full(n, -1, dtype=np.int32)
        rows, ev = self._of(space, s.STAT_HLO_OP, (s.V_STR, s.V_REF))
        codes, self.hlo_ops = _texts(space, rows)
        self.hlo_op[ev] = codes
        self.memcpy = self._has(space, s.STAT_MEMCPY_DETAILS)
        self.memset = self._has(space, s.STAT_MEMSET_DETAILS)
        self.step_annotation = self._has(space, s.STAT_STEP_NUM)
        self.work_items = np.zeros(n, dtype=bool)
        self._renamed: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int32))
        self._moved: tuple[np.ndarray, np.ndarray, list[str]] = (np.zeros(0, np.int64), np.zeros(0, np.int64), [])

    def _of(self, space: Space, name: str, kinds: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Stat rows named ``name`` of a kind in ``kinds`` (the last of an event's), and their events."""
        code = space.stat_code(name)
        st = space.stats
        sel = np.flatnonzero((st.key[self.rows] == code) & np.isin(st.kind[self.rows], kinds))
        ev = self.row_event[sel]
        last = np.ones(sel.size, dtype=bool)
        last[:-1] = ev[1:] != ev[:-1]
        return self.rows[sel[last]], ev[last]

    def _has(self, space: Space, name: str) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        out[self.row_event[space.stats.key[self.rows] == space.stat_code(name)]] = True
        return out

    def set_launches(self, names: list[str], name_code: np.ndarray, is_call: np.ndarray) -> None:
        """Which GPU events a work-item launch (:data:`~tracetui.kineto.launch_facts.WORK_ITEM_LAUNCHES`)
        started: the call with the event's correlation id (``name_code``: each event's code into
        ``names``; ``is_call``: the events that are API calls)."""
        calls = np.flatnonzero(is_call & (self.correlation >= 0))
        self.work_items = np.zeros(self.n, dtype=bool)
        gpu = np.flatnonzero(self.on_gpu & (self.correlation >= 0))
        if not calls.size or not gpu.size:
            return
        wi_name = np.array([nm in WORK_ITEM_LAUNCHES for nm in names] + [False], dtype=bool)
        order = np.argsort(self.correlation[calls], kind="stable")
        corr = self.correlation[calls][order]
        at = np.minimum(np.searchsorted(corr, self.correlation[gpu]), corr.size - 1)
        found = corr[at] == self.correlation[gpu]
        self.work_items[gpu[found]] = wi_name[name_code[calls[order[at[found]]]]]

    def copy_names(self, space: Space, name_code: np.ndarray, is_copy: np.ndarray, names: list[str]) -> np.ndarray:
        """Device copies named as Kineto names them, from XLA's name and its ``memcpy_details``
        (``MemcpyH2D`` + ``kind_src:pinned kind_dst:device`` -> ``Memcpy HtoD (Pinned -> Device)``;
        the memory kinds left out when unknown): the copy analyses read the direction and the
        host memory from the name.  Gives each event's name code (into ``names``, grown in
        place); XLA's name goes into the arg ``xplane name``."""
        out = name_code.copy()
        copies = np.flatnonzero(is_copy & (name_code >= 0))
        if not copies.size:
            return out
        rows, ev = self._of(space, s.STAT_MEMCPY_DETAILS, (s.V_STR, s.V_REF))
        detail = np.full(self.n, -1, dtype=np.int32)
        codes, texts = _texts(space, rows)
        detail[ev] = codes
        combo = name_code[copies].astype(np.int64) * (len(texts) + 1) + detail[copies] + 1
        uniq, inv = np.unique(combo, return_inverse=True)
        at = {nm: k for k, nm in enumerate(names)}
        made = np.empty(uniq.size, dtype=np.int32)
        for k, c in enumerate(uniq.tolist()):
            xla, d = names[c // (len(texts) + 1)], c % (len(texts) + 1) - 1
            direction = s.COPY_DIRECTIONS.get(xla)
            if direction is None:
                made[k] = c // (len(texts) + 1)
                continue
            words = parse_details(texts[d]) if d >= 0 else {}
            src, dst = (s.COPY_MEMORY.get(words.get(w, "")) for w in (s.DETAIL_SRC, s.DETAIL_DST))
            nm = f"Memcpy {direction} ({src} -> {dst})" if src and dst else f"Memcpy {direction}"
            made[k] = at.setdefault(nm, len(names))
            if made[k] == len(names):
                names.append(nm)
        out[copies] = made[inv.reshape(-1)]
        renamed = copies[out[copies] != name_code[copies]]
        self._renamed = (renamed, name_code[renamed])
        return out

    def add_moved(self, events: np.ndarray, line: np.ndarray, line_names: list[str]) -> None:
        """Events shown on another line's lane: their own line's name (``line_names[line[i]]``)
        goes into their args."""
        self._moved = (events.astype(np.int64), line.astype(np.int64), line_names)

    def blob(self, n: int, space: Space):
        """(blob, offsets) of every event's args (:func:`~.args.write_blob`)."""
        pool = TextPool()
        parts: list[ArgRows] = []
        key_at = {k: i for i, k in enumerate(KINETO_KEYS)}
        gpu = np.flatnonzero(self.on_gpu)
        for key, col in ((ks.DEVICE, self.device), (ks.STREAM, self.stream)):
            parts.append(int_rows(gpu, key_at[key], col[gpu]))
        has = np.flatnonzero(self.correlation >= 0)
        parts.append(int_rows(has, key_at[ks.CORRELATION], self.correlation[has]))
        parts += self._details_rows(space, pool, key_at)
        moved, line, names = self._moved
        if moved.size:
            starts, lens = json_texts(pool, names)
            parts.append(ArgRows.of(moved, key_at[s.ARG_LINE], SRC_POOL, starts[line], lens[line]))
        renamed, xla_name = self._renamed
        if renamed.size:
            uniq, inv = np.unique(xla_name, return_inverse=True)
            starts, lens = json_texts(pool, [space.names[c] for c in uniq.tolist()])
            parts.append(ArgRows.of(renamed, key_at[s.ARG_NAME], SRC_POOL, starts[inv], lens[inv]))
        stat_rows, keys = self._stat_rows(space, pool, len(KINETO_KEYS))
        parts.append(stat_rows)
        return write_blob(n, ArgRows.concat(parts), [*KINETO_KEYS, *keys], pool, space.data)

    def _details_rows(self, space: Space, pool: TextPool, key_at: dict[str, int]) -> list[ArgRows]:
        """Kineto's launch args of the kernels with a ``kernel_details`` stat, and the ``bytes``
        of copies with a ``size`` in their ``memcpy_details``: parsed once per distinct text."""
        out: list[ArgRows] = []
        rows, ev = self._of(space, s.STAT_KERNEL_DETAILS, (s.V_STR, s.V_REF))
        gpu = self.on_gpu[ev]
        rows, ev = rows[gpu], ev[gpu]
        codes, texts = _texts(space, rows)
        parsed = [kernel_args(t) for t in texts]
        # XLA's tracers write blocks; Kineto's grid of a hipExtModuleLaunchKernel kernel counts
        # work-items (kineto/launch_facts.py): written so, the same definitions hold
        items = [{**p, ks.GRID: [g * b for g, b in zip(p[ks.GRID], p[ks.BLOCK])]} if ks.GRID in p and ks.BLOCK in p
                 else p for p in parsed]
        wi = self.work_items[ev]
        for key in (ks.GRID, ks.BLOCK, ks.REGISTERS_PER_THREAD, ks.SHARED_MEMORY):
            have = np.array([key in p for p in parsed] + [False], dtype=bool)
            sel = np.flatnonzero(have[codes])
            if sel.size:
                starts, lens = json_texts(pool, [p.get(key) for p in parsed] + [p.get(key) for p in items])
                at = codes[sel] + np.where(wi[sel], len(parsed), 0)
                out.append(ArgRows.of(ev[sel], key_at[key], SRC_POOL, starts[at], lens[at]))
        rows, ev = self._of(space, s.STAT_MEMCPY_DETAILS, (s.V_STR, s.V_REF))
        codes, texts = _texts(space, rows)
        size = [_int(parse_details(t).get(s.DETAIL_SIZE)) for t in texts]
        have = np.array([v is not None for v in size] + [False], dtype=bool)
        sel = np.flatnonzero(have[codes] & self.on_gpu[ev])
        if sel.size:
            starts, lens = json_texts(pool, size)
            out.append(ArgRows.of(ev[sel], key_at[ks.BYTES], SRC_POOL, starts[codes[sel]], lens[codes[sel]]))
        return out

    def _stat_rows(self, space: Space, pool: TextPool, base: int) -> tuple[ArgRows, list[str]]:
        """Every stat of every event read, as args rows under its name (renamed when reserved),
        in the file's order."""
        st = space.stats
        rows, ev = self.rows, self.row_event
        n = rows.size
        kind = st.kind[rows]
        keys = [f"{s.RENAMED_STAT}{nm}" if nm in _RESERVED else nm for nm in space.stat_names]
        src = np.full(n, SRC_POOL, dtype=np.uint8)
        start = np.zeros(n, dtype=np.int64)
        length = np.zeros(n, dtype=np.int64)
        raw = st.raw[rows].view(np.int64)
        for code, how in ((s.V_UINT, SRC_UINT), (s.V_INT, SRC_INT)):
            sel = kind == code
            src[sel], start[sel] = how, raw[sel]
            length[sel] = decimal_lengths(raw[sel], how == SRC_UINT)
        sel = np.flatnonzero(kind == s.V_DOUBLE)
        if sel.size:
            start[sel], length[sel] = float_texts(pool, raw[sel].view(np.float64))
        sel = np.flatnonzero(kind == s.V_REF)
        if sel.size:
            at, lens = json_texts(pool, [*space.stat_names, ""])
            ref = np.where(raw[sel] >= 0, raw[sel], len(space.stat_names))
            start[sel], length[sel] = at[ref], lens[ref]
        sel = np.flatnonzero(kind == s.V_STR)
        if sel.size:
            pos, ln = st.pos[rows[sel]], st.length[rows[sel]]
            plain = plain_ascii(space.u8, pos, ln)
            src[sel[plain]], start[sel[plain]], length[sel[plain]] = SRC_FILE, pos[plain], ln[plain]
            other = np.flatnonzero(~plain)
            if other.size:
                texts, bad = [], 0
                for p, m in zip(pos[other].tolist(), ln[other].tolist()):
                    raw_text = space.data[p:p + m]
                    try:
                        texts.append(raw_text.decode("utf-8"))
                    except UnicodeDecodeError:
                        texts.append(raw_text.decode("utf-8", "replace"))
                        bad += 1
                if bad:
                    self.warnings.append(LoadWarning("invalid_utf8", f"{bad:,} stat strings are not valid UTF-8 "
                                                     "(bad bytes read as U+FFFD)", bad))
                start[sel[other]], length[sel[other]] = json_texts(pool, texts)
        sel = np.flatnonzero(kind == s.V_BYTES)
        if sel.size:
            spans = zip(st.pos[rows[sel]].tolist(), st.length[rows[sel]].tolist())
            start[sel], length[sel] = json_texts(pool, [space.data[p:p + m].hex() for p, m in spans])
        sel = np.flatnonzero(kind == s.V_NONE)
        if sel.size:
            at, lens = pool.texts([b"null"])
            start[sel], length[sel] = at[0], lens[0]
        return ArgRows(ev.astype(np.int64), (base + st.key[rows]).astype(np.int32), src, start, length), keys


def _texts(space: Space, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The text of each string or ref stat row as a code into a list of distinct texts (strings
    compared in numpy, decoded once per distinct value)."""
    st = space.stats
    codes = np.full(rows.size, -1, dtype=np.int32)
    texts: list[str] = []
    at: dict[str, int] = {}
    strs = np.flatnonzero(st.kind[rows] == s.V_STR)
    if strs.size:
        c, first = intern_ranges(space.u8, st.pos[rows[strs]], st.length[rows[strs]])
        lut = np.array([at.setdefault(space.text(int(st.pos[rows[strs[f]]]), int(st.length[rows[strs[f]]])), len(at))
                        for f in first.tolist()], dtype=np.int32)
        codes[strs] = lut[c]
    refs = np.flatnonzero(st.kind[rows] == s.V_REF)
    if refs.size:
        names = [*space.stat_names, ""]
        ref = st.raw[rows[refs]].view(np.int64)
        ref = np.where(ref >= 0, ref, len(space.stat_names))
        lut = np.array([at.setdefault(nm, len(at)) for nm in names], dtype=np.int32)
        codes[refs] = lut[ref]
    texts = list(at)
    return codes, texts


def event_args(space: Space, idx: np.ndarray, on_gpu: np.ndarray, device: np.ndarray,
               stream: np.ndarray) -> EventArgs:
    """The stats of the events ``idx`` read (:class:`EventArgs`)."""
    return EventArgs(space, idx, on_gpu, device, stream)
