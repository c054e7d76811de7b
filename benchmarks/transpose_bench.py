"""GB/s of the layout copies the writers spend their time in: naive vs numpy-blocked vs blocked (with
OpenBLAS where it can) vs torch vs memcpy.

    python benchmarks/transpose_bench.py            # the two Dense shapes of the brief
    python benchmarks/transpose_bench.py --all      # plus bfloat16 and conv kernels

GB/s counts the array's bytes once (what a reader of the output sees), best of ``--repeat`` runs with
the candidates interleaved so a noisy neighbour hurts them all alike. "memcpy" is ``arr.copy()``: the
ceiling for any copy of that array on this machine.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

from tf2torch import blas
from tf2torch.strided import permute

CASES = [  # (label, shape, axes, numpy dtype)
    ("dense 1024x4096 f32", (1024, 4096), (1, 0), "<f4"),
    ("dense 4096x4096 f32", (4096, 4096), (1, 0), "<f4"),
]
MORE = [
    ("dense 4096x1024 f32", (4096, 1024), (1, 0), "<f4"),
    ("dense 4096x4096 bf16", (4096, 4096), (1, 0), "<u2"),
    ("conv 3x3x512x512 f32", (3, 3, 512, 512), (3, 2, 0, 1), "<f4"),
    ("conv 3x3x256x1024 f32", (3, 3, 256, 1024), (3, 2, 0, 1), "<f4"),
]


def candidates(array: np.ndarray, axes: tuple[int, ...]) -> dict[str, Callable[[], object]]:
    runs: dict[str, Callable[[], object]] = {
        "memcpy": lambda: array.copy(),
        "naive": lambda: np.ascontiguousarray(array.transpose(axes)),
        "blocked": lambda: permute(array, axes),  # what tf2torch runs: OpenBLAS where it can (tf2torch/blas.py)
        "numpy": lambda: _numpy_only(permute, array, axes),  # the blocked numpy copy alone
    }
    try:
        import torch
    except ImportError:
        return runs
    tensor = torch.from_numpy(array)
    runs["torch"] = lambda: tensor.permute(axes).contiguous()  # .t().contiguous() for the 2-D cases
    return runs


def _numpy_only(fn: Callable[..., object], *args: object) -> object:
    with blas.numpy_only():
        return fn(*args)


def measure(array: np.ndarray, axes: tuple[int, ...], repeat: int) -> dict[str, float]:
    runs = candidates(array, axes)
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: array.nbytes / seconds / 1e9 for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--all", action="store_true", help="also bfloat16 and conv kernels")
    args = parser.parse_args()
    try:
        import torch

        threads = f"torch threads {torch.get_num_threads()}"
    except ImportError:
        threads = "torch not installed"
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, {threads}; GB/s, best of {args.repeat}")
    rng = np.random.default_rng(0)
    print(f"OpenBLAS transposes: {'found' if blas.available() else 'not found (blocked = numpy)'}")
    print(f"{'case':24} {'naive':>7} {'numpy':>7} {'blocked':>8} {'torch':>7} {'memcpy':>7}  blocked/naive")
    for label, shape, axes, dtype in CASES + (MORE if args.all else []):
        array = rng.integers(0, 2048, size=shape).astype(dtype)
        gbs = measure(array, axes, args.repeat)
        print(f"{label:24} {gbs['naive']:7.2f} {gbs['numpy']:7.2f} {gbs['blocked']:8.2f} {gbs.get('torch', float('nan')):7.2f} "
              f"{gbs['memcpy']:7.2f}  {gbs['blocked'] / gbs['naive']:.1f}x")


if __name__ == "__main__":
    main()
