"""Kernel time to write 1 GiB into the page cache, by size of each write() call (``pipeline.WRITE_BYTES``).

    python benchmarks/write_size_bench.py [--dir DIR] [--rounds 3] [--sizes "1 MiB,256 KiB"]

Each size is run twice: into a plain new file, and into one first allocated whole (``fallocate``, as
``write/sink.py`` does since 2026-12-03), where ext4 has no per-block delayed allocation left to do.

Each case writes the same 1 GiB to a new file in DIR (default: the bench cache) from a 16 MiB buffer,
in calls of the given size; the file is deleted and ``sync`` run before each case, the cases taking
turns. Printed: wall and CPU (user + system) seconds per round. On the development VM (Linux 6.18,
ext4) 16 MiB calls cost 2-4 s of CPU and 256 KiB calls 0.3-1 s: the page cache allocates folios as
large as each write, and large ones are costly to find.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from tf2torch.write.sink import Sink

TOTAL = 1 << 30
SIZES = {"16 MiB": 16 << 20, "4 MiB": 4 << 20, "1 MiB": 1 << 20, "256 KiB": 256 << 10, "64 KiB": 64 << 10}


def write_once(path: Path, call: int, buffer: np.ndarray, allocate: bool) -> tuple[float, float]:
    path.unlink(missing_ok=True)
    os.sync()
    time.sleep(1)  # let the deleted file's discards settle
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    before, start = os.times(), time.perf_counter()
    try:
        if allocate:
            Sink(path, fd).reserve(TOTAL)
        offset = 0
        while offset < TOTAL:
            for begin in range(0, buffer.nbytes, call):
                offset += os.pwrite(fd, buffer[begin:begin + call], offset)
    finally:
        os.close(fd)
    wall, after = time.perf_counter() - start, os.times()
    path.unlink()
    return wall, (after.user - before.user) + (after.system - before.system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "tf2torch-bench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", help="comma-separated, from: " + ", ".join(SIZES))
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    sizes = {n: SIZES[n] for n in args.sizes.split(",")} if args.sizes else SIZES
    buffer = np.random.default_rng(0).integers(0, 255, 16 << 20, np.uint8)
    cases = [(f"{name}{' fallocated' if allocate else ''}", call, allocate)
             for name, call in sizes.items() for allocate in (False, True)]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in cases}
    for _ in range(args.rounds):
        for name, call, allocate in cases:
            results[name].append(write_once(args.dir / "write-size-bench.bin", call, buffer, allocate))
    print(f"1 GiB into the page cache of {args.dir}, by write() size: (wall s, CPU s) per round")
    for name, runs in results.items():
        print(f"{name:>19}  " + "  ".join(f"({wall:.2f}, {cpu:.2f})" for wall, cpu in runs))


if __name__ == "__main__":
    main()
