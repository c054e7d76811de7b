"""OpenBLAS transposes (tf2torch/blas.py): bit-exact where the docstring says, refused everywhere else.

numpy's own ``a.T`` copy is the reference (it moves bytes, never arithmetic). These run where numpy
ships scipy-openblas (its wheels do); elsewhere ``available()`` is False and the tests say so by failing
the first one, since every CI machine here installs numpy from wheels.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tf2torch import blas
from tf2torch.strided import permute

FLOATS = [np.float32, np.float64]


def _tricky(shape: tuple[int, int], dtype: type, seed: int) -> np.ndarray:
    """Random values plus every special class a weight can hold except signalling NaNs."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    info = np.finfo(dtype)
    flat = a.reshape(-1)
    special = [info.smallest_subnormal, -info.smallest_subnormal, info.smallest_normal * 0.5, -0.0, 0.0,
               np.inf, -np.inf, np.nan, info.max, info.min]
    quiet_nan = 0x7FC00000 if dtype == np.float32 else 0x7FF8000000000000
    payload = np.array([quiet_nan | 0x1234], flat.view(np.uint32 if dtype == np.float32 else np.uint64).dtype)
    special = np.concatenate([np.array(special, dtype), payload.view(dtype)])  # a NaN payload is kept
    n = min(len(special), flat.size)
    flat[:n] = special[:n]
    return a


def test_openblas_is_found_with_numpy_wheels() -> None:
    assert blas.available(), "numpy's scipy-openblas not found: conversions run at half speed (see tf2torch/blas.py)"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (2, 9), (3, 700), (700, 3), (257, 1029), (1024, 512)])
def test_bit_exact_against_numpy(dtype: type, shape: tuple[int, int]) -> None:
    a = _tricky(shape, dtype, seed=sum(shape))
    out = np.full(shape[::-1], 7, dtype)
    assert blas.can_transpose(a, out)
    blas.transpose_2d(a, out)
    want = np.ascontiguousarray(a.T)
    differ = int((out.view(np.uint8) != want.view(np.uint8)).sum())
    print(f"{np.dtype(dtype).name} {shape}: {differ} differing bytes")
    assert differ == 0


@pytest.mark.parametrize("dtype", FLOATS)
def test_strided_source_and_destination(dtype: type) -> None:
    """A band of a transposed view (lda > cols) into a band of a wider buffer (ldb > rows)."""
    a = _tricky((300, 500), dtype, seed=1)
    out = np.zeros((900, 400), dtype)
    src, dst = a[:, 100:340], out[:240, 50:350]
    blas.transpose_2d(src, dst)
    assert np.array_equal(out[:240, 50:350].view(np.uint8), np.ascontiguousarray(src.T).view(np.uint8))
    assert not out[:240, :50].any() and not out[:240, 350:].any() and not out[240:].any()


def test_signalling_nans_come_out_quiet_and_nothing_else_changes() -> None:
    """The one documented difference: OpenBLAS multiplies by 1.0, which quiets a signalling NaN."""
    bits = np.random.default_rng(0).integers(0, 2**32, size=(400, 300), dtype=np.uint64).astype(np.uint32)
    out = np.empty((300, 400), np.float32)
    blas.transpose_2d(bits.view(np.float32), out)
    want = np.ascontiguousarray(bits.T)
    signalling = ((want & 0x7FC00000) == 0x7F800000) & ((want & 0x003FFFFF) != 0)
    got = out.view(np.uint32)
    print(f"random bit patterns: {int(signalling.sum())} signalling NaNs, "
          f"{int((got != want).sum())} values differ")
    assert signalling.any()
    assert np.array_equal(got[~signalling], want[~signalling])
    assert np.array_equal(got[signalling], want[signalling] | 0x00400000)  # the quiet bit, payload kept


@pytest.mark.parametrize("make", [
    lambda: (np.zeros((4, 6), np.int32), np.zeros((6, 4), np.int32)),  # ints: a multiply would corrupt them
    lambda: (np.zeros((4, 6), np.uint16), np.zeros((6, 4), np.uint16)),  # bfloat16 bits
    lambda: (np.zeros((4, 6), ">f4"), np.zeros((6, 4), ">f4")),  # not native byte order
    lambda: (np.zeros((4, 12), np.float32)[:, ::2], np.zeros((6, 4), np.float32)),  # inner stride 2
    lambda: (np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32)),  # not the transposed shape
    lambda: (np.zeros((4, 6), np.float32), np.zeros((6, 4), np.float64)),  # dtypes differ
    lambda: (np.zeros((4, 6), np.float32)[::-1], np.zeros((6, 4), np.float32)),  # rows run backwards
    lambda: (np.zeros((4, 6), np.float32), np.zeros((6, 4), np.float32)[::-1]),  # destination rows backwards
    lambda: (lambda a: (a, a))(np.zeros((6, 6), np.float32)),  # in place: the destination is the source
    lambda: (np.zeros((4, 6), np.float32), np.broadcast_to(np.float32(0), (6, 4))),  # read-only, stride 0
])
def test_refused_layouts(make) -> None:
    src, dst = make()
    assert not blas.can_transpose(src, dst)
    with pytest.raises(ValueError):
        blas.transpose_2d(src, dst)


def test_size_one_axes_take_any_stride() -> None:
    """numpy gives a size-1 axis an arbitrary stride; BLAS must not see it as the leading dimension."""
    a = np.arange(7, dtype=np.float32).reshape(1, 7)
    out = np.zeros((7, 1), np.float32)
    assert blas.can_transpose(a, out)
    blas.transpose_2d(a, out)
    assert np.array_equal(out, a.T)
    col = np.arange(5, dtype=np.float64).reshape(5, 1)
    row = np.zeros((1, 5), np.float64)
    blas.transpose_2d(col, row)
    assert np.array_equal(row, col.T)


def test_flush_to_zero_thread_falls_back_to_numpy() -> None:
    """With denormals flushed on a thread, OpenBLAS would zero subnormal weights there: not used."""
    torch = pytest.importorskip("torch")
    a = _tricky((64, 48), np.float32, seed=3)
    seen: dict[str, object] = {}

    def run() -> None:
        torch.set_flush_denormal(True)  # sets FTZ/DAZ for this thread only
        seen["usable"] = blas.can_transpose(a, np.empty((48, 64), np.float32))
        seen["out"] = permute(np.ascontiguousarray(np.tile(a, (64, 64))), (1, 0))  # big enough to be blocked

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen["usable"] is False
    want = np.ascontiguousarray(np.tile(a, (64, 64)).T)
    assert np.array_equal(np.asarray(seen["out"]).view(np.uint32), want.view(np.uint32))
    assert blas.can_transpose(a, np.empty((48, 64), np.float32))  # this thread is unaffected


@pytest.mark.parametrize("dtype", FLOATS)
def test_permute_same_bytes_with_and_without_openblas(dtype: type) -> None:
    a = _tricky((1500, 900), dtype, seed=5)
    fast = permute(a, (1, 0))
    with blas.numpy_only():
        slow = permute(a, (1, 0))
    assert np.array_equal(fast.view(np.uint8), slow.view(np.uint8))
