"""Kernel time to write 1 GiB into the page cache, by size of each write() call (``pipeline.WRITE_BYTES``).

    python benchmarks/write_size_bench.py [--dir DIR] [--rounds 3]

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

TOTAL = 1 << 30
SIZES = {"16 MiB": 16 << 20, "4 MiB": 4 << 20, "1 MiB": 1 << 20, "256 KiB": 256 << 10, "64 KiB": 64 << 10}


def write_once(path: Path, call: int, buffer: np.ndarray) -> tuple[float, float]:
    path.unlink(missing_ok=True)
    os.sync()
    time.sleep(1)  # let the deleted file's discards settle
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    before, start = os.times(), time.perf_counter()
    try:
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
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    buffer = np.random.default_rng(0).integers(0, 255, 16 << 20, np.uint8)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in SIZES}
    for _ in range(args.rounds):
        for name, call in SIZES.items():
            results[name].append(write_once(args.dir / "write-size-bench.bin", call, buffer))
    print(f"1 GiB into the page cache of {args.dir}, by write() size: (wall s, CPU s) per round")
    for name, runs in results.items():
        print(f"{name:>8}  " + "  ".join(f"({wall:.2f}, {cpu:.2f})" for wall, cpu in runs))


if __name__ == "__main__":
    main()
