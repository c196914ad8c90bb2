"""Helpers of the diff tests: facts read from the raw JSON, and a modified copy of a trace."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

from shared_traces import SHARED, kineto_path

BERT = "h100_bert_inference.json.gz"
MI300 = "mi300_resnet_train_checkpointing.json.gz"
JOB = SHARED / "multirank" / "param_dlrm_8ranks"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


@lru_cache(maxsize=None)
def raw_events(path: str) -> list[dict]:
    with gzip.open(path) as fh:
        return json.load(fh)["traceEvents"]


def raw_step(path: str, name: str) -> tuple[float, float]:
    (s,) = [e for e in raw_events(path) if e.get("cat") == "user_annotation" and e.get("name") == name]
    return float(s["ts"]), float(s["dur"])


def raw_gpu_in_step(path: str, name: str) -> tuple[int, float]:
    """(count, summed µs) of the kernels/memcpys/memsets whose launch starts in the step."""
    ts, dur = raw_step(path, name)
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in raw_events(path)
                 if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
    gpu = [e for e in raw_events(path) if e.get("cat") in GPU_CATS
           and ts <= launch_ts.get(e["args"].get("correlation"), -1.0) < ts + dur]
    return len(gpu), sum(float(e["dur"]) for e in gpu)


REMOVED_EXT, SLOWED_EXT, FACTOR = 87, 478, 3.0


def write_modified_bert(out: Path) -> Path:
    """A copy of the bert trace with the kernels of the op of External id 87 (a flash
    attention forward) removed, and those of the op of External id 478 (an addmm) 3x slower."""
    with gzip.open(kineto_path(BERT)) as fh:
        doc = json.load(fh)
    removed_corr = set()
    kept = []
    for e in doc["traceEvents"]:
        if e.get("cat") in GPU_CATS and e["args"].get("External id") == REMOVED_EXT:
            removed_corr.add(e["args"]["correlation"])
            continue
        if e.get("cat") in GPU_CATS and e["args"].get("External id") == SLOWED_EXT:
            e = dict(e, dur=e["dur"] * FACTOR)
        kept.append(e)
    doc["traceEvents"] = [e for e in kept if not (e.get("ph") == "f" and e.get("id") in removed_corr)]
    with gzip.open(out, "wt") as fh:
        json.dump(doc, fh)
    return out


def raw_kernels(path, ext: int) -> list[dict]:
    """The GPU events of the op with External id ``ext``."""
    return [e for e in raw_events(str(path)) if e.get("cat") in GPU_CATS and e["args"].get("External id") == ext]


RENAMED_EXT = 443
NVJET = "nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTN"


def write_renamed_bert(out: Path) -> Path:
    """A copy of the bert trace where the GEMM kernel of the addmm of External id 443 is an
    ``nvjet`` kernel with another grid (cuBLAS picking another kernel)."""
    with gzip.open(kineto_path(BERT)) as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e["args"].get("External id") == RENAMED_EXT:
            e["name"] = NVJET
            e["args"]["grid"] = [32, 8, 1]
    with gzip.open(out, "wt") as fh:
        json.dump(doc, fh)
    return out
