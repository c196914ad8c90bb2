"""A JAX profile with one launch per kernel, copies both ways and many steps (issue 38).

    python scripts/gpu_box/jax_xplane_ops.py --out FILE [--steps 20] [--width 2048] [--no-flags]

``jax_profile.py`` (issue 36) records a step that XLA runs as one CUDA graph: 15 kernels under one
``cuGraphLaunch``.  This one sets ``XLA_FLAGS=--xla_gpu_enable_command_buffer=`` (no command
buffers: each kernel launched by its own call, each XLA op a thunk of its own on the host), trains
a 3-layer MLP for ``--steps`` steps under ``jax.profiler.trace``, each step in a
``StepTraceAnnotation("train")``, with a host-to-device copy of the batch (``jax.device_put``) every
step and a device-to-host copy of the loss every 5th.  The profiler's ``<host>.xplane.pb`` is
copied to ``--out`` (gzipped as ``--out``.gz when over 15 MiB).  ``--no-flags``: keep XLA's
command buffers (what a plain ``jax.profiler.trace`` run gives).  Exit 3 without a GPU.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

EXIT_NO_GPU = 3
NO_COMMAND_BUFFERS = "--xla_gpu_enable_command_buffer="


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--no-flags", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if not args.no_flags:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + NO_COMMAND_BUFFERS).strip()
    import jax
    import jax.numpy as jnp
    import numpy as np

    if not any(d.platform == "gpu" for d in jax.devices()):
        print(f"jax_xplane_ops: no GPU ({jax.devices()})")
        return EXIT_NO_GPU
    print(f"jax {jax.__version__}; devices {jax.devices()}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    rng = np.random.default_rng(0)
    d_in, w, d_out, batch = 512, args.width, 64, 1024
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = [(jax.random.normal(k, (a, b)) * 0.02, jnp.zeros(b))
              for k, (a, b) in zip(keys, ((d_in, w), (w, w), (w, d_out)))]
    batches = [rng.standard_normal((batch, d_in), dtype=np.float32) for _ in range(4)]
    y = jnp.ones((batch, d_out))

    def loss_fn(p, x, y):
        h = x
        for i, (wt, b) in enumerate(p):
            h = h @ wt + b
            if i < len(p) - 1:
                h = jax.nn.gelu(h)
        return jnp.mean((h - y) ** 2)

    @jax.jit
    def train_step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), loss

    params, loss = train_step(params, jax.device_put(batches[0]), y)  # compile outside the profile
    loss.block_until_ready()
    logdir = Path(tempfile.mkdtemp(prefix="jax_ops_"))
    try:
        with jax.profiler.trace(str(logdir)):
            for i in range(args.steps):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    params, loss = train_step(params, jax.device_put(batches[i % 4]), y)
                    if i % 5 == 4:
                        print(f"step {i}: loss {float(loss):.6f}")  # a device-to-host copy
            loss.block_until_ready()
        found = sorted(logdir.rglob("*.xplane.pb"))
        if not found:
            print("jax_xplane_ops: the profiler wrote no .xplane.pb", file=sys.stderr)
            return 1
        data = found[0].read_bytes()
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if len(data) > 15 << 20:
        out = out.with_name(out.name + ".gz")
        out.write_bytes(gzip.compress(data, 6))
    else:
        out.write_bytes(data)
    print(f"{out} {out.stat().st_size:,} bytes ({len(data):,} bytes of XSpace)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
