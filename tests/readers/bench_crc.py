"""CRC32C throughput: the crc32c package, the numpy fallback and a byte-at-a-time Python loop.

Run: ``python -m tests.readers.bench_crc [--mb 100] [--loop-mb 100]``. Prints numbers, asserts nothing
about time (machines differ); it does check that all three agree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tf2torch.readers import crc


def byte_loop(data: bytes, value: int = 0) -> int:
    """The textbook one-table loop: the baseline the numpy fallback must beat by a wide margin."""
    table = crc._T8.tolist()
    value ^= 0xFFFFFFFF
    for byte in data:
        value = (value >> 8) ^ table[(value ^ byte) & 0xFF]
    return value ^ 0xFFFFFFFF


def timed(label: str, fn, data, megabytes: float) -> int:
    start = time.perf_counter()
    value = fn(data)
    seconds = time.perf_counter() - start
    print(f"{label:<28} {megabytes:7.1f} MB  {seconds:8.3f} s  {megabytes / seconds:9.1f} MB/s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=100, help="buffer size for the fast paths")
    parser.add_argument("--loop-mb", type=float, default=4, help="buffer size for the Python byte loop")
    args = parser.parse_args()
    data = np.random.default_rng(0).integers(0, 256, int(args.mb * 2**20), dtype=np.uint8)
    raw = data.tobytes()
    print(f"selected backend: {crc.BACKEND}")
    results = {}
    try:
        import crc32c as fast

        results["pkg"] = timed("crc32c package", lambda d: fast.crc32c(d), raw, args.mb)
    except ImportError:
        print("crc32c package: not installed")
    results["numpy"] = timed("numpy fallback", crc.crc32c_numpy, data, args.mb)
    loop_bytes = raw[: int(args.loop_mb * 2**20)]
    loop = timed("python byte loop", byte_loop, loop_bytes, args.loop_mb)
    if loop != crc.crc32c_numpy(loop_bytes) or len(set(results.values())) != 1:
        raise SystemExit("CRC implementations disagree")


if __name__ == "__main__":
    main()
