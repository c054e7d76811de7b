"""MediaPipe's ``MaxPoolingWithArgmax2D`` and ``MaxUnpooling2D`` custom operators, as segmentation models use
them: the pooling's values go through a conv, then the unpooling scatters them back to the pooling's
indices. Each ``.tflite`` is built by rewriting what TF's converter writes (``fixtures/tflite_custom.py``),
converted, and compared with TensorFlow computing the same thing (the interpreter has no kernel for
either: MediaPipe registers them in its own resolver):

- the pooling is ``tf.nn.max_pool_with_argmax``. Its index is another convention, ``(y * W + x) * C + c``
  over the whole input (``include_batch_in_index=False``); MediaPipe's is the position inside the window,
  ``dy * kernel_w + dx``, stored as a float plus 0.1. TF's index is turned into MediaPipe's here, and the
  converted model's indices must equal it exactly. Both keep the first maximum in row-major order (TF's
  CPU kernel updates on a strictly greater value), which the cases with ties check;
- the unpooling is ``tf.tensor_scatter_nd_update`` of the values, in the kernel's loop order (batch, y, x,
  channel), at ``(y * stride - pad + dy, x * stride - pad + dx)`` of a zero ``(H * kernel, W * kernel)``
  plane, positions outside it dropped. Where windows overlap, two values can land on one cell: the kernel
  keeps the later one. TF applies a CPU scatter's updates in order (only its GPU kernel is unordered); a
  control recomputes the reference from the last update per cell alone (``unsorted_segment_max``) and
  must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fixtures.tflite_custom import pool_unpool_model
from tests.conftest import require_tf
from tests.support.numerics import check, float64_drift
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf

_ACTIVATIONS = {0: lambda tf, v: v, 1: lambda tf, v: tf.nn.relu(v), 3: lambda tf, v: tf.nn.relu6(v)}

CASES = {  # x shape, pool (kernel, strides, padding, activation), unpool (kernel, strides), integer input (ties)
    "valid-k2s2": ((2, 8, 6, 3), ((2, 2), (2, 2), "VALID", 0), ((2, 2), (2, 2)), False),
    "same-k3s2-odd": ((2, 7, 9, 4), ((3, 3), (2, 2), "SAME", 0), ((3, 3), (2, 2)), False),
    "same-k3s2-odd-ties": ((2, 9, 7, 2), ((3, 3), (2, 2), "SAME", 1), ((3, 3), (2, 2)), True),
    "same-k2s2-odd-relu6": ((2, 7, 5, 3), ((2, 2), (2, 2), "SAME", 3), ((2, 2), (2, 2)), False),
    "valid-k2x3-s3x2-ties": ((2, 8, 7, 3), ((2, 3), (3, 2), "VALID", 0), ((2, 3), (3, 2)), True),
}


def _before(size: int, k: int, s: int, out: int) -> int:
    """The padding before (TF's SAME and tflite::ComputePadding agree): half the total, rounded down."""
    return max((out - 1) * s + k - size, 0) // 2


def _pool(tf, x, kernel, strides, padding):
    """(values, MediaPipe's indices) from tf.nn.max_pool_with_argmax."""
    values, argmax = tf.nn.max_pool_with_argmax(x, kernel, strides, padding, include_batch_in_index=False)
    _, h, w, c = x.shape
    oh, ow = values.shape[1:3]
    top, left = _before(h, kernel[0], strides[0], oh), _before(w, kernel[1], strides[1], ow)
    y, x_ = argmax // (w * c), argmax // c % w  # TF's (y * W + x) * C + c
    origin_y = tf.cast(tf.range(oh) * strides[0] - top, tf.int64)[None, :, None, None]
    origin_x = tf.cast(tf.range(ow) * strides[1] - left, tf.int64)[None, None, :, None]
    position = (y - origin_y) * kernel[1] + (x_ - origin_x)  # inside the window, padding included
    return values, tf.cast(position, tf.float32) + tf.constant(0.1, tf.float32)


def _unpool(tf, values, indices, kernel, strides):
    """(the unpooled tensor, the same from the last update per cell only, how many cells had two)."""
    n, h, w, c = values.shape
    (kh, kw), (sh, sw) = kernel, strides
    oh, ow = h * kh, w * kw
    # MediaPipe's unpooling pads as ComputePadding(stride, in = oh, filter, out = h): C's truncating
    # division of a negative total and the clamp give 0 either way
    top, left = max(((h - 1) * sh + kh - oh) // 2, 0), max(((w - 1) * sw + kw - ow) // 2, 0)
    index = tf.cast(indices, tf.int32)  # toward zero, as C's float -> int
    ys = tf.range(h)[None, :, None, None] * sh - top + tf.truncatediv(index, kw)
    xs = tf.range(w)[None, None, :, None] * sw - left + tf.truncatemod(index, kw)
    full = tf.shape(index)
    coords = tf.stack([tf.broadcast_to(tf.range(n)[:, None, None, None], full), ys, xs,
                       tf.broadcast_to(tf.range(c), full)], axis=-1)
    inside = (ys >= 0) & (ys < oh) & (xs >= 0) & (xs < ow)
    coords, updates = tf.boolean_mask(coords, inside), tf.boolean_mask(values, inside)  # row-major: the loop order
    shape = (n, oh, ow, c)
    out = tf.tensor_scatter_nd_update(tf.zeros(shape), coords, updates)
    cell = ((coords[:, 0] * oh + coords[:, 1]) * ow + coords[:, 2]) * c + coords[:, 3]
    order = tf.range(tf.shape(cell)[0])
    last = tf.math.unsorted_segment_max(order, cell, n * oh * ow * c)
    keep = tf.gather(last, cell) == order
    control = tf.scatter_nd(tf.boolean_mask(coords, keep), tf.boolean_mask(updates, keep), shape)
    return out.numpy(), control.numpy(), int(tf.size(cell) - tf.size(tf.unique(cell)[0]))


@pytest.mark.parametrize("case", list(CASES))
def test_pool_unpool(tmp_path, case):
    tf = require_tf()
    x_shape, (kernel, strides, padding, activation), (u_kernel, u_strides), ties = CASES[case]
    rng = np.random.default_rng(len(case))
    c = x_shape[3]
    conv = rng.normal(0, 0.5, (3, 3, c, c)).astype(np.float32)
    bias = rng.normal(0, 0.5, (c,)).astype(np.float32)
    path = tmp_path / "pool.tflite"
    pool_unpool_model(path, x_shape, {"kernel": kernel, "strides": strides, "padding": padding,
                                      "activation": activation}, conv, bias,
                      {"kernel": u_kernel, "strides": u_strides, "padding": "VALID"})
    model, result = convert_in_memory(path)
    assert result.report.counts()["unexpected"] == 0 and result.report.counts()["missing"] == 0
    x = (rng.integers(-2, 3, x_shape) if ties else rng.normal(size=x_shape)).astype(np.float32)

    values, indices = _pool(tf, x, kernel, strides, padding)
    features = tf.nn.bias_add(tf.nn.conv2d(_ACTIVATIONS[activation](tf, values), conv, 1, "SAME"), bias)
    expected, control, twice = _unpool(tf, features, indices, u_kernel, u_strides)
    assert np.array_equal(expected, control), "TF's scatter did not keep the last update per cell"
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        unpooled, got_indices = model(*feed)
    got_indices = to_tf_layout(got_indices)
    print(f"{case}: indices equal: {np.array_equal(got_indices, indices.numpy())}, cells written twice: {twice}")
    assert np.array_equal(got_indices, indices.numpy())
    check(to_tf_layout(unpooled), expected, f"MaxPoolingWithArgmax2D -> conv -> MaxUnpooling2D {case}",
          float64_drift(model, feed, lambda out: out[0]))
    if case.startswith("same-k3s2"):
        assert twice > 0  # overlapping windows: the case exercises the later-value-wins rule


def _rewrite(path, name: str, edit) -> None:
    """The file at ``path`` with ``edit(options bytes) -> bytes`` applied to the custom operator ``name``."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    for op in model.subgraphs[0].operators:
        if model.operatorCodes[op.opcodeIndex].customCode == name.encode():
            op.customOptions = list(edit(bytes(bytearray(op.customOptions))))
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))


@pytest.mark.parametrize(("name", "edit", "needle"), [
    ("MaxPoolingWithArgmax2D", lambda b: b[:12], "custom options of 12 bytes"),
    ("MaxPoolingWithArgmax2D", lambda b: (0).to_bytes(4, "little") + b[4:], "padding 0"),
    ("MaxPoolingWithArgmax2D", lambda b: b[:20] + (9).to_bytes(4, "little") + b[24:], "activation 9"),
    ("MaxUnpooling2D", lambda b: b[:12] + (0).to_bytes(4, "little") + b[16:], "filter (2, 0)"),
], ids=["pool-short", "pool-padding", "pool-activation", "unpool-filter"])
def test_bad_pool_options_refused(tmp_path, name, edit, needle):
    from tests.test_hostile import refuses_without_output

    require_tf()
    path = tmp_path / "pool.tflite"
    pool_unpool_model(path, (1, 4, 4, 2), {"kernel": (2, 2), "strides": (2, 2), "padding": "VALID"},
                      np.ones((3, 3, 2, 2), np.float32), np.zeros(2, np.float32),
                      {"kernel": (2, 2), "strides": (2, 2), "padding": "VALID"})
    _rewrite(path, name, edit)
    refuses_without_output(tmp_path, path, f"CUSTOM({name})", needle)
