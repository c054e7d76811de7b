"""TF 1-style all-uint8 TFLite models (``tf.compat.v1.lite.TFLiteConverter`` with ``inference_type=tf.uint8``:
uint8 weights with a zero point, uint8 activations, int32 biases), made at test time from seeded graphs, then
converted (``tflite/ops_uint8_model.py``) and compared in uint8 with the interpreter's builtin kernels without
delegates on every output; each graph's outputs include the intermediate tensors so every operator is compared
on its own (the ``ties`` model pins the rounding of the requantization's final shift). Printed: exact fraction and max steps. The target is 100 % equal.

A CNN (CONV_2D + RELU, DEPTHWISE_CONV_2D + RELU6, MAX / AVERAGE_POOL_2D, CONCATENATION, MEAN, STRIDED_SLICE,
MUL and ADD of tensors, LOGISTIC, RESHAPE, FULLY_CONNECTED, SOFTMAX) quantized with ``default_ranges_stats``,
an MLP whose ranges come from fake-quant nodes (so the scales and zero points differ from op to op), and
``more``: SUB, TANH, standalone RELU / RELU6 (their multiplier's float32 division meets ties), ADD / MUL of
constants, MEAN keep_dims; ``extra``: MAXIMUM, MINIMUM, PAD, HARD_SWISH, LEAKY_RELU, SUM, REDUCE_MAX / MIN, the
resizes (bilinear: float32 arithmetic, pinned by align_corners / half_pixel_centers fractions), LOG_SOFTMAX, a
requantizing CONCATENATION.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.tflite.models import _interpreter
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf


def _cnn(tf, rng):
    x = tf.compat.v1.placeholder(tf.float32, (1, 12, 12, 3), name="x")
    y = tf.nn.conv2d(x, rng.normal(0, .3, (3, 3, 3, 8)).astype(np.float32), 2, "SAME")
    conv = tf.nn.relu(tf.nn.bias_add(y, rng.normal(0, .1, 8).astype(np.float32)), name="conv")
    y = tf.nn.depthwise_conv2d(conv, rng.normal(0, .3, (3, 3, 8, 1)).astype(np.float32), [1, 1, 1, 1], "SAME")
    dw = tf.nn.relu6(y + rng.normal(0, .1, 8).astype(np.float32), name="dw")
    y = tf.concat([tf.nn.max_pool2d(dw, 2, 1, "SAME"), tf.nn.avg_pool2d(dw, 3, 1, "SAME")], -1, name="pools")
    mean = tf.reduce_mean(y, [1, 2], name="mean")
    flat = tf.reshape(y, (1, -1))
    fc = tf.add(tf.matmul(flat, rng.normal(0, .05, (flat.shape[-1], 10)).astype(np.float32)),
                rng.normal(0, .1, 10).astype(np.float32), name="fc")
    return [x], [conv, dw, y, mean, fc, tf.nn.softmax(fc, name="softmax"),
                 tf.sigmoid(mean * mean[:, :1] + mean, name="logistic")], {"default_ranges_stats": (0, 6)}


def _mlp(tf, rng):
    fq = tf.quantization.fake_quant_with_min_max_args
    x = tf.compat.v1.placeholder(tf.float32, (2, 20), name="x")
    h = fq(tf.matmul(x, fq(rng.normal(0, .3, (20, 16)).astype(np.float32), -1.1, 0.9)) +
           rng.normal(0, .2, 16).astype(np.float32), -3.0, 5.0)
    h = fq(tf.nn.relu(h), 0.0, 4.0, name="h")
    z = fq(tf.matmul(h, fq(rng.normal(0, .3, (16, 16)).astype(np.float32), -0.8, 1.3)), -2.0, 2.5)
    s = fq(tf.add(z, h), -2.5, 6.0, name="sum")
    m = fq(tf.multiply(s, z), -4.0, 7.0, name="prod")
    out = fq(tf.matmul(m, fq(rng.normal(0, .3, (16, 6)).astype(np.float32), -1.0, 1.0)), -3.0, 3.0, name="logits")
    return [x], [h, s, m, out, tf.nn.softmax(out, name="softmax")], {}


def _ties(tf, rng):
    """Weight scale 1, requantization multipliers near 2**-5: the final shift is short and meets exact halves
    often, so the rounding of each kernel's shift is pinned (conv and fully-connected: half up; depthwise: half
    away from zero; the other rule misses 0.1-0.3 % of the outputs)."""
    fq = tf.quantization.fake_quant_with_min_max_args
    x = tf.compat.v1.placeholder(tf.float32, (1, 8, 8, 4), name="x")
    w = rng.uniform(-100, 150, (3, 3, 4, 8)).astype(np.float32)
    conv = fq(tf.nn.conv2d(x, fq(w, -100.0, 155.0), 1, "SAME"), -60.0, 60.0, name="conv")
    w = rng.uniform(-100, 150, (3, 3, 8, 1)).astype(np.float32)
    dw = fq(tf.nn.depthwise_conv2d(conv, fq(w, -100.0, 155.0), [1, 1, 1, 1], "SAME"), -3000.0, 3000.0, name="dw")
    w = rng.uniform(-100, 150, (512, 64)).astype(np.float32)
    fc = fq(tf.matmul(tf.reshape(dw, (1, -1)), fq(w, -100.0, 155.0)), -6e4, 6e4, name="fc")
    w = rng.uniform(-100, 150, (1, 1, 8, 6)).astype(np.float32)  # a 1x1 conv (no im2col) on the depthwise output
    pointwise = fq(tf.nn.conv2d(dw, fq(w, -100.0, 155.0), 1, "VALID"), -6e4, 6e4, name="pointwise")
    w = rng.uniform(-100, 150, (3, 3, 8, 2)).astype(np.float32)  # depth multiplier 2, stride 2
    dw2 = fq(tf.nn.depthwise_conv2d(conv, fq(w, -100.0, 155.0), [1, 2, 2, 1], "SAME"), -3000.0, 3000.0, name="dw2")
    w = rng.uniform(-100, 150, (3, 3, 20, 8)).astype(np.float32)  # 20 channels: 16 (or 8 + 8) in vector loops, 4 after
    tconv = fq(tf.nn.conv2d_transpose(conv, fq(w, -100.0, 155.0), (1, 16, 16, 20), 2, "SAME"), -6e4, 6e4, name="tconv")
    # 15 x 15 x 15 outputs: the last 3375 mod 16 = 15 values in the Quantize step's scalar loop (half away from zero,
    # where the rest rounds half up); small integer weights and a multiplier of 1/16 exactly (0.025 * 1 / 0.4): a
    # short shift that meets exact halves on 1/16 of the outputs without saturating
    w = rng.integers(-3, 4, (3, 3, 15, 4)).astype(np.float32)
    tconv_tail = fq(tf.nn.conv2d_transpose(x, fq(w, -100.0, 155.0), (1, 15, 15, 15), 2, "SAME"), -51.2, 50.8,
                    name="tconv_tail")
    return [x], [conv, dw, fc, pointwise, dw2, tconv, tconv_tail], {}


def _more(tf, rng):
    """SUB of two tensors of different scales, TANH, a standalone RELU (after a CONCATENATION) and RELU6 (after a
    MEAN), ADD / MUL of a per-channel constant and of one number."""
    fq = tf.quantization.fake_quant_with_min_max_args
    x = tf.compat.v1.placeholder(tf.float32, (1, 6, 6, 3), name="x")
    y = fq(tf.nn.conv2d(x, rng.normal(0, .5, (1, 1, 3, 4)).astype(np.float32), 1, "SAME") +
           rng.normal(0, .2, 4).astype(np.float32), -4.0, 5.0, name="y")
    sq = fq(y * y, -1.0, 9.0, name="sq")
    sub = fq(tf.subtract(y, sq), -8.0, 6.5, name="sub")
    cat = tf.concat([y, fq(y * 0.5 + y, -4.0, 5.0)], -1, name="cat")
    relu = fq(tf.nn.relu(cat), 0.0, 4.5, name="relu")
    relu6 = fq(tf.nn.relu6(fq(tf.reduce_mean(cat, [1, 2]), -3.0, 3.5)), 0.0, 3.0, name="relu6")
    addc = fq(tf.add(relu6, rng.normal(0, 1, 8).astype(np.float32)), -3.0, 5.0, name="addc")
    mulc = fq(tf.multiply(relu, rng.normal(0, 1, 8).astype(np.float32)), -6.0, 6.0, name="mulc")
    adds = fq(tf.add(sub, 1.5), -6.0, 8.0, name="adds")
    muls = fq(tf.multiply(sq, 0.37), 0.0, 3.0, name="muls")
    # MEAN keep_dims over a 4x4 image, 20 channels (16 in the kernel's vector loop, 4 in its scalar tail): input and
    # output share one scale, so the multiplier is 1/16 and sums meet exact halves often
    wide = fq(tf.nn.conv2d(x, rng.normal(0, .5, (3, 3, 3, 20)).astype(np.float32), 1, "VALID"), -3.0, 5.5, name="wide")
    meankeep = fq(tf.reduce_mean(wide, [1, 2], keepdims=True), -3.0, 5.5, name="meankeep")
    return [x], [sub, tf.tanh(sub, name="tanh"), relu, relu6, addc, mulc, adds, muls, wide, meankeep], \
        {"default_ranges_stats": (-6, 6)}


def _extra(tf, rng):
    """MAXIMUM of two tensors, MINIMUM with a constant, PAD, HARD_SWISH, LEAKY_RELU, SUM, REDUCE_MAX, REDUCE_MIN,
    RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (TF 1's grid, align_corners, half_pixel_centers; bilinear 2x too),
    LOG_SOFTMAX, a CONCATENATION of three differently quantized inputs (requantizing), TILE, MIRROR_PAD (both modes)."""
    fq = tf.quantization.fake_quant_with_min_max_args
    x = tf.compat.v1.placeholder(tf.float32, (1, 6, 6, 3), name="x")
    y = fq(tf.nn.conv2d(x, rng.normal(0, .5, (1, 1, 3, 4)).astype(np.float32), 1, "SAME") +
           rng.normal(0, .2, 4).astype(np.float32), -4.0, 5.0, name="y")
    sq = fq(y * y * 0.3, -4.0, 5.0, name="sq")
    outs = [tf.maximum(y, sq, name="maximum"), tf.minimum(y, 0.5, name="minimum"),
            tf.pad(y, [[0, 0], [1, 1], [2, 0], [0, 0]], name="pad"),
            fq(y * tf.nn.relu6(y + 3) / 6, -1.0, 5.0, name="hard_swish"),
            fq(tf.nn.leaky_relu(y, 0.2), -1.0, 5.0, name="leaky_relu"),
            fq(tf.reduce_sum(y, [1, 2]), -40.0, 90.0, name="sum"), tf.reduce_max(y, [1, 2], name="reduce_max"),
            tf.reduce_min(y, [2], keepdims=True, name="reduce_min")]
    resize = tf.compat.v1.image
    outs += [resize.resize_bilinear(y, (11, 9), name="bilinear"),
             resize.resize_bilinear(y, (12, 12), name="bilinear_2x"),
             resize.resize_bilinear(y, (11, 4), align_corners=True, name="bilinear_align"),
             resize.resize_bilinear(y, (13, 10), half_pixel_centers=True, name="bilinear_half"),
             resize.resize_nearest_neighbor(y, (13, 7), name="nearest"),
             resize.resize_nearest_neighbor(y, (9, 11), align_corners=True, name="nearest_align"),
             resize.resize_nearest_neighbor(y, (10, 13), half_pixel_centers=True, name="nearest_half"),
             tf.nn.log_softmax(y, name="log_softmax"),
             tf.concat([fq(y, -1.0, 2.0), fq(y * y, 0.0, 9.0), y], -1, name="concat_requantized"),
             tf.tile(y, [1, 2, 1, 3], name="tile"), tf.pad(y, [[0, 0], [2, 1], [1, 3], [0, 0]], "REFLECT", name="reflect"),
             tf.pad(y, [[0, 0], [3, 0], [1, 2], [0, 0]], "SYMMETRIC", name="symmetric")]
    return [x], outs, {"default_ranges_stats": (-6, 6)}


def _make(folder: Path, name: str) -> Path:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        inputs, outputs, options = {"cnn": _cnn, "mlp": _mlp, "ties": _ties, "more": _more, "extra": _extra}[name](tf, np.random.default_rng(3))
        with tf.compat.v1.Session() as session:
            converter = tf.compat.v1.lite.TFLiteConverter.from_session(session, inputs, outputs)
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = {"x": (128.0, 40.0)}  # real = (q - 128) / 40
            for key, value in options.items():
                setattr(converter, key, value)
            path = folder / f"{name}.tflite"
            path.write_bytes(converter.convert())
    return path


# the uint8 modules each model must hold (so a converter falling back to another path fails the test)
CLASSES = {"cnn": ["Linear", "Conv2d"], "mlp": ["Linear"], "ties": ["Linear", "Conv2d"],
           "more": ["Add", "Mul", "LUT", "Rescale"], "extra": ["MinMax", "HardSwish", "LeakyRelu", "Reduce",
                                                                               "ResizeBilinear", "LogSoftmax", "Requantize"]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("uint8_tf1")


@pytest.mark.parametrize("name", ["cnn", "mlp", "ties", "more", "extra"])
def test_matches_the_reference_kernels(folder, name):
    path = _make(folder, name)
    interpreter = _interpreter(path)
    interpreter.allocate_tensors()
    ins, outs = interpreter.get_input_details(), interpreter.get_output_details()
    tensors = {t["name"]: t for t in interpreter.get_tensor_details()}
    assert all(d["dtype"] == np.uint8 for d in ins + outs)
    assert any(t["dtype"] == np.uint8 and t["quantization"][1] not in (0, 128)
               for t in tensors.values()), "no uint8 weights with a zero point: not a TF 1-style model"
    model, result = convert_in_memory(path)
    assert all(f"TFLiteUint8{cls}(" in result.model_source for cls in CLASSES[name]), CLASSES[name]
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    rng = np.random.default_rng(7)
    steps: list[list[np.ndarray]] = [[] for _ in outs]
    for _ in range({"ties": 60, "extra": 100}.get(name, 8)):  # random uint8 inputs over the whole range (saturating too)
        xs = [rng.integers(0, 256, size=d["shape"]).astype(np.uint8) for d in ins]
        for d, x in zip(ins, xs):
            interpreter.set_tensor(d["index"], x)
        interpreter.invoke()
        with torch.no_grad():
            got = model(*[to_torch_layout(x) for x in xs])
        got = [to_tf_layout(o) for o in (got if isinstance(got, tuple) else (got,))]
        for k, (mine, d) in enumerate(zip(got, outs)):
            ref = interpreter.get_tensor(d["index"])
            assert mine.dtype == ref.dtype == np.uint8 and mine.shape == ref.shape, (mine.dtype, mine.shape, ref.shape)
            steps[k].append(np.abs(mine.astype(np.int64) - ref.astype(np.int64)).ravel())
    unequal = []
    for k, d in enumerate(outs):
        s = np.concatenate(steps[k])
        print(f"{name} uint8 output {d['name']!r}: {np.mean(s == 0):.2%} exact, max {s.max()} steps ({s.size} values)")
        if s.max():
            unequal.append(f"{d['name']!r}: {np.mean(s == 0):.2%} exact")
    assert not unequal, f"{name}: {'; '.join(unequal)}"


REFUSED = {"abs_sqdiff": ("full-integer uint8 model", "ABS (no uint8 integer kernel", "SQUARED_DIFFERENCE",
                          "--dequantize"),
           "constant_image": ("ADD", "a uint8 constant operand of shape [1, 4, 4, 3]", "one uint8 value per channel")}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unemulated_uint8_operators_refused(tmp_path, case):
    """On uint8, ABS and SQUARED_DIFFERENCE (every kind named at once, with the --dequantize route) and an
    ADD of a whole-image constant (only one number or one value per channel is emulated) are refused: exit 1, one
    line, nothing written."""
    import tensorflow as tf

    from tests.test_hostile import refuses_without_output

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (1, 4, 4, 3), name="x")
        y = tf.nn.conv2d(x, np.random.default_rng(0).normal(0, .3, (1, 1, 3, 3)).astype(np.float32), 1, "SAME")
        if case == "abs_sqdiff":  # (LiteRT itself refuses both on uint8)
            out = tf.abs(tf.math.squared_difference(y, tf.nn.relu(y)), name="out")
        else:
            out = tf.add(y * y, np.random.default_rng(1).normal(0, 1, (1, 4, 4, 3)).astype(np.float32), name="out")
        with tf.compat.v1.Session() as session:
            converter = tf.compat.v1.lite.TFLiteConverter.from_session(session, [x], [out])
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = {"x": (128.0, 40.0)}
            converter.default_ranges_stats = (-6, 6)
            path = tmp_path / "refused.tflite"
            path.write_bytes(converter.convert())
    refuses_without_output(tmp_path / "run", path, *REFUSED[case])
