"""Record a matching Execution Trace + Kineto trace pair of a small training run.

``python -m tracetui.cli.record`` (or ``tracetui record``) trains a tiny transformer block
(token embedding, single-head self-attention written out as q/k/v projections, a
matmul for the scores, softmax, a matmul with v and an output projection; an MLP of
Linear, GELU, Linear; LayerNorms and residual adds; a cross-entropy loss) with
forward, backward and an AdamW step, under the PyTorch profiler with an
``ExecutionTraceObserver`` attached.  The profiler's schedule skips one step, warms
up one and records ``--steps`` steps; the observer is started and stopped by the
profiler for exactly the recorded steps, so every ET node's ``rf_id`` attr equals
the ``Record function id`` arg of the Kineto ``cpu_op``/``user_annotation`` event
for the same operator call (see ``shared/FORMATS.md``, "Linking ET to Kineto").

Both files are written gzipped (``<name>_et.json.gz`` and ``<name>_kineto.json.gz``,
gzip header time set to 0 so the compression itself adds no changing bytes).
Times inside the files are the profiler's own: Kineto ``ts``/``dur`` in microseconds;
ET ``start_ts``/``finish_ts`` as the observer writes them (milliseconds of a
monotonic clock with torch 2.13).

torch is an optional dependency (``pip install 'tracetui[record]'``): it is imported
only when a recording starts, so ``--help`` works without it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import one_line

NAME = "record"
TORCH_MISSING_MESSAGE = "torch is not installed: pip install 'tracetui[record]'"

#: Exit code for "cannot record here" (torch missing, CUDA asked for but absent).
EXIT_UNAVAILABLE = 2

#: Profiler schedule around the recorded steps: steps skipped, then warm-up steps.
WAIT_STEPS = 1
WARMUP_STEPS = 1

#: Model size; small on purpose so the CPU pair stays well under 1.5 MB gzipped.
VOCAB = 64
D_MODEL = 32
D_HIDDEN = 64
SEQ_LEN = 16
BATCH = 4


class RecordUnavailableError(RuntimeError):
    """Recording cannot run on this machine (torch missing, CUDA absent); one-line message."""


@dataclass(frozen=True)
class RecordResult:
    """Where a recording went and what it recorded."""

    et_path: Path
    kineto_path: Path
    #: "cpu" or "cuda"
    device: str
    #: number of training steps inside the recorded window
    steps: int
    torch_version: str


def _import_torch() -> Any:
    """Import torch, or raise RecordUnavailableError with the install hint."""
    try:
        import torch
        import torch.profiler  # noqa: F401  (submodule used below)
    except ImportError:
        raise RecordUnavailableError(TORCH_MISSING_MESSAGE) from None
    return torch


def resolve_device(torch: Any, device: str) -> str:
    """Map ``auto|cpu|cuda`` to the device to use; ``auto`` picks CUDA when available."""
    cuda_ok = bool(torch.cuda.is_available())
    if device == "auto":
        return "cuda" if cuda_ok else "cpu"
    if device == "cuda" and not cuda_ok:
        raise RecordUnavailableError("--device cuda was asked for but torch.cuda.is_available() is False")
    return device


def _build_model(torch: Any) -> Any:
    """The tiny transformer block (built here so torch stays a lazy import)."""
    nn = torch.nn

    class TinyTransformerBlock(nn.Module):
        """Embedding -> pre-LN single-head attention -> pre-LN MLP -> LN -> vocab head."""

        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, D_MODEL)
            self.ln_attn = nn.LayerNorm(D_MODEL)
            self.q_proj = nn.Linear(D_MODEL, D_MODEL)
            self.k_proj = nn.Linear(D_MODEL, D_MODEL)
            self.v_proj = nn.Linear(D_MODEL, D_MODEL)
            self.out_proj = nn.Linear(D_MODEL, D_MODEL)
            self.ln_mlp = nn.LayerNorm(D_MODEL)
            self.fc1 = nn.Linear(D_MODEL, D_HIDDEN)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(D_HIDDEN, D_MODEL)
            self.ln_final = nn.LayerNorm(D_MODEL)
            self.head = nn.Linear(D_MODEL, VOCAB)
            self.scale = D_MODEL**-0.5

        def forward(self, tokens: Any) -> Any:
            x = self.embed(tokens)
            h = self.ln_attn(x)
            q, k, v = self.q_proj(h), self.k_proj(h), self.v_proj(h)
            scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
            attn = torch.softmax(scores, dim=-1)
            x = x + self.out_proj(torch.matmul(attn, v))
            x = x + self.fc2(self.act(self.fc1(self.ln_mlp(x))))
            return self.head(self.ln_final(x))

    return TinyTransformerBlock()


def _gzip_file(src: Path, dst: Path) -> None:
    """Gzip ``src`` into ``dst`` with header time 0 (no changing bytes from gzip itself),
    atomically (an existing ``dst`` is replaced only by a complete file)."""
    from ..io.files import file_chunks, gzip_pieces, write_atomically

    write_atomically(dst, gzip_pieces(file_chunks(src)), durable=True)


def record(
    out_dir: str | os.PathLike[str],
    name: str | None = None,
    *,
    steps: int = 2,
    device: str = "auto",
    seed: int = 0,
) -> RecordResult:
    """Train the tiny transformer and write the ET + Kineto pair of the same run.

    ``steps`` training steps are recorded, after ``WAIT_STEPS`` skipped and
    ``WARMUP_STEPS`` warm-up steps.  ``name`` defaults to ``<device>_transformer``.
    Returns the two gzipped paths.  Raises RecordUnavailableError when torch is
    missing or CUDA is asked for but absent; ValueError for ``steps < 1``.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    torch = _import_torch()
    dev = resolve_device(torch, device)
    prefix = name or f"{dev}_transformer"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    et_path = out / f"{prefix}_et.json.gz"
    kineto_path = out / f"{prefix}_kineto.json.gz"

    from torch.profiler import (
        ExecutionTraceObserver,
        ProfilerActivity,
        profile,
        record_function,
        schedule,
    )

    torch.manual_seed(seed)
    model = _build_model(torch).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    total_steps = WAIT_STEPS + WARMUP_STEPS + steps
    batches = [torch.randint(0, VOCAB, (BATCH, SEQ_LEN + 1), generator=gen) for _ in range(total_steps)]

    activities = [ProfilerActivity.CPU]
    if dev == "cuda":
        activities.append(ProfilerActivity.CUDA)

    # the plain JSON goes next to its final .gz (the Kineto file names itself in
    # "traceName"), and is removed once compressed or when recording fails
    et_tmp = out / f"{prefix}_et.json"
    kineto_tmp = out / f"{prefix}_kineto.json"
    try:

        def on_ready(prof: Any) -> None:
            prof.export_chrome_trace(str(kineto_tmp))

        observer = ExecutionTraceObserver().register_callback(str(et_tmp))
        with profile(
            activities=activities,
            schedule=schedule(wait=WAIT_STEPS, warmup=WARMUP_STEPS, active=steps, repeat=1),
            on_trace_ready=on_ready,
            record_shapes=True,
            with_stack=False,
            execution_trace_observer=observer,
        ) as prof:
            for batch in batches:
                batch = batch.to(dev)
                inputs, targets = batch[:, :-1], batch[:, 1:]
                with record_function("forward"):
                    logits = model(inputs)
                    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
                with record_function("backward"):
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                with record_function("optimizer_step"):
                    optimizer.step()
                if dev == "cuda":
                    torch.cuda.synchronize()
                prof.step()
        # leaving the profiler unregistered the observer, which finalized et_tmp
        for tmp_file in (et_tmp, kineto_tmp):
            if not tmp_file.is_file() or tmp_file.stat().st_size == 0:
                raise RuntimeError(f"{tmp_file.name}: the profiler wrote no trace")
        _gzip_file(et_tmp, et_path)
        _gzip_file(kineto_tmp, kineto_path)
    finally:
        et_tmp.unlink(missing_ok=True)
        kineto_tmp.unlink(missing_ok=True)

    return RecordResult(et_path, kineto_path, dev, steps, str(torch.__version__))


