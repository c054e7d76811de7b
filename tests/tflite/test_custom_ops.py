"""MediaPipe's ``Convolution2DTransposeBias`` custom operator: a ``.tflite`` holding it is built here (TF's
converter writes a TRANSPOSE_CONV with a bias, which this test rewrites into the custom operator with
TF's own flatbuffer object API, as MediaPipe's exporter lays it out), converted, and compared with
``tf.nn.conv2d_transpose`` + bias run by TensorFlow at the output size MediaPipe's kernel computes. The
interpreter cannot run it: the op is registered only in MediaPipe's resolver."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from fixtures.tflite_custom import conv2d_transpose_bias_model as _custom_model
from tests.conftest import require_tf
from tests.support.numerics import check, float64_drift
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf


@pytest.mark.parametrize(("x_hw", "k", "strides", "same"), [((5, 6), (3, 3), (2, 2), True), ((4, 4), (4, 4), (2, 2), True),
                                                           ((5, 3), (3, 2), (2, 3), False)],
                         ids=["same-k3s2-odd-even", "same-k4s2", "valid-k3x2-s2x3"])
def test_conv2d_transpose_bias(tmp_path, x_hw, k, strides, same):
    tf = require_tf()
    rng = np.random.default_rng(0)
    x_shape = (1, *x_hw, 3)
    kernel = rng.normal(0, 0.5, (*k, 4, 3)).astype(np.float32)
    bias = rng.normal(0, 0.5, (4,)).astype(np.float32)
    path = tmp_path / "custom.tflite"
    out_h, out_w = _custom_model(path, x_shape, kernel, bias, strides, same)
    model, result = convert_in_memory(path)
    assert result.report.counts()["unexpected"] == 0 and result.report.counts()["missing"] == 0
    x = rng.normal(size=x_shape).astype(np.float32)
    expected = tf.nn.bias_add(tf.nn.conv2d_transpose(x, kernel, [1, out_h, out_w, 4], strides,
                                                     "SAME" if same else "VALID"), bias).numpy()
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        out = model(*feed)
    check(to_tf_layout(out), expected, f"Convolution2DTransposeBias {x_hw} k{k} s{strides}", float64_drift(model, feed))


def test_bad_custom_options_refused(tmp_path):
    from tests.test_hostile import refuses_without_output

    path = tmp_path / "custom.tflite"
    _custom_model(path, (1, 4, 4, 3), np.ones((3, 3, 4, 3), np.float32), np.full(4, 0.5, np.float32), (2, 2), True)
    data = bytearray(path.read_bytes())
    at = data.find(struct.pack("<iii", 1, 2, 2))
    struct.pack_into("<i", data, at, 7)  # padding 7: no TfLitePadding
    path.write_bytes(bytes(data))
    refuses_without_output(tmp_path, path, "CUSTOM(Convolution2DTransposeBias)", "padding 7")
