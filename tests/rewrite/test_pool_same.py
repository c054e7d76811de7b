"""Max and average pooling with TF 'SAME' padding in PyTorch, against Keras 3 / TensorFlow."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from torch import nn

from tf2torch.rewrite.modules import SamePool, make_avg_pool_same, make_max_pool_same

from . import tfref

pytestmark = pytest.mark.tf

MODES = ["static", "dynamic"]
ATOL = 1e-5
SOAD = 1e-3  # seed 003's metric: sum of absolute differences over the whole output


def torch_same_pool(x: torch.Tensor, kind: str, kernel: tuple, stride: tuple, mode: str) -> torch.Tensor:
    """static: what the factory builds for the known size; dynamic: SamePool sizing itself at run time."""
    if mode == "static":
        make = make_max_pool_same if kind == "max" else make_avg_pool_same
        return make(tuple(x.shape[2:]), kernel, stride)(x)
    return SamePool(kernel, stride, kind)(x)


def check(ours: torch.Tensor, tf_out, label: str) -> None:
    expected = tfref.cl_to_cf(tf_out)
    assert ours.shape == expected.shape, f"{label}: shape {tuple(ours.shape)} vs TF {tuple(expected.shape)}"
    soad = (ours.double() - expected.double()).abs().sum().item()
    print(f"{label}: sum abs diff {soad:.2e}, max abs diff {tfref.max_abs_diff(ours, expected):.2e}")
    torch.testing.assert_close(ours, expected, atol=ATOL, rtol=0)
    assert soad <= SOAD, f"{label}: sum of absolute differences {soad:.3e} > {SOAD}"


# --- seed 003: Keras MaxPooling2D / AveragePooling2D, padding='same', pool 1-3 x strides 1-10 --------


@functools.cache
def seed003_input() -> np.ndarray:
    return (10 * np.random.default_rng(3).random((1, 32, 32, 16))).astype(np.float32)


@functools.cache
def keras_pool2d(kind: str, pool: int, stride: int) -> np.ndarray:
    keras = tfref.keras()
    layer_class = keras.layers.MaxPooling2D if kind == "max" else keras.layers.AveragePooling2D
    return np.asarray(layer_class(pool_size=pool, strides=stride, padding="same")(seed003_input()))


SEED003 = [(kind, p, s) for kind in ("max", "avg") for p in (1, 2, 3) for s in range(1, 11)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "pool", "stride"), SEED003, ids=[f"{k}-pool{p}-stride{s}" for k, p, s in SEED003]
)
def test_seed003_keras_pool2d_grid(kind, pool, stride, mode):
    expected = keras_pool2d(kind, pool, stride)
    ours = torch_same_pool(tfref.cl_to_cf(seed003_input()), kind, (pool, pool), (stride, stride), mode)
    check(ours, expected, f"{kind} pool={pool} stride={stride} {mode}")


# --- odd and even, non-square sizes (H = 7..16, W = 23 - H) through tf.nn ----------------------------

SWEEP = [
    (kind, k, s, (h, 23 - h))
    for kind in ("max", "avg")
    for k in [(2, 2), (3, 3), (2, 3)]
    for s in (1, 2, 3)
    for h in (7, 8, 9, 10, 13, 16)
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "kernel", "stride", "size"),
    SWEEP,
    ids=[f"{t}-k{k[0]}x{k[1]}-s{s}-in{h}x{w}" for t, k, s, (h, w) in SWEEP],
)
def test_pool2d_same_sizes(kind, kernel, stride, size, mode):
    tf = tfref.tf()
    x = 10 * np.abs(tfref.randn(f"pool-{kind}-{kernel}-{stride}-{size}", 1, *size, 3))
    op = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    expected = op(x, kernel, stride, "SAME").numpy()
    ours = torch_same_pool(tfref.cl_to_cf(x), kind, kernel, (stride, stride), mode)
    check(ours, expected, f"{kind} k={kernel} s={stride} in={size} {mode}")


# --- 1-D and 3-D spot checks (Keras layers) ----------------------------------------------------------

POOL1D = [
    (kind, p, s, n)
    for kind in ("max", "avg")
    for p, s, n in [(2, 3, 10), (3, 2, 11), (3, 3, 16), (2, 1, 7), (1, 4, 9), (4, 3, 13)]
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("kind", "pool", "stride", "size"), POOL1D, ids=[f"{t}-pool{p}-stride{s}-in{n}" for t, p, s, n in POOL1D]
)
def test_keras_pool1d_same(kind, pool, stride, size, mode):
    keras = tfref.keras()
    x = 10 * np.abs(tfref.randn(f"pool1d-{kind}-{pool}-{stride}-{size}", 2, size, 3))
    layer_class = keras.layers.MaxPooling1D if kind == "max" else keras.layers.AveragePooling1D
    expected = np.asarray(layer_class(pool_size=pool, strides=stride, padding="same")(x))
    ours = torch_same_pool(tfref.cl_to_cf(x), kind, (pool,), (stride,), mode)
    check(ours, expected, f"{kind} pool={pool} stride={stride} in={size} {mode}")


POOL3D = [
    (kind, p, s, n)
    for kind in ("max", "avg")
    for p, s, n in [
        ((2, 2, 2), (2, 2, 2), (7, 8, 9)),
        ((3, 3, 3), (2, 2, 2), (8, 9, 10)),
        ((3, 2, 1), (1, 2, 3), (6, 7, 8)),
        ((2, 3, 3), (3, 1, 2), (9, 8, 7)),
    ]
]


def _id3d(kind, pool, stride, size):
    def x(values):
        return "x".join(map(str, values))

    return f"{kind}-pool{x(pool)}-stride{x(stride)}-in{x(size)}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("kind", "pool", "stride", "size"), POOL3D, ids=[_id3d(*c) for c in POOL3D])
def test_keras_pool3d_same(kind, pool, stride, size, mode):
    keras = tfref.keras()
    x = 10 * np.abs(tfref.randn(f"pool3d-{kind}-{pool}-{stride}-{size}", 1, *size, 2))
    layer_class = keras.layers.MaxPooling3D if kind == "max" else keras.layers.AveragePooling3D
    expected = np.asarray(layer_class(pool_size=pool, strides=stride, padding="same")(x))
    ours = torch_same_pool(tfref.cl_to_cf(x), kind, pool, stride, mode)
    check(ours, expected, f"{kind} pool={pool} stride={stride} in={size} {mode}")


# --- the usual hand port differs: nn.AvgPool2d(k, s, padding=k // 2) ---------------------------------
# Same output shape in these cases, wrong numbers: k3 s1 divides border windows by 9 (TF: by the real
# count); k3 s2 and k5 s3 on an even size pad symmetrically where TF pads one more at the end.

NAIVE = [(3, 1), (3, 2), (5, 3)]


@pytest.mark.parametrize(("pool", "stride"), NAIVE, ids=[f"pool{p}-stride{s}" for p, s in NAIVE])
def test_naive_avg_pool_differs_from_tf(pool, stride):
    expected = tfref.cl_to_cf(keras_pool2d("avg", pool, stride))
    x = tfref.cl_to_cf(seed003_input())
    naive = nn.AvgPool2d(pool, stride, padding=pool // 2)(x)
    ours = make_avg_pool_same(tuple(x.shape[2:]), (pool, pool), (stride, stride))(x)
    naive_soad = (naive - expected).abs().sum().item()
    ours_soad = (ours - expected).abs().sum().item()
    print(
        f"naive AvgPool2d({pool}, {stride}, padding={pool // 2}): sum abs diff {naive_soad:.2e}; "
        f"ours {ours_soad:.2e}"
    )
    assert naive.shape == expected.shape and naive_soad > 100
    assert ours_soad <= SOAD
