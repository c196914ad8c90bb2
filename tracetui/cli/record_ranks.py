"""``tracetui record --ranks N``: record a real multi-rank training job on CPU.

N processes (``torch.multiprocessing``, spawned) form a gloo process group on this host
and train a small MLP with DistributedDataParallel (gradients all-reduced in buckets),
then run a few explicit collectives each step: ``all_reduce``, ``broadcast`` from rank
0 and ``all_gather``.  One rank, the *straggler* (default: the last), sleeps
``--delay-ms`` before the explicit collectives, so the others wait for it there: the
cross-rank summary must rank it first.  Each rank runs under the PyTorch profiler with
its own ExecutionTraceObserver (one skipped step, one warm-up, ``--steps`` recorded) and
writes ``rank<R>_kineto.json.gz`` (with ``distributedInfo``: backend gloo, rank, world
size) and ``rank<R>_et.json.gz`` into ``<out-dir>/<name>/``.  gzip header times are 0.
Kineto times are µs; on CPU the collectives are the ``c10d::*`` ops of the main thread
and the ``gloo:*`` annotations of gloo's worker threads, which span the transfer and the
wait for the other ranks.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from ..io.files import file_chunks, gzip_pieces, write_atomically

#: model and batch sizes (small: each rank's pair stays around 100 kB gzipped)
D_IN, D_HIDDEN, D_OUT, BATCH = 32, 64, 8, 16
#: elements of the tensors of the explicit collectives
COMM_NUMEL = 4096


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gzip(src: Path, dst: Path) -> None:
    write_atomically(dst, gzip_pieces(file_chunks(src)), durable=True)
    src.unlink()


def _rank_main(rank: int, world: int, port: int, out: str, steps: int, straggler: int, delay_ms: float,
               seed: int) -> None:
    """One rank (runs in a spawned process)."""
    import torch
    import torch.distributed as dist
    from torch.profiler import (
        ExecutionTraceObserver,
        ProfilerActivity,
        profile,
        record_function,
        schedule,
    )

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, D_HIDDEN), torch.nn.GELU(), torch.nn.Linear(D_HIDDEN, D_OUT))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(seed + rank)
    out_dir = Path(out)
    et_tmp, k_tmp = out_dir / f"rank{rank}_et.json", out_dir / f"rank{rank}_kineto.json"
    observer = ExecutionTraceObserver().register_callback(str(et_tmp))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(k_tmp)), record_shapes=True,
                 execution_trace_observer=observer) as prof:
        for _ in range(2 + steps):
            x, y = torch.randn(BATCH, D_IN, generator=gen), torch.randn(BATCH, D_OUT, generator=gen)
            with record_function("forward"):
                loss = torch.nn.functional.mse_loss(ddp(x), y)
            with record_function("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()  # DDP all-reduces the gradient buckets
            with record_function("optimizer_step"):
                opt.step()
            with record_function("explicit_collectives"):
                if rank == straggler:
                    with record_function("straggler_delay"):
                        time.sleep(delay_ms / 1000.0)
                t = torch.full((COMM_NUMEL,), float(rank))
                dist.all_reduce(t)
                dist.broadcast(t, src=0)
                parts = [torch.empty(COMM_NUMEL) for _ in range(world)]
                dist.all_gather(parts, t)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()
    _gzip(et_tmp, out_dir / f"rank{rank}_et.json.gz")
    _gzip(k_tmp, out_dir / f"rank{rank}_kineto.json.gz")


def record_job(out_dir: str | os.PathLike[str], ranks: int, *, name: str | None = None, steps: int = 2,
               straggler: int | None = None, delay_ms: float = 20.0, seed: int = 0) -> list[Path]:
    """Record the job (see the module docstring); returns the job folder's files, rank order
    (ET, Kineto for each rank).  Needs torch (the caller checks: ``record._import_torch``);
    ValueError for bad sizes."""
    if ranks < 2:
        raise ValueError(f"--ranks must be at least 2, got {ranks}")
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    straggler = ranks - 1 if straggler is None else straggler
    if not 0 <= straggler < ranks:
        raise ValueError(f"--straggler must be a rank in 0..{ranks - 1}, got {straggler}")
    import torch.multiprocessing as mp

    out = Path(out_dir) / (name or f"cpu_job{ranks}")
    out.mkdir(parents=True, exist_ok=True)
    mp.start_processes(_rank_main, args=(ranks, _free_port(), str(out), steps, straggler, delay_ms, seed),
                       nprocs=ranks, join=True, start_method="spawn")
    return [out / f"rank{r}_{kind}.json.gz" for r in range(ranks) for kind in ("et", "kineto")]
