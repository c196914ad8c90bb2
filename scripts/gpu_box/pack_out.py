"""Pack a folder of results into at most N files of at most M bytes (issue 36, step "pack").

    python scripts/gpu_box/pack_out.py STAGE OUT [--max-files 7] [--max-bytes 16777216] [--prefix gpu_box]

The device tool brings back at most 8 files of 16 MiB from ``$OUT`` (the log is one of them).
Every file under STAGE (sub-folders kept as paths inside the tars) goes into uncompressed tars
``OUT/<prefix>_1.tar``, ``_2.tar`` ... filled largest file first (first fit); each tar's size is
computed exactly (512-byte header per member, data padded to 512, the 10,240-byte record) and
stays at or under ``--max-bytes``.  A file too big for one tar is gzipped first if its name does
not end in ``.gz``; one still too big, or one that finds no room in ``--max-files`` tars, is left
out and named on stderr with its size (exit 1).  Prints one line per tar: its size and members.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tarfile
from pathlib import Path

BLOCK = tarfile.BLOCKSIZE  # 512
RECORD = tarfile.RECORDSIZE  # 10240
MiB = 2**20


def member_bytes(size: int, name: str) -> int:
    """Bytes a regular file of ``size`` bytes takes in a ustar/GNU tar (long names: one more header
    and the name's blocks)."""
    extra = 0 if len(name) < 100 else 2 * BLOCK + -(-len(name) // BLOCK) * BLOCK
    return BLOCK + -(-size // BLOCK) * BLOCK + extra


def tar_bytes(members: list[int]) -> int:
    """The size of a tar holding members of these ``member_bytes``: two zero blocks, rounded to the record."""
    raw = sum(members) + 2 * BLOCK
    return -(-raw // RECORD) * RECORD


def plan(files: list[tuple[str, int]], max_files: int, max_bytes: int) -> tuple[list[list[str]], list[str]]:
    """First fit, largest first: (the tars' member names, names left out)."""
    bins: list[list[str]] = []
    sizes: list[list[int]] = []
    left: list[str] = []
    for name, size in sorted(files, key=lambda f: (-f[1], f[0])):
        mb = member_bytes(size, name)
        for b, s in zip(bins, sizes):
            if tar_bytes(s + [mb]) <= max_bytes:
                b.append(name)
                s.append(mb)
                break
        else:
            if len(bins) < max_files and tar_bytes([mb]) <= max_bytes:
                bins.append([name])
                sizes.append([mb])
            else:
                left.append(name)
    return bins, left


def gzip_big(stage: Path, max_bytes: int) -> None:
    """Gzip (in place, ``name.gz``) every file under ``stage`` too big for a tar of ``max_bytes``."""
    for p in sorted(stage.rglob("*")):
        if not p.is_file() or p.name.endswith(".gz"):
            continue
        if tar_bytes([member_bytes(p.stat().st_size, str(p.relative_to(stage)))]) > max_bytes:
            dst = p.with_name(p.name + ".gz")
            with open(p, "rb") as src, gzip.GzipFile(dst, "wb", compresslevel=6, mtime=0) as out:
                while chunk := src.read(MiB):
                    out.write(chunk)
            p.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", help="folder of the files to pack")
    ap.add_argument("out", help="folder the tars go into")
    ap.add_argument("--max-files", type=int, default=7, help="tars at most (default 7: 8 files less the log)")
    ap.add_argument("--max-bytes", type=int, default=16 * MiB, help="bytes per tar at most (default 16 MiB)")
    ap.add_argument("--prefix", default="gpu_box", help="tar names: <prefix>_<n>.tar (default gpu_box)")
    args = ap.parse_args(argv)
    stage, out = Path(args.stage), Path(args.out)
    gzip_big(stage, args.max_bytes)
    files = [(str(p.relative_to(stage)), p.stat().st_size) for p in sorted(stage.rglob("*")) if p.is_file()]
    bins, left = plan(files, args.max_files, args.max_bytes)
    out.mkdir(parents=True, exist_ok=True)
    for k, names in enumerate(bins, 1):
        path = out / f"{args.prefix}_{k}.tar"
        with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
            for name in sorted(names):
                tar.add(stage / name, arcname=name, recursive=False)
        size = path.stat().st_size
        assert size <= args.max_bytes, (path, size)
        print(f"{path.name}: {size:,} bytes, {len(names)} files: {', '.join(sorted(names))}")
    for name in left:
        print(f"pack_out: left out {name} ({(stage / name).stat().st_size:,} bytes): no room in "
              f"{args.max_files} tars of {args.max_bytes:,} bytes", file=sys.stderr)
    if not files:
        print("pack_out: nothing to pack")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
