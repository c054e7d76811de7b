"""Max and average pooling with TF 'SAME' padding, through the paths converted models take, against Keras.

Every grid case is a branch of a Keras model (``same_grid``) converted by tf2torch: as generated code
(``generated``) and as a user's naive port (``AvgPool2d(k, s, padding=k // 2)``, counting the padding)
patched onto it (``patched``), with ``--input-shape`` (static) and without (run-time ``SamePool``).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from . import tfref
from .same_grid import MODES, PATHS, Case, Grid, check, generated, inputs, joined, keras_out

pytestmark = pytest.mark.tf

ATOL = 1e-5
SOAD = 1e-3  # seed 003's metric: sum of absolute differences over the whole output


# --- seed 003: Keras MaxPooling2D / AveragePooling2D, padding='same', pool 1-3 x strides 1-10 --------

SEED003 = [(kind, p, s) for kind in ("max", "avg") for p in (1, 2, 3) for s in range(1, 11)]
GRID_SEED003 = Grid(2, 16, tuple(Case(k, (p, p), (s, s)) for k, p, s in SEED003), scale=10.0)
SEED003_SIZE = (32, 32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kind", "pool", "stride"), SEED003, ids=[f"{k}-pool{p}-stride{s}" for k, p, s in SEED003]
)
def test_seed003_keras_pool2d_grid(kind, pool, stride, path, mode):
    check(GRID_SEED003, Case(kind, (pool, pool), (stride, stride)), SEED003_SIZE, path, mode, ATOL, SOAD)


# --- odd and even, non-square sizes (H = 7..16, W = 23 - H) --------------------------------------------

SWEEP = [
    (kind, k, s, (h, 23 - h))
    for kind in ("max", "avg")
    for k in [(2, 2), (3, 3), (2, 3)]
    for s in (1, 2, 3)
    for h in (7, 8, 9, 10, 13, 16)
]
GRID_SWEEP = Grid(2, 3, tuple(dict.fromkeys(Case(t, k, (s, s)) for t, k, s, _ in SWEEP)), scale=10.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kind", "kernel", "stride", "size"),
    SWEEP,
    ids=[f"{t}-k{k[0]}x{k[1]}-s{s}-in{h}x{w}" for t, k, s, (h, w) in SWEEP],
)
def test_pool2d_same_sizes(kind, kernel, stride, size, path, mode):
    check(GRID_SWEEP, Case(kind, kernel, (stride, stride)), size, path, mode, ATOL, SOAD)


# --- 1-D and 3-D spot checks ----------------------------------------------------------------------------

POOL1D = [
    (kind, p, s, n)
    for kind in ("max", "avg")
    for p, s, n in [(2, 3, 10), (3, 2, 11), (3, 3, 16), (2, 1, 7), (1, 4, 9), (4, 3, 13)]
]
GRID_1D = Grid(1, 3, tuple(Case(t, (p,), (s,)) for t, p, s, _ in POOL1D), scale=10.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kind", "pool", "stride", "size"), POOL1D, ids=[f"{t}-pool{p}-stride{s}-in{n}" for t, p, s, n in POOL1D]
)
def test_keras_pool1d_same(kind, pool, stride, size, path, mode):
    check(GRID_1D, Case(kind, (pool,), (stride,)), (size,), path, mode, ATOL, SOAD)


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
GRID_3D = Grid(3, 2, tuple(Case(t, p, s) for t, p, s, _ in POOL3D), scale=10.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kind", "pool", "stride", "size"), POOL3D, ids=[f"{t}-pool{joined(p)}-stride{joined(s)}-in{joined(n)}" for t, p, s, n in POOL3D]
)
def test_keras_pool3d_same(kind, pool, stride, size, path, mode):
    check(GRID_3D, Case(kind, pool, stride), size, path, mode, ATOL, SOAD)


# --- the usual hand port differs: nn.AvgPool2d(k, s, padding=k // 2) ---------------------------------
# Same output shape in these cases, wrong numbers: k3 s1 divides border windows by 9 (TF: by the real
# count); k3 s2 and k5 s3 on an even size pad symmetrically where TF pads one more at the end. The
# patched path starts from exactly that port and must end at TF's numbers.

NAIVE = [(3, 1), (3, 2), (5, 3)]
GRID_NAIVE = Grid(2, 16, tuple(Case("avg", (p, p), (s, s)) for p, s in NAIVE), scale=10.0)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("pool", "stride"), NAIVE, ids=[f"pool{p}-stride{s}" for p, s in NAIVE])
def test_naive_avg_pool_differs_from_tf(pool, stride, path):
    case = Case("avg", (pool, pool), (stride, stride))
    expected = tfref.cl_to_cf(keras_out(GRID_NAIVE, SEED003_SIZE)[GRID_NAIVE.cases.index(case)])
    naive = nn.AvgPool2d(pool, stride, padding=pool // 2)(tfref.cl_to_cf(inputs(GRID_NAIVE, SEED003_SIZE)))
    naive_soad = (naive - expected).abs().sum().item()
    print(f"naive AvgPool2d({pool}, {stride}, padding={pool // 2}): sum abs diff {naive_soad:.2e}")
    assert naive.shape == expected.shape and naive_soad > 100
    check(GRID_NAIVE, case, SEED003_SIZE, path, "static", ATOL, SOAD)


def test_size_guard_comes_from_the_plan():
    """Static strided SAME pads hold for one size: the generated model refuses another. Stride 1 pads the
    same at every size: no guard (the plans' ``sized``, not the report's words, decide)."""
    model, conversion = generated(GRID_SWEEP, (7, 16))
    assert any(n.endswith("planned for the model's input size") for n in conversion.report.notes)
    with pytest.raises(ValueError, match=r"converted for inputs of spatial size \(7, 16\)"):
        model(torch.zeros(1, 3, 8, 15))
    stride1 = Grid(2, 3, (Case("max", (3, 3), (1, 1)), Case("avg", (2, 2), (1, 1))), scale=10.0)
    model, conversion = generated(stride1, (7, 16))
    assert [tuple(t.shape) for t in model(torch.zeros(1, 3, 8, 15))] == [(1, 3, 8, 15)] * 2
