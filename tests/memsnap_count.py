"""What a CUDA memory snapshot holds, counted by the tests' own code from its plain dict (a
generated one, ``memsnap_gen``, or a real file read with ``snapshot_unpickle``), never with
tracetui.  The rules are those of docs/memory.md ("CUDA memory snapshots"), written again here
as plainly as possible: a walk over the entries in file order.
"""

from __future__ import annotations

import os

ALLOCATED = ("active_allocated", "active_pending_free")


def is_user(frame: dict) -> bool:
    f = frame["filename"]
    return f.endswith(".py") and "site-packages" not in f and "dist-packages" not in f and \
        "/lib/python3" not in f and not f.startswith("<")


def owner_label(frames: list[dict]) -> str:
    """The innermost user frame, else the innermost Python frame; C++ frames only: "(no Python
    frame)"; no frame: "(no frames)"."""
    for test in (is_user, lambda f: f["filename"].endswith(".py")):
        for f in frames:
            if test(f):
                return f"{f['name']} ({os.path.basename(f['filename'])}:{f['line']})"
    return "(no Python frame)" if frames else "(no frames)"


def origin(snap: dict) -> int:
    times = [e["time_us"] for t in snap["device_traces"] for e in t if "time_us" in e]
    times += [a["time_us"] for a in snap.get("external_annotations", [])]
    return min(times)


def count(snap: dict, device: int = 0) -> dict:
    """One device's facts: counts, the end state from the segments, the replayed allocated and
    reserved bytes (from the baselines the end state gives), the peak, the blocks live then by
    owner, the segments' free space, the oom entries."""
    entries = snap["device_traces"][device]
    segs = [s for s in snap["segments"] if s["device"] == device]
    blocks = [b for s in segs for b in s["blocks"]]
    end_alloc = sum(b["size"] for b in blocks if b["state"] in ALLOCATED)
    end_res = sum(s["total_size"] for s in segs)
    d_alloc = [e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
               for e in entries]
    d_res = [e["size"] if e["action"] in ("segment_alloc", "segment_map") else
             -e["size"] if e["action"] in ("segment_free", "segment_unmap") else 0 for e in entries]
    base, rbase = end_alloc - sum(d_alloc), end_res - sum(d_res)
    alloc, res, now, rnow = [], [], base, rbase
    for a, r in zip(d_alloc, d_res):
        now += a
        rnow += r
        alloc.append(now)
        res.append(rnow)
    k = alloc.index(max(alloc)) if alloc else None
    live: dict[int, tuple[int, list]] = {}
    before_freed = 0
    for e in entries[: (k or 0) + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], e.get("frames", []))
        elif e["action"] == "free_completed":
            if e["addr"] in live:
                del live[e["addr"]]
            else:
                before_freed += e["size"]
    owners: dict[str, int] = {}
    for size, frames in live.values():
        owners[owner_label(frames)] = owners.get(owner_label(frames), 0) + size
    free_blocks = [b["size"] for b in blocks if b["state"] == "inactive"]
    t0 = origin(snap)
    ooms = [{"index": i, "requested": e["size"], "device_free": e.get("device_free"), "allocated": alloc[i],
             "reserved": res[i], "ts_us": e["time_us"] - t0} for i, e in enumerate(entries) if e["action"] == "oom"]
    return {
        "entries": len(entries),
        "allocations": sum(e["action"] == "alloc" for e in entries),
        "frees": sum(e["action"] == "free_completed" for e in entries),
        "free_requested": sum(e["action"] == "free_requested" for e in entries),
        "end_allocated": end_alloc, "start_allocated": base, "end_reserved": end_res, "start_reserved": rbase,
        "peak": alloc[k] if alloc else None, "peak_index": k,
        "peak_ts_us": entries[k]["time_us"] - t0 if alloc else None,
        "peak_reserved": max(res) if res else None,
        "live_bytes": sum(s for s, _ in live.values()), "live_blocks": len(live),
        "before_trace_bytes": base - before_freed,
        "owners": owners,
        "segments": len(segs), "reserved": end_res, "free": sum(free_blocks),
        "largest_free": max(free_blocks, default=0),
        "allocated_in_segments": end_alloc,
        "ooms": ooms,
    }
