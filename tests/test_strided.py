"""``permute``, ``contiguous`` and ``copy_into`` equal numpy's copies on every path: small, merged, tiled, odd strides."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf2torch import strided as transpose
from tf2torch.strided import contiguous, copy_into, permute

DTYPES = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "bfloat16": "<u2", "uint8": "|u1", "bool": "|b1",
          "int64": "<i8", "complex64": "<c8"}


def make(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2048, size=shape)  # exact in every dtype, float16 included (bf16: raw bits)
    return values.astype(np.dtype(DTYPES[dtype]))


def check(array: np.ndarray, axes: tuple[int, ...]) -> None:
    got = permute(array, axes)
    want = np.transpose(array, axes)
    assert type(got) is np.ndarray and got.flags.c_contiguous
    assert got.shape == want.shape and got.dtype == array.dtype
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, array)


@pytest.fixture(params=["default", "always-tiled"], ids=["default-threshold", "always-tiled"])
def paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each case as shipped and with the small-array shortcut off, so small cases test the tiles."""
    if request.param == "always-tiled":
        monkeypatch.setattr(transpose, "_SMALL", 0)
        monkeypatch.setattr(transpose, "TILE_ROWS", 3)  # tiny tiles: many partial edge tiles
        monkeypatch.setattr(transpose, "TILE_COLS", 5)
        monkeypatch.setattr(transpose, "STAGE_ROWS", 3)
        monkeypatch.setattr(transpose, "STAGE_COLS", 5)


NAMED = {
    "dense-2d": ((96, 160), (1, 0), "float32"),
    "dense-2d-large": ((600, 700), (1, 0), "float32"),  # 1.7 MB: tiled even at the default threshold
    "dense-2d-bf16-large": ((700, 900), (1, 0), "bfloat16"),
    "conv2d-hwio-to-oihw": ((3, 3, 24, 40), (3, 2, 0, 1), "float32"),
    "conv2d-large": ((3, 3, 128, 160), (3, 2, 0, 1), "float32"),
    "conv1d-kio-to-oik": ((5, 16, 24), (2, 1, 0), "float16"),
    "conv3d": ((2, 3, 3, 8, 12), (4, 3, 0, 1, 2), "float64"),
    "conv-1x1": ((1, 1, 64, 96), (3, 2, 0, 1), "float32"),
    "depthwise-hwc1-to-c1hw": ((3, 3, 48, 1), (2, 3, 0, 1), "float32"),
    "depthwise-multiplier": ((5, 5, 16, 2), (2, 3, 0, 1), "bfloat16"),
    "mha-query-kernel": ((64, 4, 16), (1, 2, 0), "float32"),
    "mha-output-kernel": ((4, 16, 64), (2, 0, 1), "float32"),
    "shared-short-inner-run": ((40, 50, 3), (1, 0, 2), "uint8"),
    "shared-long-inner-run": ((20, 30, 64), (1, 0, 2), "float32"),
    "batch-of-transposes": ((6, 30, 40), (0, 2, 1), "int64"),
    "reverse-4d": ((4, 5, 6, 7), (3, 2, 1, 0), "bool"),
    "identity": ((4, 5), (0, 1), "float32"),
    "only-size-1-axes-move": ((1, 7, 1, 9), (2, 1, 0, 3), "float32"),
    "negative-axes": ((3, 4, 5), (-1, 0, -2), "float32"),
    "scalar": ((), (), "float32"),
    "one-d": ((17,), (0,), "uint8"),
    "zero-rows": ((0, 5), (1, 0), "float32"),
    "zero-in-conv": ((3, 3, 0, 8), (3, 2, 0, 1), "float32"),
    "all-zero-dims": ((0, 0, 0), (2, 0, 1), "bfloat16"),
    "complex": ((30, 20), (1, 0), "complex64"),
}


@pytest.mark.parametrize("name", list(NAMED), ids=list(NAMED))
def test_named_layouts(name: str, paths: None) -> None:
    shape, axes, dtype = NAMED[name]
    check(make(shape, dtype), axes)


def random_case(seed: int) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 6))
    shape = tuple(int(rng.choice([0, 1, 1, 2, 3, 7, 16, 33])) if rng.random() < 0.7 else int(rng.integers(1, 60))
                  for _ in range(ndim))
    return shape, tuple(int(a) for a in rng.permutation(ndim)), str(rng.choice(list(DTYPES)))


RANDOM = [random_case(seed) for seed in range(60)]


@pytest.mark.parametrize(("shape", "axes", "dtype"), RANDOM,
                         ids=[f"seed{i}-{'x'.join(map(str, s)) or 'scalar'}-{''.join(map(str, a))}-{d}"
                              for i, (s, a, d) in enumerate(RANDOM)])
