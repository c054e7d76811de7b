"""Convolutions with TF 'SAME' padding, through the paths converted models take, against Keras/TensorFlow.

Every grid case is a branch of a Keras model (``same_grid``) converted by tf2torch: as generated code
(``generated``) and as a user's naive port patched onto it (``patched``), with ``--input-shape`` (static
pads, size guard) and without (run-time ``SamePad``). Keras computes the expected numbers.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tf2torch.rewrite.modules import Crop
from tf2torch.rewrite.same_transpose import tf_same_transpose_padding

from . import tfref
from .same_grid import MODES, PATHS, Case, Grid, check, joined

pytestmark = pytest.mark.tf

ATOL = 1e-5  # max abs diff allowed against TF (float32, a few channels)


# --- the 2-D grid: kernel 1-5, (3,1), (1,3) x stride 1-4 x sizes 7-16 (H odd/even, W = 23 - H) -------

KERNELS_2D = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (3, 1), (1, 3)]
GRID_2D = [(k, s, (h, 23 - h), 1) for k in KERNELS_2D for s in range(1, 5) for h in range(7, 17)]
GRID_2D += [((3, 3), s, (h, 23 - h), 1) for s in [(1, 2), (2, 3), (3, 1), (4, 2)] for h in (7, 10, 13)]
GRID_2D += [(k, 1, (h, 23 - h), 2) for k in [(2, 2), (3, 3), (3, 1), (1, 3), (4, 4)] for h in (7, 8, 9, 10)]


def _case2d(case, kind="conv"):
    kernel, stride, _, dilation = case
    return Case(kind, kernel, stride if isinstance(stride, tuple) else (stride, stride), (dilation, dilation))


def _id2d(case):
    (kh, kw), s, (h, w), d = case
    s = f"{s[0]}x{s[1]}" if isinstance(s, tuple) else s
    return f"k{kh}x{kw}-s{s}-in{h}x{w}" + (f"-d{d}" if d > 1 else "")


CONV2D = Grid(2, 2, tuple(dict.fromkeys(_case2d(c) for c in GRID_2D)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", GRID_2D, ids=[_id2d(c) for c in GRID_2D])
def test_conv2d_same_grid(case, path, mode):
    check(CONV2D, _case2d(case), case[2], path, mode, ATOL)


# --- 1-D and 3-D spot checks ---------------------------------------------------------------------

CONV1D = [(3, 2, 10), (3, 2, 11), (4, 3, 13), (5, 4, 16), (2, 1, 7), (1, 3, 8), (2, 2, 9), (5, 3, 7)]
CONV1D_DILATED = [(3, 9), (2, 8)]  # (kernel, size) at stride 1, dilation 2
CASES_1D = [(k, s, n, 1) for k, s, n in CONV1D] + [(k, 1, n, 2) for k, n in CONV1D_DILATED]
GRID_1D = Grid(1, 3, tuple(dict.fromkeys(Case("conv", (k,), (s,), (d,)) for k, s, _, d in CASES_1D)), filters=2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kernel", "stride", "size", "dilation"), CASES_1D, ids=[f"k{k}-s{s}-in{n}" for k, s, n in CONV1D] + [f"k{k}-s1-in{n}-d2" for k, n in CONV1D_DILATED],
)
def test_conv1d_same(kernel, stride, size, dilation, path, mode):
    check(GRID_1D, Case("conv", (kernel,), (stride,), (dilation,)), (size,), path, mode, ATOL)


CONV3D = [
    ((3, 3, 3), (2, 2, 2), (7, 8, 9)),
    ((2, 3, 1), (1, 2, 3), (8, 9, 10)),
    ((4, 4, 4), (3, 3, 3), (10, 11, 12)),
    ((1, 2, 5), (2, 1, 2), (7, 7, 8)),
]
GRID_3D = Grid(3, 2, tuple(Case("conv", k, s, (1, 1, 1)) for k, s, _ in CONV3D))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("kernel", "stride", "size"), CONV3D, ids=[f"k{joined(k)}-s{joined(s)}-in{joined(n)}" for k, s, n in CONV3D]
)
def test_conv3d_same(kernel, stride, size, path, mode):
    check(GRID_3D, Case("conv", kernel, stride, (1, 1, 1)), size, path, mode, ATOL)


# --- depthwise and separable: ordinary groups= convs with the same padding -----------------------

DEPTHWISE = [
    ((3, 3), 2, (10, 11), 1),
    ((5, 5), 2, (9, 9), 1),
    ((3, 3), 3, (16, 13), 1),
    ((3, 1), 2, (12, 7), 1),
    ((3, 3), 1, (8, 9), 2),
    ((4, 4), 4, (15, 14), 1),
]
GRID_DW = Grid(2, 3, tuple(_case2d(c, "depthwise") for c in DEPTHWISE))


def _id_dw(case):
    (kh, kw), s, (h, w), d = case
    return f"k{kh}x{kw}-s{s}-in{h}x{w}-d{d}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", DEPTHWISE, ids=[_id_dw(c) for c in DEPTHWISE])
def test_depthwise_conv2d_same(case, path, mode):
    check(GRID_DW, _case2d(case, "depthwise"), case[2], path, mode, ATOL)


SEPARABLE = [(2, (10, 9)), (3, (11, 14))]
GRID_SEP = Grid(2, 3, tuple(Case("separable", (3, 3), (s, s), (1, 1)) for s, _ in SEPARABLE), filters=4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("stride", "size"), SEPARABLE, ids=["s2-in10x9", "s3-in11x14"])
def test_separable_conv2d_same(stride, size, mode):
    """Generated code only: a port of SeparableConv2D is two modules, which the grid's port is not."""
    check(GRID_SEP, Case("separable", (3, 3), (stride, stride), (1, 1)), size, "generated", mode, ATOL)