def build_parser() -> argparse.ArgumentParser:
    """The ``tracetui record`` argument parser (needs no torch)."""
    parser = argparse.ArgumentParser(
        prog="tracetui record",
        description=(
            "Record a small transformer training run (forward, backward, AdamW) under the "
            "PyTorch profiler with the Execution Trace observer, writing the ET and Kineto "
            "traces of the same run as <name>_et.json.gz and <name>_kineto.json.gz. Needs torch."
        ),
    )
    parser.add_argument("--out-dir", default="sample_traces", help="output folder (default: sample_traces)")
    parser.add_argument(
        "--name", default=None, metavar="PREFIX", help="file name prefix (default: <device>_transformer)"
    )
    parser.add_argument(
        "--steps", type=int, default=2, help="training steps recorded, after 1 skipped and 1 warm-up (default: 2)"
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where the model runs; auto picks CUDA when available (default: auto)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and data (default: 0)")
    parser.add_argument("--ranks", type=int, default=None, metavar="N",
                        help="record a whole job instead: N CPU ranks (gloo, DDP + explicit collectives), "
                             "one ET + Kineto pair per rank in <out-dir>/<name or cpu_jobN>/ (docs/jobs.md)")
    parser.add_argument("--straggler", type=int, default=None, metavar="RANK",
                        help="with --ranks: the rank that sleeps --delay-ms before the explicit collectives "
                             "(default: the last)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="with --ranks: the straggler's delay (default 20)")
    return parser


def register(subparsers: Any) -> None:
    """``tracetui record`` in the command list; its options are those of :func:`build_parser`, which
    reads the words after ``record`` (the entry passes them through as ``argv``)."""
    subparsers.add_parser(NAME, help="record a sample ET + Kineto pair with torch (pass --help for options)",
                          add_help=False)


def run(args: argparse.Namespace) -> int:
    """Run ``tracetui record`` on ``args.argv``, the words after ``record``."""
    return main(args.argv)


def main(argv: list[str] | None = None) -> int:
    """CLI entry: record, print the ET path then the Kineto path; 2 when recording is unavailable."""
    args = build_parser().parse_args(argv)
    if args.steps < 1:
        print(f"tracetui record: --steps must be at least 1, got {args.steps}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    if args.ranks is not None:
        return _record_job(args)
    try:
        result = record(args.out_dir, args.name, steps=args.steps, device=args.device, seed=args.seed)
    except RecordUnavailableError as exc:
        print(f"tracetui record: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(one_line(str(result.et_path)))  # (the folder given: shown as every path is)
    print(one_line(str(result.kineto_path)))
    return 0


def _record_job(args: argparse.Namespace) -> int:
    """``--ranks N``: record a whole CPU job (:mod:`tracetui.cli.record_ranks`), print its files."""
    from .record_ranks import record_job

    try:
        _import_torch()
        files = record_job(args.out_dir, args.ranks, name=args.name, steps=args.steps, straggler=args.straggler,
                           delay_ms=args.delay_ms, seed=args.seed)
    except (RecordUnavailableError, ValueError) as exc:
        print(f"tracetui record: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    for f in files:
        print(one_line(str(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
