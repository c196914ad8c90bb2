"""A CUDA memory snapshot that ends in an out-of-memory error (issue 36, for issue 39's ``oom`` answers).

    python scripts/gpu_box/oom_snapshot.py --out DIR/cuda_oom_snapshot.pickle

With the caching allocator's history on (``torch.cuda.memory._record_memory_history``, Python
stack frames), a few layers of a small MLP are built and run forward and backward (live blocks
from named Python frames: ``make_layers``, ``step``), some activations are kept, then one request
is made for more bytes than the device has free: the allocator records an ``oom`` trace entry
(with ``device_free``) before raising ``torch.OutOfMemoryError``, which is caught.  The history is
then dumped (``torch.cuda.memory._dump_snapshot``).  Allocations use ``cudaMalloc`` through
PyTorch's allocator (never managed memory).  Prints what the snapshot holds; exit 3 without CUDA.
"""

from __future__ import annotations

import argparse
import pickle
import sys


def make_layers(torch, n: int, width: int):
    return [torch.nn.Linear(width, width, device="cuda") for _ in range(n)]


def step(torch, layers, batch: int, width: int):
    x = torch.randn(batch, width, device="cuda", requires_grad=True)
    kept = []
    for layer in layers:
        x = torch.relu(layer(x))
        kept.append(x)
    x.sum().backward()
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the snapshot file to write")
    ap.add_argument("--max-entries", type=int, default=4000)
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("oom_snapshot: skipped: no CUDA device", file=sys.stderr)
        return 3
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
    layers = make_layers(torch, 6, 2048)
    kept = step(torch, layers, 512, 2048)
    free, total = torch.cuda.mem_get_info()
    request = free + (8 << 30)
    try:
        torch.empty(request, dtype=torch.uint8, device="cuda")
        print("oom_snapshot: the request did not fail", file=sys.stderr)
    except torch.OutOfMemoryError as exc:
        print(f"oom_snapshot: request of {request:,} B failed as expected ({str(exc).splitlines()[0][:120]})")
    torch.cuda.memory._dump_snapshot(args.out)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(args.out, "rb") as fh:  # our own file, just written: counting what it holds
        snap = pickle.load(fh)
    actions: dict[str, int] = {}
    for dev in snap.get("device_traces", []):
        for e in dev:
            actions[e.get("action", "?")] = actions.get(e.get("action", "?"), 0) + 1
    ooms = [e for dev in snap.get("device_traces", []) for e in dev if e.get("action") == "oom"]
    print(f"oom_snapshot: {len(snap.get('segments', []))} segments, actions {actions}; free before {free:,} of "
          f"{total:,} B; oom entries: {[(e.get('size'), e.get('device_free')) for e in ooms]}; kept {len(kept)} "
          f"activations; torch {torch.__version__}, {torch.cuda.get_device_name()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