def check_tf(ours: torch.Tensor, tf_out) -> None:
    expected = tfref.cl_to_cf(tf_out)
    print(f"{tfref.case_label()}: max abs diff {tfref.max_abs_diff(ours, expected):.2e}")
    torch.testing.assert_close(ours, expected, atol=ATOL, rtol=0)  # shapes too


# --- transposed convs: padding / output_padding on the op, Crop after it -------------------------
# With TF's default output size (in * stride) the plan does not depend on the input size, so one plan
# serves every size: there is no separate dynamic variant.

TRANSPOSE_2D = [
    ((3, 3), 2, (5, 6)),
    ((4, 4), 2, (5, 5)),
    ((2, 2), 2, (4, 7)),
    ((1, 1), 2, (3, 3)),
    ((5, 5), 3, (4, 5)),
    ((3, 3), 1, (6, 6)),
    ((3, 1), 2, (5, 4)),
    ((2, 5), 3, (3, 4)),
]


def torch_same_transpose(x, weight, kernel, stride, in_size=None, out_size=None):
    n = len(kernel)
    plan = tf_same_transpose_padding(kernel, stride, 1, in_size, out_size)
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
    y = conv(x, weight, stride=stride, padding=plan.padding, output_padding=plan.output_padding)
    return y if plan.crop is None else Crop(plan.crop)(y)


@pytest.mark.parametrize(
    ("kernel", "stride", "size"),
    TRANSPOSE_2D,
    ids=[f"k{a}x{b}-s{s}-in{h}x{w}" for (a, b), s, (h, w) in TRANSPOSE_2D],
)
def test_conv2d_transpose_same(kernel, stride, size):
    tf = tfref.tf()
    case = f"t2d-{kernel}-{stride}-{size}"
    x, weight = tfref.randn(case + "x", 1, *size, 3), tfref.weights(case + "w", *kernel, 2, 3)
    out_shape = (1, size[0] * stride, size[1] * stride, 2)
    expected = tf.nn.conv2d_transpose(x, weight, out_shape, stride, "SAME").numpy()
    check_tf(torch_same_transpose(tfref.cl_to_cf(x), tfref.transpose_weight(weight), kernel, stride), expected)


@pytest.mark.parametrize(
    ("kernel", "stride", "size", "out"),
    [(3, 2, 5, 9), (4, 3, 4, 11), (5, 2, 6, 11)],
    ids=["k3-s2-in5-out9", "k4-s3-in4-out11", "k5-s2-in6-out11"],
)
def test_conv1d_transpose_same_explicit_output_size(kernel, stride, size, out):
    tf = tfref.tf()
    case = f"t1d-{kernel}-{stride}-{size}-{out}"
    x, weight = tfref.randn(case + "x", 1, size, 3), tfref.weights(case + "w", kernel, 2, 3)
    expected = tf.nn.conv1d_transpose(x, weight, (1, out, 2), stride, "SAME").numpy()
    ours = torch_same_transpose(
        tfref.cl_to_cf(x), tfref.transpose_weight(weight), (kernel,), stride, (size,), (out,)
    )
    check_tf(ours, expected)


