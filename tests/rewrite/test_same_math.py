"""same.py against TensorFlow: the (before, after) TF actually uses, read back from tf.nn.conv1d."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tf2torch.errors import UsageError
from tf2torch.rewrite.modules import SamePad, SamePool
from tf2torch.rewrite.same import (
    fold_symmetric,
    plan_same,
    same_output_size,
    same_padding,
    same_padding_nd,
    size_independent,
    torch_pad_order,
)
from tf2torch.rewrite.same_transpose import tf_same_transpose_padding

from . import tfref

# TF refuses dilation > 1 with stride > 1, so dilation 2 is checked at stride 1 only (and from
# size 2: a 1-long input between dilated taps is never read, so TF's padding is not observable).
MATH_CASES = [(n, k, s, 1) for n in range(1, 17) for k in range(1, 6) for s in range(1, 6)]
MATH_CASES += [(n, k, 1, 2) for n in range(2, 17) for k in range(1, 6)]
MATH_IDS = [f"in{n}-k{k}-s{s}-d{d}" for n, k, s, d in MATH_CASES]


def tf_observed_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """(before, after) as TF applies them, read from a SAME conv of the ramp 1..size.

    Output channel j holds tap j of every window, ``x[o*s - before + j*d]`` (0 where padded): the
    first non-zero entry gives ``before``; the whole output is then checked against that window
    model, and ``after`` is how far the last window reaches past the input (0 if it ends inside).
    """
    tf = tfref.tf()
    x = np.arange(1, size + 1, dtype=np.float32)
    w = np.eye(kernel, dtype=np.float32).reshape(kernel, 1, kernel)
    y = tf.nn.conv1d(x.reshape(1, size, 1), w, stride, "SAME", dilations=dilation).numpy()[0]
    out = y.shape[0]
    o, j = (int(i[0]) for i in np.nonzero(y))
    before = o * stride + j * dilation - (int(y[o, j]) - 1)
    index = np.arange(out)[:, None] * stride - before + np.arange(kernel)[None, :] * dilation
    window_model = np.where((index >= 0) & (index < size), x[np.clip(index, 0, size - 1)], 0)
    np.testing.assert_array_equal(y, window_model)
    end = (out - 1) * stride - before + (kernel - 1) * dilation
    return before, max(end - (size - 1), 0)


@pytest.mark.tf
@pytest.mark.parametrize(("size", "kernel", "stride", "dilation"), MATH_CASES, ids=MATH_IDS)
def test_same_padding_matches_tf(size, kernel, stride, dilation):
    observed = tf_observed_padding(size, kernel, stride, dilation)
    ours = same_padding(size, kernel, stride, dilation)
    print(f"TF (before, after) {observed}, ours {ours}")
    assert ours == observed


BAD_CALLS = {
    "size-zero": lambda: same_padding(0, 3, 1),
    "size-negative": lambda: same_padding(-4, 3, 1),
    "kernel-zero": lambda: same_padding(10, 0, 1),
    "stride-zero": lambda: same_padding(10, 3, 0),
    "dilation-zero": lambda: same_padding(10, 3, 1, 0),
    "size-float": lambda: same_padding(10.0, 3, 1),
    "size-bool": lambda: same_padding(True, 3, 1),
    "kernel-str": lambda: same_padding(10, "3", 1),
    "nd-length-mismatch": lambda: same_padding_nd((10,), (3, 3), 1),
    "nd-empty": lambda: same_padding_nd((), 3, 1),
    "plan-kernel-int": lambda: plan_same((10, 10), 3, 1),
    "plan-size-length": lambda: plan_same((10, 10, 10), (3, 3), 1),
    "plan-stride-length": lambda: plan_same((10, 10), (3, 3), (1, 2, 2)),
    "plan-kind": lambda: plan_same((10, 10), (3, 3), 2, kind="sum"),
    "transpose-out-too-big": lambda: tf_same_transpose_padding((3,), 2, in_size=5, out_size=11),
    "transpose-out-too-small": lambda: tf_same_transpose_padding((3,), 2, in_size=5, out_size=8),
    "transpose-out-without-in": lambda: tf_same_transpose_padding((3,), 2, out_size=10),
    "output-size-zero-stride": lambda: same_output_size(10, 0),
}


@pytest.mark.parametrize("call", list(BAD_CALLS.values()), ids=list(BAD_CALLS))
def test_bad_arguments_raise_usage_error(call):
    with pytest.raises(UsageError) as info:
        call()
    print(info.value)
    assert "found" in str(info.value) or "pass" in str(info.value)


@pytest.mark.tf
@pytest.mark.parametrize(("in_size", "out_size"), [(5, 11), (5, 8)], ids=["out-too-big", "out-too-small"])
def test_tf_rejects_the_transposed_sizes_we_reject(in_size, out_size):
    tf = tfref.tf()
    x, w = np.ones((1, in_size, 1), np.float32), np.ones((3, 1, 1), np.float32)
    with pytest.raises(Exception):  # noqa: B017 -- TF raises InvalidArgumentError or ValueError
        tf.nn.conv1d_transpose(x, w, (1, out_size, 1), 2, "SAME")


PAIRS_CASES = [((0, 1),), ((1, 2), (0, 1)), ((2, 0), (1, 1), (0, 3))]


@pytest.mark.parametrize("pairs", PAIRS_CASES, ids=["1d", "2d", "3d"])
def test_torch_pad_order_is_what_F_pad_expects(pairs):
    sizes = (4, 5, 6)[: len(pairs)]
    x = torch.arange(float(np.prod(sizes))).reshape(1, 1, *sizes) + 1
    padded = F.pad(x, torch_pad_order(pairs))
    assert padded.shape[2:] == tuple(n + b + a for n, (b, a) in zip(sizes, pairs))
    inner = padded[(..., *(slice(b, b + n) for n, (b, _) in zip(sizes, pairs)))]
    torch.testing.assert_close(inner, x, atol=0, rtol=0)
    assert padded.sum() == x.sum()


PLAN_CASES = [
    ((h, w), (kh, kw), s)
    for h, w in [(9, 10), (10, 9)]
    for kh, kw in [(3, 3), (2, 2), (3, 1)]
    for s in (1, 2, 3)
]


@pytest.mark.parametrize(
    ("size", "kernel", "stride"),
    PLAN_CASES,
    ids=[f"in{a}x{b}-k{c}x{d}-s{s}" for (a, b), (c, d), s in PLAN_CASES],
)
@pytest.mark.parametrize("kind", ["conv", "max", "avg"])
def test_plan_folds_only_symmetric_padding(size, kernel, stride, kind):
    pairs = same_padding_nd(size, kernel, stride)
    plan = plan_same(size, kernel, stride, kind=kind)
    assert not plan.dynamic and plan.kind == kind
    if all(b == a for b, a in pairs):
        assert plan.form == "folded"
        assert plan.pad is None and plan.padding == fold_symmetric(pairs) == tuple(b for b, _ in pairs)
    else:
        assert fold_symmetric(pairs) is None and plan.form == "pad"
        assert plan.padding == (0, 0) and plan.pad == torch_pad_order(pairs)
    # the guard: planned for this size, and another size would pad differently
    assert plan.sized == (stride > 1 and kernel != (1, 1))
    assert plan.pad_value == (float("-inf") if kind == "max" else 0.0) and plan.exclude_pad == (kind == "avg")


INDEPENDENCE_CASES = [(k, s, n) for k in range(1, 6) for s in (1, 2, 3) for n in (7, 8, 9)]


@pytest.mark.parametrize(
    ("kernel", "stride", "size"),
    INDEPENDENCE_CASES,
    ids=[f"k{k}-s{s}-in{n}" for k, s, n in INDEPENDENCE_CASES],
)
def test_unknown_size_plans_statically_only_when_size_independent(kernel, stride, size):
    plan = plan_same(None, (kernel,), stride)
    assert plan.dynamic == (not size_independent(kernel, stride))
    assert not plan.sized  # dynamic, or the same padding at every size: nothing to guard
    if not plan.dynamic:
        assert plan == plan_same((size,), (kernel,), stride)


RUNTIME_CASES = [
    (n, k, s, d) for n in range(1, 13) for k, s, d in [(3, 2, 1), (4, 3, 1), (2, 4, 1), (3, 1, 2), (5, 2, 1)]
]


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "dilation"),
    RUNTIME_CASES,
    ids=[f"in{n}-k{k}-s{s}-d{d}" for n, k, s, d in RUNTIME_CASES],
)
def test_runtime_pad_arithmetic_equals_same_py(size, kernel, stride, dilation):
    """SamePad and SamePool repeat the arithmetic so they inline alone; they must agree with same.py."""
    x = torch.rand(1, 2, size) + 1
    pad = torch_pad_order(same_padding_nd((size,), kernel, stride, dilation))
    torch.testing.assert_close(SamePad((kernel,), (stride,), (dilation,))(x), F.pad(x, pad), atol=0, rtol=0)
    if dilation == 1:
        for mode in ("max", "avg"):
            static, dynamic = (
                SamePool((kernel,), (stride,), mode, pad=pad),
                SamePool((kernel,), (stride,), mode),
            )
            torch.testing.assert_close(dynamic(x), static(x), atol=0, rtol=0)
