"""Open a 100-200 MB JAX/XLA profile (issue 38): tracetui's XPlane reader against the floor,
each in a fresh child process.

    python bench/bench_xplane.py [--mb 150] [--upb-python /tmp/pbvenv/bin/python] [--runs 1] [--rows R,S]
                                 [--sample FILE] [--json FILE]

The file is the shared MI300 sample (``../shared/traces/xplane/mi300_jax_conv_tw003.xplane.pb``:
8 GPUs, 3,650 events) with every line's events repeated until the file has about ``--mb`` MB,
copy ``i`` shifted by ``i`` times the sample's span and its correlation ids by ``i`` times the
largest (``tests/xplane_write.tile``: the wire format written directly), kept in
``/tmp/tracetui_bench/``.

Rows (seconds: wall and CPU of the child after its imports; MB = 2^20 bytes; MB/s: file MB per
wall second; ``x floor``: wall and CPU against ``upb parse``, else ``scan``; peak = the child's
VmHWM; ``--runs N``: the fastest of N interleaved rounds):

* ``upb parse``: ``XSpace.FromString`` with the ``protobuf`` package's upb backend (the message
  classes made from a descriptor written here, the field numbers of xplane.proto), run by
  ``--upb-python`` (a venv with ``pip install protobuf``; protobuf is not a tracetui dependency);
* ``upb walk``: the same, then every event's offset, duration and stats touched from Python;
* ``upb columns``: the same, then every event's metadata id, offset and duration and every
  stat's metadata id and value (its oneof) into lists and numpy columns: the least a reader
  built on upb would do (names, lines and the model are not made);
* ``scan``: ``tracetui.xplane.reader.read_space``: every event and stat in columns (tracetui's
  own floor: no model);
* ``load``: ``tracetui.xplane.load_xplane`` (columns, args, the Kineto build: tree, links);
* ``open``: ``tracetui.store.traces.load_cached`` with an empty cache (what ``tracetui FILE``
  does before painting: the parse child writes the cache entry the parent maps).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rss import peak_rss_mb

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "traces" / "xplane" / "mi300_jax_conv_tw003.xplane.pb"
OUT_DIR = Path("/tmp/tracetui_bench")
ROWS = ("upb parse", "upb walk", "upb columns", "scan", "load", "open")


def make(mb: float, sample: Path = SAMPLE) -> Path:
    """The tiled file of about ``mb`` MB (made once)."""
    sys.path.insert(0, str(REPO / "tests"))
    from xplane_write import tile

    data = sample.read_bytes()
    per_copy = len(tile(data, 2)) - len(tile(data, 1))
    copies = max(1, round(mb * 2**20 / per_copy))
    path = OUT_DIR / f"mi300_x{copies}.xplane.pb"
    if not path.exists():
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(tile(data, copies))
        tmp.replace(path)
    return path


# ---------------------------------------------------------------------------- upb
def _xspace_class():
    """The XSpace message class, from a descriptor built here (xplane.proto's numbers)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="xplane_bench.proto", package="xb", syntax="proto3")

    def msg(parent, name, fields, oneof=None):
        m = parent.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof[0])
        for fname, num, typ, rep, tname in fields:
            f = m.field.add(name=fname, number=num, type=typ,
                            label=F.LABEL_REPEATED if rep else F.LABEL_OPTIONAL)
            if tname:
                f.type_name = tname
            if oneof and fname in oneof[1]:
                f.oneof_index = 0
        return m

    stat = [("metadata_id", 1, F.TYPE_UINT64, False, None), ("double_value", 2, F.TYPE_DOUBLE, False, None),
            ("uint64_value", 3, F.TYPE_UINT64, False, None), ("int64_value", 4, F.TYPE_INT64, False, None),
            ("str_value", 5, F.TYPE_STRING, False, None), ("bytes_value", 6, F.TYPE_BYTES, False, None),
            ("ref_value", 7, F.TYPE_UINT64, False, None)]
    msg(fdp.message_type, "XStat", stat, ("value", {f[0] for f in stat[1:]}))
    msg(fdp.message_type, "XEvent", [("metadata_id", 1, F.TYPE_INT64, False, None),
                                     ("offset_ps", 2, F.TYPE_INT64, False, None),
                                     ("num_occurrences", 5, F.TYPE_INT64, False, None),
                                     ("duration_ps", 3, F.TYPE_INT64, False, None),
                                     ("stats", 4, F.TYPE_MESSAGE, True, ".xb.XStat")],
        ("data", {"offset_ps", "num_occurrences"}))
    msg(fdp.message_type, "XLine", [("id", 1, F.TYPE_INT64, False, None), ("display_id", 10, F.TYPE_INT64, False, None),
                                    ("name", 2, F.TYPE_STRING, False, None),
                                    ("display_name", 11, F.TYPE_STRING, False, None),
                                    ("timestamp_ns", 3, F.TYPE_INT64, False, None),
                                    ("duration_ps", 9, F.TYPE_INT64, False, None),
                                    ("events", 4, F.TYPE_MESSAGE, True, ".xb.XEvent")])
    msg(fdp.message_type, "XEventMetadata", [("id", 1, F.TYPE_INT64, False, None),
                                             ("name", 2, F.TYPE_STRING, False, None),
                                             ("display_name", 4, F.TYPE_STRING, False, None),
                                             ("metadata", 3, F.TYPE_BYTES, False, None),
                                             ("stats", 5, F.TYPE_MESSAGE, True, ".xb.XStat"),
                                             ("child_id", 6, F.TYPE_INT64, True, None)])
    msg(fdp.message_type, "XStatMetadata", [("id", 1, F.TYPE_INT64, False, None),
                                            ("name", 2, F.TYPE_STRING, False, None),
                                            ("description", 3, F.TYPE_STRING, False, None)])
    plane = msg(fdp.message_type, "XPlane", [("id", 1, F.TYPE_INT64, False, None),
                                             ("name", 2, F.TYPE_STRING, False, None),
                                             ("lines", 3, F.TYPE_MESSAGE, True, ".xb.XLine"),
                                             ("event_metadata", 4, F.TYPE_MESSAGE, True, ".xb.XPlane.EmEntry"),
                                             ("stat_metadata", 5, F.TYPE_MESSAGE, True, ".xb.XPlane.SmEntry"),
                                             ("stats", 6, F.TYPE_MESSAGE, True, ".xb.XStat")])
    for entry, value in (("EmEntry", ".xb.XEventMetadata"), ("SmEntry", ".xb.XStatMetadata")):
        e = msg(plane.nested_type, entry, [("key", 1, F.TYPE_INT64, False, None),
                                           ("value", 2, F.TYPE_MESSAGE, False, value)])
        e.options.map_entry = True
    msg(fdp.message_type, "XSpace", [("planes", 1, F.TYPE_MESSAGE, True, ".xb.XPlane"),
                                     ("errors", 2, F.TYPE_STRING, True, None),
                                     ("warnings", 3, F.TYPE_STRING, True, None),
                                     ("hostnames", 4, F.TYPE_STRING, True, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("xb.XSpace"))


def _child(what: str, path: str) -> None:
    """One row, timed after its imports (they are the same for every size)."""
    result: dict = {}
    t_import = time.perf_counter()
    if what.startswith("upb"):
        from google.protobuf.internal import api_implementation

        cls = _xspace_class()
        result.update(import_s=time.perf_counter() - t_import, backend=api_implementation.Type())
    elif what == "scan":
        from tracetui.xplane.reader import read_space
    elif what == "load":
        from tracetui.xplane import load_xplane
    else:
        from tracetui.store.traces import load_cached
    t0, c0 = time.perf_counter(), time.process_time()
    if what.startswith("upb"):
        space = cls.FromString(Path(path).read_bytes())
        events = stats = 0
        if what == "upb walk":
            total = 0
            for plane in space.planes:
                for line in plane.lines:
                    for ev in line.events:
                        total += ev.offset_ps + ev.duration_ps
                        stats += len(ev.stats)
                    events += len(line.events)
        elif what == "upb columns":  # what a reader on upb needs at least: every event's and stat's fields
            import numpy as np

            mid, off, dur, st_ev, st_mid, st_val = [], [], [], [], [], []
            for plane in space.planes:
                for line in plane.lines:
                    for ev in line.events:
                        mid.append(ev.metadata_id)
                        off.append(ev.offset_ps)
                        dur.append(ev.duration_ps)
                        for st in ev.stats:
                            st_ev.append(events)
                            st_mid.append(st.metadata_id)
                            kind = st.WhichOneof("value")
                            st_val.append(getattr(st, kind) if kind else None)
                        events += 1
            cols = [np.array(c, dtype=np.int64) for c in (mid, off, dur, st_ev, st_mid)]
            stats = cols[3].size
        else:
            events = sum(len(line.events) for plane in space.planes for line in plane.lines)
        result.update(events=events, stats=stats)
    elif what == "scan":
        space = read_space(Path(path).read_bytes())
        result.update(events=space.events.n, stats=space.stats.n)
    elif what == "load":
        trace = load_xplane(path)
        result.update(events=trace.n_events, gpu_events=trace.gpu_stats.gpu_events, linked=trace.gpu_stats.linked)
    else:
        result.update(events=load_cached([path]).kineto.n_events)
    result.update(seconds=time.perf_counter() - t0, cpu=time.process_time() - c0, peak_mb=peak_rss_mb())
    print(json.dumps(result))


def _run(what: str, path: Path, python: str, env: dict | None = None) -> dict:
    out = subprocess.run([python, __file__, "--child", what, str(path)], capture_output=True, text=True, env=env)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=150.0)
    ap.add_argument("--upb-python", default="/tmp/pbvenv/bin/python",
                    help="a Python with the protobuf package (upb backend); skipped when missing")
    ap.add_argument("--runs", type=int, default=1, help="interleaved rounds; the minimum is kept")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"the rows to run (default: {','.join(ROWS)})")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--sample", type=Path, default=SAMPLE, help="the XPlane to tile (default: the shared MI300 one)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    t = time.perf_counter()
    path = make(args.mb, args.sample)
    size = path.stat().st_size
    print(f"{path}: {size / 2**20:.1f} MB (made or found in {time.perf_counter() - t:.1f} s)")
    rows: dict[str, dict] = {}
    have_upb = os.path.exists(args.upb_python)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRACETUI_CACHE_DIR=cache)
        for _ in range(args.runs):
            for what in [r for r in ROWS if r in args.rows.split(",")]:
                if what.startswith("upb") and not have_upb:
                    continue
                python = args.upb_python if what.startswith("upb") else sys.executable
                for f in Path(cache).glob("*"):
                    f.unlink()
                r = _run(what, path, python, env)
                if "error" in r or what not in rows or r["seconds"] < rows[what]["seconds"]:
                    rows[what] = r
    base = rows.get("upb parse") or rows.get("scan") or {}
    floor, floor_cpu = base.get("seconds"), base.get("cpu")
    print(f"{'row':<12} {'events':>10} {'wall s':>8} {'CPU s':>7} {'MB/s':>7} {'x floor':>8} {'x CPU':>6} "
          f"{'peak MB':>8}")
    for what, r in rows.items():
        if "error" in r:
            print(f"{what:<12} error: {r['error']}")
            continue
        ratio = r["seconds"] / floor if floor else float("nan")
        ratio_cpu = r["cpu"] / floor_cpu if floor_cpu else float("nan")
        print(f"{what:<12} {r['events']:>10,} {r['seconds']:>8.2f} {r['cpu']:>7.2f} "
              f"{size / 2**20 / r['seconds']:>7.1f} {ratio:>8.2f} {ratio_cpu:>6.2f} {r['peak_mb']:>8.0f}"
              + (f"  (import {r['import_s']:.2f} s, {r['backend']})" if "import_s" in r else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"file": str(path), "bytes": size, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