@pytest.mark.parametrize(
    ("kernel", "stride", "size"),
    [((3, 3, 3), 2, (3, 4, 5)), ((2, 4, 1), 2, (4, 3, 3))],
    ids=["k3x3x3-s2", "k2x4x1-s2"],
)
def test_conv3d_transpose_same(kernel, stride, size):
    tf = tfref.tf()
    case = f"t3d-{kernel}-{stride}-{size}"
    x, weight = tfref.randn(case + "x", 1, *size, 2), tfref.weights(case + "w", *kernel, 3, 2)
    out_shape = (1, *(n * stride for n in size), 3)
    expected = tf.nn.conv3d_transpose(x, weight, out_shape, stride, "SAME").numpy()
    check_tf(torch_same_transpose(tfref.cl_to_cf(x), tfref.transpose_weight(weight), kernel, stride), expected)


# --- the user reports ----------------------------------------------------------------------------


SEED001 = Grid(2, 3, (Case("conv", (3, 3), (2, 2), (1, 1)),), filters=8)


@pytest.mark.parametrize("path", PATHS)
def test_seed001_wideresnet_stride2_symmetric_padding_differs(path):
    """Seed 001: porting TF's SAME 3x3 stride-2 conv as ``padding=1`` shifts every window by one."""
    tf = tfref.tf()
    x, weight = tfref.randn("seed001-x", 1, 10, 10, 3), tfref.randn("seed001-w", 3, 3, 3, 8)
    expected = tfref.cl_to_cf(tf.nn.conv2d(x, weight, 2, "SAME").numpy())
    naive = F.conv2d(tfref.cl_to_cf(x), tfref.conv_weight(weight), stride=2, padding=1)  # same shape, wrong numbers
    naive_diff = tfref.max_abs_diff(naive, expected)
    print(f"symmetric padding=1: max abs diff {naive_diff:.2e}")
    assert naive.shape == expected.shape and naive_diff > 0.5
    check(SEED001, SEED001.cases[0], (10, 10), path, "static", ATOL)


def _seed004(stride):
    """Keras Conv2D(2, (3, 1), padding='same') on a (4, 64, 1, 2) input, as in the report (smaller)."""
    keras = tfref.keras()
    x = tfref.randn("seed004-x", 4, 64, 1, 2)
    layer = keras.layers.Conv2D(2, (3, 1), strides=stride, padding="same")
    layer.build(x.shape)
    layer.set_weights([tfref.randn("seed004-w", 3, 1, 2, 2), tfref.randn("seed004-b", 2)])
    kernel, bias = (w.numpy() for w in layer.weights)
    return tfref.cl_to_cf(x), tfref.conv_weight(kernel), torch.from_numpy(bias), layer(x).numpy()


def test_seed004_keras_same_stride1_is_torch_symmetric_1_0():
    x, weight, bias, expected = _seed004(1)
    expected = tfref.cl_to_cf(expected)
    torch_port = F.conv2d(x, weight, bias, stride=1, padding=(1, 0))
    print(f"padding=(1, 0) at stride 1: max abs diff {tfref.max_abs_diff(torch_port, expected):.2e}")
    torch.testing.assert_close(torch_port, expected, atol=ATOL, rtol=0)


SEED004 = Grid(2, 2, tuple(Case("conv", (3, 1), (s, s), (1, 1)) for s in (1, 2)), filters=2)


@pytest.mark.parametrize("stride", [1, 2], ids=["stride1", "stride2"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
def test_seed004_ours_matches_keras_same(stride, path, mode):
    check(SEED004, Case("conv", (3, 1), (stride, stride), (1, 1)), (64, 1), path, mode, ATOL)
    if stride == 2:  # H = 64 is even: TF pads (0, 1), so the symmetric (1, 0) port shifts the windows
        x, weight, bias, expected = _seed004(stride)
        symmetric = F.conv2d(x, weight, bias, stride=stride, padding=(1, 0))
        expected = tfref.cl_to_cf(expected)
        print(f"padding=(1, 0) at stride 2: max abs diff {tfref.max_abs_diff(symmetric, expected):.2e}")
        assert symmetric.shape == expected.shape and tfref.max_abs_diff(symmetric, expected) > 0.5
