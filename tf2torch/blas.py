"""2-D float transposes through the OpenBLAS that numpy's wheels ship (``?omatcopy``), when it is there.

numpy's own strided copy moves one element per step; the blocked copy in ``strided.py`` gets about
2 GB/s out of it on the development VM. OpenBLAS's ``somatcopy``/``domatcopy`` transpose with vector
shuffles: 4.4-6 GB/s on the same shapes (``benchmarks/transpose_bench.py``), and the layout copies are
most of the CPU a checkpoint conversion spends. numpy >= 2 wheels link ``scipy-openblas`` (symbols
prefixed ``scipy_``, 64-bit integers in the ``64_`` build); it is already loaded when numpy is, so
``ctypes`` only looks the function up. Any other numpy (MKL, a system BLAS, an unknown ABI) finds nothing
here and the numpy copy is used: this is a speed-up, never a requirement.

Exactness: the kernels compute ``alpha * x`` with ``alpha = 1.0``, exact for every finite value, ±0 and
±inf, and a quiet NaN keeps its payload. Two cases are not bit copies: a *signalling* NaN comes out quiet
(any arithmetic on it yields that same quiet NaN, so a model computes the same numbers), and with the
CPU's flush-to-zero / denormals-are-zero modes on (a per-thread setting, e.g. ``torch.set_flush_denormal``)
subnormals would become 0. ``can_transpose`` therefore checks, on the calling thread, that a subnormal and
the ABI survive a small probe, and says no (the caller copies with numpy) when they do not.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

_ROW_MAJOR, _TRANS = 101, 112  # CBLAS_ORDER.CblasRowMajor, CBLAS_TRANSPOSE.CblasTrans

Omatcopy = Callable[..., None]
_lock = threading.Lock()
_kernels: dict[str, Omatcopy] | None = None
_probed = threading.local()  # per thread: FTZ/DAZ are per-thread CPU state


def can_transpose(src: np.ndarray, dst: np.ndarray) -> bool:
    """Whether ``transpose_2d(src, dst)`` will run: 2-D float32/float64 arrays with unit inner strides,
    OpenBLAS found, and the probe passed on this thread (see the module docstring)."""
    kernel = _kernels_or_none().get(src.dtype.str) if src.dtype.isnative else None
    if kernel is None or src.dtype != dst.dtype or src.ndim != 2 or dst.shape != src.shape[::-1]:
        return False
    size, (rows, cols) = src.itemsize, src.shape
    if src.strides[1] != size or dst.strides[1] != size or src.strides[0] % size or dst.strides[0] % size:
        return False
    # Rows that run forward without overlapping (BLAS wants lda >= cols, ldb >= rows; a size-1 axis's stride
    # is arbitrary in numpy), a writeable destination apart from the source.
    if (rows > 1 and src.strides[0] < cols * size) or (cols > 1 and dst.strides[0] < rows * size):
        return False
    if not dst.flags.writeable or np.may_share_memory(src, dst):
        return False
    return _probe_ok(src.dtype.str, kernel)


def transpose_2d(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = src.T`` through OpenBLAS; only after ``can_transpose`` said yes for such arrays."""
    if not can_transpose(src, dst):
        raise ValueError(f"blas.transpose_2d: cannot transpose {src.shape} {src.dtype} into {dst.shape} {dst.dtype}")
    rows, cols = src.shape
    if rows and cols:
        size = src.itemsize
        lda = src.strides[0] // size if rows > 1 else cols
        ldb = dst.strides[0] // size if cols > 1 else rows
        _call(_kernels_or_none()[src.dtype.str], rows, cols, src.ctypes.data, lda, dst.ctypes.data, ldb)


@contextmanager
def numpy_only() -> Iterator[None]:
    """Within the block, ``can_transpose`` says no (tests and the benchmark compare both paths; it swaps a
    module global, so not while another thread converts)."""
    global _kernels
    saved, _kernels = _kernels, {}
    try:
        yield
    finally:
        _kernels = saved


def available() -> bool:
    """Whether OpenBLAS's transposes were found (for the benchmark and the tests)."""
    return bool(_kernels_or_none())


def _call(kernel: Omatcopy, rows: int, cols: int, a: int, lda: int, b: int, ldb: int) -> None:
    # can_transpose checked lda >= cols and ldb >= rows; BLAS also wants them >= 1 (an empty axis).
    kernel(_ROW_MAJOR, _TRANS, rows, cols, 1.0, a, max(lda, 1), b, max(ldb, 1))


def _probe_ok(dtype: str, kernel: Omatcopy) -> bool:
    """Transpose a small strided probe holding a subnormal and check every bit (once per thread and dtype)."""
    done: dict[str, bool] = getattr(_probed, "results", None) or {}
    _probed.results = done
    if dtype not in done:
        info = np.finfo(np.dtype(dtype))
        src = np.arange(1, 3 * 7 + 1, dtype=dtype).reshape(3, 7) * np.asarray(3.25, dtype)
        src[1, 2], src[2, 3], src[0, 4] = info.smallest_subnormal, -0.0, -info.smallest_subnormal
        dst = np.full((5, 4), 7.0, dtype)  # the first 3 columns of a wider destination: ldb != rows
        _call(kernel, 3, 5, src.ctypes.data, 7, dst.ctypes.data, 4)
        want = np.concatenate([src[:, :5].T, np.full((5, 1), 7.0, dtype)], axis=1)
        done[dtype] = want.tobytes() == dst.tobytes()
    return done[dtype]


def _kernels_or_none() -> dict[str, Omatcopy]:
    global _kernels
    if _kernels is None:
        with _lock:
            if _kernels is None:
                _kernels = _load()
    return _kernels


def _load() -> dict[str, Omatcopy]:
    """``{dtype.str: omatcopy}`` from numpy's bundled scipy-openblas, or {} (see the module docstring)."""
    if os.environ.get("TF2TORCH_NO_BLAS"):  # the tests compare both paths; users can rule it out
        return {}
    blas = getattr(getattr(np, "__config__", None), "CONFIG", {}).get("Build Dependencies", {}).get("blas", {})
    if blas.get("name") != "scipy-openblas":
        return {}
    ilp64 = "USE64BITINT" in str(blas.get("openblas configuration", ""))
    suffix, index = ("64_", ctypes.c_int64) if ilp64 else ("", ctypes.c_int32)
    root = os.path.dirname(os.path.dirname(np.__file__))
    found = sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas*")) +
                   glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "libscipy_openblas*")))
    kernels: dict[str, Omatcopy] = {}
    for path in found:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for dtype, name, scalar in (("<f4", "somatcopy", ctypes.c_float), ("<f8", "domatcopy", ctypes.c_double)):
            fn = getattr(lib, f"scipy_cblas_{name}{suffix}", None)
            if fn is None:
                continue
            fn.argtypes = [ctypes.c_int, ctypes.c_int, index, index, scalar,
                           ctypes.c_void_p, index, ctypes.c_void_p, index]
            fn.restype = None
            kernels[dtype] = fn
        if kernels:
            break
    return kernels
