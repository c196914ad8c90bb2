"""A small CUDA memory snapshot with C++ and Python frames (stacks="all", torch's default), written
with pickle protocols 4 and 5 (Python 3.14 writes 5): issue 39's real samples of those two cases.

    python scripts/gpu_box/memsnap_all_stacks.py OUT_DIR [--max-entries 300]

A few Linear layers on cuda:0, two forward/backward steps under the allocator's history
(``torch.cuda.memory._record_memory_history(stacks="all")``), then ``torch.cuda.memory._snapshot()``
pickled as ``_dump_snapshot`` does (``pickle.dump``), once per protocol.  Exit 3 without CUDA.
"""

from __future__ import annotations

import argparse
import pickle
import sys


def make_layers(torch, n: int, width: int):
    return [torch.nn.Linear(width, width, device="cuda") for _ in range(n)]


def train_step(torch, layers, batch: int, width: int) -> None:
    x = torch.randn(batch, width, device="cuda", requires_grad=True)
    for layer in layers:
        x = torch.relu(layer(x))
    x.sum().backward()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for cuda_allstacks_p4.pickle and cuda_allstacks_p5.pickle")
    ap.add_argument("--max-entries", type=int, default=300)
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("memsnap_all_stacks: no CUDA device", file=sys.stderr)
        return 3
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="all")
    layers = make_layers(torch, 4, 1024)
    for _ in range(2):
        train_step(torch, layers, 256, 1024)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    for proto in (4, 5):
        path = f"{args.out}/cuda_allstacks_p{proto}.pickle"
        with open(path, "wb") as fh:
            pickle.dump(snap, fh, protocol=proto)
    entries = [e for dev in snap["device_traces"] for e in dev]
    frames = sum(len(e.get("frames", [])) for e in entries)
    print(f"memsnap_all_stacks: {len(snap['segments'])} segments, {len(entries)} entries, {frames} frames; "
          f"torch {torch.__version__}, Python {sys.version.split()[0]}, {torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