def test_random_shapes(shape: tuple[int, ...], axes: tuple[int, ...], dtype: str, paths: None) -> None:
    check(make(shape, dtype, seed=len(shape)), axes)


VIEWS = {
    "step-slices": lambda a: a[::2, 1::3],
    "negative-strides": lambda a: a[::-1, ::-2],
    "transposed-view": lambda a: a.T,
    "fortran-order": lambda a: np.asfortranarray(a),
    "column-block": lambda a: a[:, 10:50],
    "unaligned-read-only": lambda a: np.frombuffer(b"\0" + a.tobytes(), a.dtype, offset=1).reshape(a.shape),
}


@pytest.mark.parametrize("as_conv", [False, True], ids=["2d", "as-1x1-conv"])
@pytest.mark.parametrize("view", list(VIEWS), ids=list(VIEWS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "uint8"], ids=["float32", "bfloat16", "uint8"])
def test_non_contiguous_inputs(view: str, dtype: str, as_conv: bool, paths: None) -> None:
    array = VIEWS[view](make((64, 90), dtype))
    if as_conv:
        check(array[None, :, :, None], (3, 2, 0, 1))
    else:
        check(array, (1, 0))


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
@pytest.mark.parametrize("mode", ["r", "c"], ids=["memmap-readonly", "memmap-copy-on-write"])
@pytest.mark.parametrize(("shape", "axes"), [((300, 500), (1, 0)), ((3, 3, 40, 60), (3, 2, 0, 1))],
                         ids=["dense", "conv"])
def test_memmap_inputs(tmp_path: Path, mode: str, shape: tuple[int, ...], axes: tuple[int, ...], sliced: bool,
                       paths: None) -> None:
    make(shape, "float32").tofile(tmp_path / "w.bin")
    mapped = np.memmap(tmp_path / "w.bin", "<f4", mode=mode, shape=shape)
    check(mapped[1:] if sliced else mapped, axes)


@pytest.mark.parametrize("axes", [(0,), (0, 0), (0, 2), (1, 0, 2), (0, -3)], ids=["too-few", "repeated", "out-of-range",
                                                                                   "too-many", "negative-out-of-range"])
def test_bad_axes(axes: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="not a permutation"):
        permute(np.zeros((2, 3)), axes)


BANDS = {  # (source shape, layout axes, rows per band): what the streaming writer copies band by band
    "dense-out-rows": ((300, 500), (1, 0), 64),
    "dense-one-row-bands": ((40, 70), (1, 0), 1),
    "conv-out-channels": ((3, 3, 40, 60), (3, 2, 0, 1), 16),
    "depthwise": ((5, 5, 24, 1), (2, 3, 0, 1), 7),
    "mha-output": ((4, 16, 64), (2, 0, 1), 10),
}


@pytest.mark.parametrize("name", list(BANDS), ids=list(BANDS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_copy_into_bands_of_a_layout_view(name: str, dtype: str, paths: None) -> None:
    shape, axes, rows = BANDS[name]
    source = make(shape, dtype)
    view = source.transpose(axes)
    out = np.empty(view.shape, view.dtype)
    for first in range(0, view.shape[0], rows):
        copy_into(out[first:first + rows], view[first:first + rows])
    np.testing.assert_array_equal(out, np.transpose(source, axes))


def test_copy_into_a_band_of_a_large_view_takes_the_blocked_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # A band is small but its source rows span the whole tensor: numpy's naive walk would be the slow
    # path here, so the band must go through the tiles (spied on) even below the small-array size.
    source = make((2048, 512), "float32")  # 4 MiB
    band = source.T[:16]  # 16 output rows = 128 KiB, reading 2048 source rows
    calls: list[str] = []
    real = transpose._staged_2d
    monkeypatch.setattr(transpose, "_staged_2d", lambda *a: (calls.append("staged"), real(*a)))
    out = np.empty(band.shape, band.dtype)
    copy_into(out, band)
    np.testing.assert_array_equal(out, source.T[:16])
    assert calls == ["staged"]


def test_contiguous_copies_any_view() -> None:
    source = make((50, 60), "float32")
    for view in (source.T, source[::2], source[:, 5:9], source):
        got = contiguous(view)
        assert got.flags.c_contiguous and not np.shares_memory(got, source)
        np.testing.assert_array_equal(got, view)


@pytest.mark.parametrize("bad", ["shape", "dtype", "strided-dst"])
def test_copy_into_refuses_a_dst_that_does_not_fit(bad: str) -> None:
    source = make((8, 6), "float32")
    dst = {"shape": np.empty((6, 6), "<f4"), "dtype": np.empty((6, 8), "<f8"),
           "strided-dst": np.empty((8, 6), "<f4").T}[bad]
    with pytest.raises(ValueError, match="copy_into: dst"):
        copy_into(dst, source.T)
