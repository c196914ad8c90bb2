"""A JAX profile of a jitted training step (issue 36, step "jax").

    python scripts/gpu_box/jax_profile.py --out-dir DIR [--steps 5] [--platform gpu|cpu]

Trains a small MLP (two dense layers, tanh, mean squared error, plain SGD; the whole step is one
``jax.jit``) for a warm-up step (compilation) and then ``--steps`` steps under
``jax.profiler.trace(logdir, create_perfetto_trace=True)``.  The profiler writes
``logdir/plugins/profile/<run>/<host>.xplane.pb`` (an ``XSpace``: ``../shared/FORMATS.md``,
"XPlane") and, when the installed profiler makes them, a Chrome-trace ``<host>.trace.json.gz``
and ``perfetto_trace.json.gz``; they are copied to ``DIR/jax_<platform>_step.xplane.pb``,
``.trace.json.gz`` and ``.perfetto_trace.json.gz`` (the last only when its bytes differ).

Prints the JAX version, the devices, each file kept with its size, and the plane names found in
the XSpace (read as plain bytes: no protobuf needed).  Exit 3 when ``--platform gpu`` is asked for
and JAX has no GPU, 2 when JAX is missing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

EXIT_NO_GPU = 3
#: plane names of an XSpace (``/device:GPU:0``, ``/host:CPU`` ...), found in the bytes
PLANE_NAME = re.compile(rb"/(?:device|host):[A-Za-z_]+(?::\d+)?")


def plane_names(xplane: bytes) -> list[str]:
    """The distinct plane-like names in a serialized XSpace, in order of first appearance."""
    seen: dict[str, None] = {}
    for m in PLANE_NAME.finditer(xplane):
        seen.setdefault(m.group().decode(), None)
    return list(seen)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--steps", type=int, default=5, help="profiled steps after one warm-up step (default 5)")
    ap.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--width", type=int, default=1024, help="hidden width of the MLP (default 1024)")
    args = ap.parse_args(argv)
    # take GPU memory as needed, not 75 % of it up front (torch may share the GPU)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if args.platform == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax_profile: jax is not installed", file=sys.stderr)
        return 2
    devices = jax.devices()
    if args.platform == "gpu" and not any(d.platform == "gpu" for d in devices):
        print(f"jax_profile: skipped: jax {jax.__version__} has no GPU device (devices: {devices})")
        return EXIT_NO_GPU
    print(f"jax {jax.__version__}; devices {devices}")

    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    d_in, width, d_out, batch = 256, args.width, 16, 512
    params = {"w1": jax.random.normal(k1, (d_in, width)) * 0.02, "b1": jnp.zeros(width),
              "w2": jax.random.normal(k2, (width, d_out)) * 0.02, "b2": jnp.zeros(d_out)}
    x = jax.random.normal(k3, (batch, d_in))
    y = jnp.ones((batch, d_out))

    def loss_fn(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    @jax.jit
    def train_step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), loss

    params, loss = train_step(params, x, y)  # compile outside the profile
    loss.block_until_ready()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    logdir = Path(tempfile.mkdtemp(prefix="jax_profile_"))
    try:
        with jax.profiler.trace(str(logdir), create_perfetto_trace=True):
            for i in range(args.steps):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    params, loss = train_step(params, x, y)
            loss.block_until_ready()
        files = sorted(p for p in logdir.rglob("*") if p.is_file())
        stem = f"jax_{args.platform}_step"
        kept: list[tuple[Path, Path]] = []
        contents: set[bytes] = set()
        # <host>.xplane.pb, <host>.trace.json.gz, then perfetto_trace.json.gz (kept if it differs)
        for suffix, name in ((".xplane.pb", "xplane.pb"), (".trace.json.gz", "trace.json.gz"),
                             ("perfetto_trace.json.gz", "perfetto_trace.json.gz")):
            for p in files:
                data = p.read_bytes()
                if not p.name.endswith(suffix) or data in contents or any(src == p for src, _ in kept):
                    continue
                dst = out / f"{stem}.{name}"
                dst.write_bytes(data)
                contents.add(data)
                kept.append((p, dst))
                break
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    print(f"final loss {float(loss):.6f} after {args.steps + 1} steps")
    for src, dst in kept:
        print(f"{dst} {dst.stat().st_size:,} bytes (written as {src.name})")
        if dst.name.endswith(".xplane.pb"):
            print(f"  planes: {', '.join(plane_names(dst.read_bytes())) or '(none found)'}")
    if not any(d.name.endswith(".xplane.pb") for _, d in kept):
        print("jax_profile: the profiler wrote no .xplane.pb", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
