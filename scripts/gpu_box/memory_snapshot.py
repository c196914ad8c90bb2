"""A CUDA memory snapshot of the run ``tracetui record`` makes (issue 36, step "snapshot").

    python scripts/gpu_box/memory_snapshot.py --out-dir DIR [--name cuda_transformer_mem] [--max-entries 10000]

``tracetui record`` has no option for a memory snapshot, so this runs the same recording (the
same model, seed and steps: :func:`tracetui.cli.record.record`) with the CUDA caching allocator's
history switched on around it (``torch.cuda.memory._record_memory_history``: every allocation and
free with its Python stack frames), then writes ``<name>_snapshot.pickle``
(``torch.cuda.memory._dump_snapshot``: the layout of ``../shared/FORMATS.md``, "CUDA memory
snapshots") beside the ET + Kineto pair of the same run (``<name>_et.json.gz``,
``<name>_kineto.json.gz``).  ``--max-entries`` bounds the history (the tiny model makes a few
hundred allocations a step: the file stays a few MB); ``--stacks python`` (default) keeps the C++
frames out, which would make it many times larger.

Prints one line per file written and one with what the snapshot holds.  Exit 3 when CUDA is not
available (the caller logs the step as skipped), 2 when torch is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

EXIT_NO_CUDA = 3


def snapshot_counts(snap: dict) -> str:
    """What a snapshot (the dict ``torch.cuda.memory._snapshot()`` returns) holds, in words."""
    segments = snap.get("segments", [])
    traces = [e for dev in snap.get("device_traces", []) for e in dev]
    frames = sum(len(e.get("frames", [])) for e in traces)
    actions: dict[str, int] = {}
    for e in traces:
        actions[e.get("action", "?")] = actions.get(e.get("action", "?"), 0) + 1
    parts = ", ".join(f"{k} {v}" for k, v in sorted(actions.items()))
    return (f"{len(segments)} segments, {sum(len(s.get('blocks', [])) for s in segments)} blocks, "
            f"{len(traces)} trace entries ({parts}), {frames} stack frames in the entries")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True, help="folder for the snapshot and the pair")
    ap.add_argument("--name", default="cuda_transformer_mem", help="file name prefix (default cuda_transformer_mem)")
    ap.add_argument("--steps", type=int, default=2, help="recorded steps, as tracetui record --steps (default 2)")
    ap.add_argument("--max-entries", type=int, default=10000, help="history entries kept (default 10000)")
    ap.add_argument("--stacks", choices=("python", "all"), default="python",
                    help="frames recorded per entry: python (default) or all (C++ too: much larger)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("memory_snapshot: torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"memory_snapshot: skipped: torch {torch.__version__} sees no CUDA device "
              "(torch.cuda.is_available() is False); the snapshot records the CUDA caching allocator")
        return EXIT_NO_CUDA
    from tracetui.cli.record import record

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks=args.stacks)
    try:
        result = record(out, args.name, steps=args.steps, device="cuda")
        snap = torch.cuda.memory._snapshot()
        path = out / f"{args.name}_snapshot.pickle"
        torch.cuda.memory._dump_snapshot(str(path))
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    for p in (result.et_path, result.kineto_path, path):
        print(f"{p} {p.stat().st_size:,} bytes")
    print(f"snapshot: {snapshot_counts(snap)}; max_entries {args.max_entries}, stacks {args.stacks}; "
          f"torch {torch.__version__}, device {torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
