"""Full-integer int8 math operators (GELU, EXP, LOG, ABS, RSQRT, SQRT, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, SUM,
REDUCE_MAX, REDUCE_MIN, PRELU, LOG_SOFTMAX, BATCH_MATMUL) in one Keras model made full-integer by TF's
converter (seeded weights and representative dataset), every operator's result a model output, compared in
int8 with the interpreter's builtin kernels without delegates (XNNPACK's distance printed beside).

The probe is exhaustive where it can be: the two int8 inputs together run through all 65,536 pairs of
values (all 256 values for each one-input operator; a third input, positive, for LOG and SQRT), except the divisor values LiteRT refuses (a raw 0)
or leaves undefined (its zero point), which the emulation refuses too (checked here). ELU, NEG and
SQUARE have no int8 kernel in TF's converter: they stay float between DEQUANTIZE and QUANTIZE.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_keras, require_tf
from tests.tflite.models import _randomise, interpret
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
SHAPE = (7, 12)
# each output's operator, in order (the signature calls them output_0, output_1, ...: TF's converter's names)
OUTPUTS = ("GELU", "GELU (tanh)", "EXP", "ABS", "RSQRT", "MAXIMUM", "MINIMUM (constant)", "SQUARED_DIFFERENCE", "DIV",
           "PRELU", "SUM", "REDUCE_MAX", "REDUCE_MIN (keep_dims)", "LOG_SOFTMAX", "BATCH_MATMUL (adj_y)",
           "BATCH_MATMUL (constant)", "BATCH_MATMUL (adj_x)", "LOG", "SQRT", "ELU (float)", "NEG (float)",
           "SQUARE (float)")


def _model(tf, keras):
    """Each one-input operator on a model input (so the probe reaches all 256 values), on its own input
    where TF's converter would otherwise share a subexpression between two fused patterns (GELU's x / 2,
    PRELU's -x); the reductions, LOG_SOFTMAX and BATCH_MATMUL on a Dense layer's output."""
    L, ops = keras.layers, keras.ops
    a, b, c = (keras.Input(SHAPE, name=k) for k in "abc")  # c: positive, for LOG and SQRT
    x = L.Dense(12)(a)
    w = np.random.default_rng(5).normal(size=(1, 12, 5)).astype(np.float32)
    outs = [L.Activation("gelu")(a), L.Lambda(lambda t: tf.nn.gelu(t, approximate=True))(b), ops.exp(a), ops.abs(a),
            ops.rsqrt(ops.abs(a) + 0.5), ops.maximum(a, b), ops.minimum(a, 0.25), ops.square(a - b), a / b,
            L.PReLU(shared_axes=[1])(a), ops.sum(x, axis=1), ops.max(x, axis=2), ops.min(x, axis=1, keepdims=True),
            ops.log_softmax(x), ops.matmul(x, ops.transpose(b, (0, 2, 1))),
            L.Lambda(lambda t: tf.matmul(t, tf.constant(w)))(x),
            L.Lambda(lambda t: tf.matmul(t[0], t[1], transpose_a=True))([x, b]), ops.log(c), ops.sqrt(c), ops.elu(a),
            -b, ops.square(a)]
    return keras.Model([a, b, c], [L.Identity(name=f"output_{k:02d}")(o) for k, o in enumerate(outs)])


@pytest.fixture(scope="module")
def tflite(tmp_path_factory) -> Path:
    tf, keras = require_tf(), require_keras()
    keras.utils.set_random_seed(5)
    model = _model(tf, keras)
    _randomise(model, 5)
    for w in model.weights:  # PReLU's slopes: positive and negative, so both branches run
        if "alpha" in w.path:
            w.assign(np.random.default_rng(5).uniform(-0.5, 0.8, tuple(w.shape)).astype(np.float32))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(5)
    # b is a divisor: kept away from 0, as a model dividing by it would be
    converter.representative_dataset = lambda: ({
        "a": rng.normal(size=(1, *SHAPE)).astype(np.float32),
        "b": (rng.choice([-1, 1], (1, *SHAPE)) * rng.uniform(0.5, 2, (1, *SHAPE))).astype(np.float32),
        "c": rng.uniform(0, 3, (1, *SHAPE)).astype(np.float32)}
        for _ in range(8))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    path = tmp_path_factory.mktemp("int8_math") / "int8_math.tflite"
    path.write_bytes(converter.convert())
    return path


def _divisor_zero_point(path: Path) -> int:
    from tf2torch.readers.tflite.reader import read_model

    graph = read_model(path).subgraphs[0]
    div = next(op for op in graph.operators if op.op == "DIV")
    return int(graph.tensors[div.inputs[1]].quantization.zero_points[0])


def _pairs(refused: set[int]) -> list[np.ndarray]:
    """All (a, b) int8 pairs with b not refused, as a batch of (7, 12) inputs (the last one topped up), and
    c running through all int8 values."""
    a, b = (g.reshape(-1) for g in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij"))
    keep = ~np.isin(b, list(refused))
    a, b = a[keep], b[keep]
    size = int(np.prod(SHAPE))
    extra = -a.size % size
    a, b = np.concatenate([a, a[:extra]]), np.concatenate([b, b[:extra]])
    return [v.reshape(-1, *SHAPE).astype(np.int8) for v in (a, b, np.resize(np.arange(-128, 128), a.shape))]


def test_operators_match_the_reference_kernels(tflite):
    from tf2torch.readers.tflite.reader import read_model

    kinds = sorted({op.op for op in read_model(tflite).subgraphs[0].operators})
    print("operators:", ", ".join(kinds))
    assert {"GELU", "EXP", "LOG", "SQRT", "ABS", "RSQRT", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "DIV", "SUM", "REDUCE_MAX",
            "REDUCE_MIN", "PRELU", "LOG_SOFTMAX", "BATCH_MATMUL", "ELU", "NEG", "SQUARE"} <= set(kinds)
    model, result = convert_in_memory(tflite)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    for cls in ("TFLiteQuantLUT(", "TFLiteQuantDomainLUT(", "TFLiteQuantPairLUT(", "TFLiteQuantMinMax(",
                "TFLiteQuantReduce(", "TFLiteQuantPrelu(", "TFLiteQuantLogSoftmax(", "TFLiteQuantBatchMatMul("):
        assert cls in result.model_source, cls
    xs = _pairs({0, _divisor_zero_point(tflite)})  # (a, b, c): the signature's order, the interpreter's
    order = [i["name"] for i in result.report.interface["inputs"]]  # the converted model's: the graph's
    print("converted model's inputs:", order)
    with torch.no_grad():
        out = model(*[to_torch_layout(xs["abc".index(name)]) for name in order])
    outs = [to_tf_layout(o) for o in out]
    names = [o["name"] for o in result.report.interface["outputs"]]
    order = sorted(range(len(names)), key=lambda i: names[i])  # the interpreter's order (by signature key)
    assert sorted(names) == sorted(f"output_{k}" for k in range(len(OUTPUTS))), names
    outs, labels = [outs[i] for i in order], [OUTPUTS[int(names[i].split("_")[1])] for i in order]
    refs = interpret(tflite, xs)
    fast = interpret(tflite, xs, xnnpack=True)
    for label, got, ref, xnn in zip(labels, outs, refs, fast):
        assert got.dtype == ref.dtype == np.int8 and got.shape == ref.shape, (label, got.dtype, got.shape, ref.shape)
        steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        far = np.abs(xnn.astype(np.int64) - ref.astype(np.int64))
        print(f"{label}: {np.mean(steps == 0):.2%} of {steps.size} int8 outputs equal to the reference kernels', "
              f"max {steps.max()} steps, {len(np.unique(ref))} distinct values (XNNPACK: {np.mean(far == 0):.2%} equal, max {far.max()} steps)")
        assert steps.max() == 0 and len(np.unique(ref)) > 8, label  # (not a saturated constant)


def test_refuses_what_litert_refuses(tflite):
    """A divisor at 0 (LiteRT's check refuses it: the interpreter raises) or at its zero point (a real 0:
    the kernel's result is undefined): the emulation raises, naming the operator."""
    model, result = convert_in_memory(tflite)
    order = [i["name"] for i in result.report.interface["inputs"]]
    zero_point = _divisor_zero_point(tflite)
    a, b, c = (np.zeros((1, *SHAPE), np.int8) + 3 for _ in range(3))
    for bad in sorted({0, zero_point}):
        b[0, 2, 3] = bad
        with pytest.raises(ValueError, match="DIV by an int8 value") as info, torch.no_grad():
            model(*[torch.from_numpy((a, b, c)["abc".index(name)]) for name in order])
        print(f"DIV by {bad} (zero point {zero_point}): {info.value}")
        if bad == 0:
            with pytest.raises(RuntimeError, match="DIV"):
                interpret(tflite, [a, b, c])
        b[0, 2, 3] = 3


def test_table_overflow_saturates(tflite, tmp_path):
    """EXP's output scale rewritten to 1e-10 in the file: exp(x) / scale passes 2**31 for x > -1.54, where
    C's cast to int is undefined; the interpreter saturates at 127 (measured), and so does the table."""
    from tests.tflite.test_quantized import _rewritten
    from tf2torch.readers.tflite.reader import read_model

    def tiny_scale(model, schema) -> None:
        graph = model.subgraphs[0]
        op = next(op for op in graph.operators
                  if model.operatorCodes[op.opcodeIndex].builtinCode == schema.BuiltinOperator.EXP)
        graph.tensors[op.outputs[0]].quantization.scale = [1e-10]

    path = _rewritten(tflite, tmp_path / "exp_overflow.tflite", tiny_scale)
    graph = read_model(path).subgraphs[0]
    exp = next(op for op in graph.operators if op.op == "EXP")
    q = graph.tensors[exp.inputs[0]].quantization
    (s_in,), (z_in,) = q.scales, q.zero_points
    model, result = convert_in_memory(path)
    xs = _pairs({0, _divisor_zero_point(path)})
    order = [i["name"] for i in result.report.interface["inputs"]]
    names = [o["name"] for o in result.report.interface["outputs"]]
    k = OUTPUTS.index("EXP")
    with torch.no_grad():
        got = to_tf_layout(model(*[to_torch_layout(xs["abc".index(name)]) for name in order])[names.index(f"output_{k}")])
    ref = interpret(path, xs)[sorted(names).index(f"output_{k}")]
    overflowing = np.exp(s_in * (xs[0].astype(np.float64) - z_in)) / 1e-10 >= 2.0 ** 31
    print(f"EXP with output scale 1e-10: {np.mean(overflowing):.1%} of the inputs overflow int32; "
          f"{np.mean(got == ref):.2%} of {ref.size} equal to the reference kernels")
    assert overflowing.mean() > 0.2 and np.array_equal(got, ref)
