"""Dynamic-range ("hybrid") BATCH_MATMUL made by TF's converter (``optimizations=[DEFAULT]``, no dataset: an
int8 constant right-hand side, float activations), against the interpreter's builtin kernels without
delegates: the emulation of LiteRT's per-row input quantization is bit-equal (printed with its relative
error, XNNPACK's and the float product's beside it). A depth of 61 runs the quantizer's scalar tail
(61 = 7 * 8 + 5), 64 its vector loop only; the second product has adj_y.

The hybrid UNIDIRECTIONAL_SEQUENCE_LSTM (int8 gate weights, LiteRT's ``EvalHybrid``) is compared step by
step. Refused by name: a hybrid BATCH_MATMUL with adj_x (LiteRT's builtin kernel gets it wrong: measured
here, 0.5-1.0 relative from the product, where XNNPACK is within 1e-2 of it), a hybrid LSTM with symmetric
input quantization.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_keras, require_tf
from tests.support.numerics import rel_error
from tests.tflite.models import input_shapes, interpret
from tests.util import convert_in_memory

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def tflite(tmp_path_factory) -> Path:
    tf, keras = require_tf(), require_keras()
    L = keras.layers
    rng = np.random.default_rng(9)
    w1 = rng.normal(size=(1, 61, 48)).astype(np.float32)  # >= 1024 values: the converter makes them int8
    w2 = rng.normal(size=(1, 40, 64)).astype(np.float32)
    a, b = keras.Input((5, 61), name="a"), keras.Input((6, 64), name="b")
    folder = tmp_path_factory.mktemp("hybrid_math")
    return _convert(tf, keras.Model([a, b], [L.Lambda(lambda t: tf.matmul(t, w1))(a),
                                             L.Lambda(lambda t: tf.matmul(t, w2, transpose_b=True))(b)]),
                    folder / "hybrid_bmm.tflite")


def _convert(tf, model, path: Path) -> Path:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    path.write_bytes(converter.convert())
    return path


def test_hybrid_batch_matmul_matches_the_reference_kernels(tflite):
    from tf2torch.readers.tflite.reader import read_model

    lite = read_model(tflite)
    graph = lite.subgraphs[0]
    ops = [op for op in graph.operators if op.op == "BATCH_MATMUL"]
    assert len(ops) == 2 and all(graph.tensors[op.inputs[1]].dtype == "int8" for op in ops)
    assert {(op.options["adj_x"], op.options["adj_y"]) for op in ops} == {(False, False), (False, True)}
    model, result = convert_in_memory(tflite)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert result.model_source.count("TFLiteHybridBatchMatMul((") == 2  # two modules (and the class)
    assert sum(p.dtype.name == "int8" for p in result.plans) == 2  # the file's integers, kept
    rng = np.random.default_rng(4)
    xs = [(rng.normal(size=(3, *s[1:])) * rng.uniform(0.1, 3, size=(3, *s[1:]))).astype(np.float32)
          for s in input_shapes(tflite)]  # batch 3, rows of different ranges: each its own scale
    order = [i["name"] for i in result.report.interface["inputs"]]
    names = [o["name"] for o in result.report.interface["outputs"]]
    with torch.no_grad():
        out = model(*[torch.from_numpy(xs["ab".index(k)]) for k in order])
    got = [out[i].numpy() for i in sorted(range(len(names)), key=lambda i: names[i])]
    floats = [_float_product(lite, op, xs[k]) for k, op in enumerate(sorted(ops, key=lambda op: op.options["adj_y"]))]
    for k, (ref, xnn) in enumerate(zip(interpret(tflite, xs), interpret(tflite, xs, xnnpack=True))):
        print(f"hybrid BATCH_MATMUL output {k}: {np.mean(got[k] == ref):.2%} of {ref.size} bit-equal to the reference "
              f"kernels, relative error {rel_error(got[k], ref):.2e}; XNNPACK {rel_error(xnn, ref):.2e}, the "
              f"float product with the dequantized weights {rel_error(floats[k], ref):.2e}")
        np.testing.assert_array_equal(got[k], ref)
        assert rel_error(floats[k], ref) > 1e-4  # the integer arithmetic is what makes the match: a control


def _float_product(lite, op, x: np.ndarray) -> np.ndarray:
    """x times the operator's weights dequantized, in float64: the float model the file came from."""
    t = lite.subgraphs[0].tensors[op.inputs[1]]
    w = lite.array(t).astype(np.float64) * t.quantization.scales[0]
    x = np.swapaxes(x, -1, -2) if op.options["adj_x"] else x
    return x @ (np.swapaxes(w, -1, -2) if op.options["adj_y"] else w)


def test_hybrid_adj_x_refused(tmp_path):
    """adj_x on a hybrid BATCH_MATMUL: the reference kernels' result is measured against the float product
    (XNNPACK beside it), then the conversion is refused by name, nothing written."""
    from tests.test_hostile import refuses_without_output

    tf, keras = require_tf(), require_keras()
    w = np.random.default_rng(2).normal(size=(1, 64, 40)).astype(np.float32)
    a = keras.Input((64, 6))
    path = _convert(tf, keras.Model(a, keras.layers.Lambda(lambda t: tf.matmul(t, w, transpose_a=True))(a)),
                    tmp_path / "adj_x.tflite")
    x = np.random.default_rng(5).normal(size=(3, 64, 6)).astype(np.float32)
    expected = np.swapaxes(x, 1, 2) @ w.astype(np.float64)  # the float model (weights before quantization)
    ref, xnn = interpret(path, [x])[0], interpret(path, [x], xnnpack=True)[0]
    for k in range(3):
        print(f"hybrid BATCH_MATMUL adj_x, item {k}: reference kernels vs the float product "
              f"{rel_error(ref[k], expected[k]):.2e}, XNNPACK {rel_error(xnn[k], expected[k]):.2e}")
    assert rel_error(xnn, expected) < 0.05 < rel_error(ref, expected)  # LiteRT's builtin kernel is the odd one
    print(refuses_without_output(tmp_path, path, "BATCH_MATMUL", "adj_x", "--dequantize"))


@pytest.fixture(scope="module")
def lstm(tmp_path_factory) -> Path:
    """A tf_keras LSTM (the one TF's converter fuses) wide enough for int8 gate weights (48 x 32, 48 x 48)."""
    tf = require_tf()
    import tf_keras

    tf_keras.utils.set_random_seed(3)
    inp = tf_keras.Input((7, 32), batch_size=2)
    model = tf_keras.Model(inp, tf_keras.layers.LSTM(48, return_sequences=True)(inp))
    return _convert(tf, model, tmp_path_factory.mktemp("hybrid_lstm") / "lstm_hybrid.tflite")


def test_hybrid_lstm_matches_the_reference_kernels(lstm):
    """Every step's output against the interpreter: the integer products are exact, sigmoid and tanh are
    torch's float32 functions where LiteRT's are Eigen's (the last bit apart): within 1e-6 relative, where
    the float model with the dequantized weights is 1e-3 away."""
    from tf2torch.readers.tflite.reader import read_model

    op = next(op for op in read_model(lstm).subgraphs[0].operators if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert op.options["asymmetric_quantize_inputs"]
    model, result = convert_in_memory(lstm)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert "TFLiteHybridLSTM(" in result.model_source
    assert sum(p.dtype.name == "int8" for p in result.plans) == 8  # the file's gate weights, kept
    dequantized, _ = convert_in_memory(lstm, dequantize=True)
    x = (np.random.default_rng(0).normal(size=(2, 7, 32)) * [[[0.3]], [[2.0]]]).astype(np.float32)
    ref = interpret(lstm, [x])[0]
    with torch.no_grad():
        got, floats = model(torch.from_numpy(x)).numpy(), dequantized(torch.from_numpy(x)).numpy()
    steps = ", ".join(f"{rel_error(got[:, t], ref[:, t]):.1e}" for t in range(x.shape[1]))
    error, far = rel_error(got, ref), rel_error(floats, ref)
    print(f"hybrid LSTM: relative error {error:.2e} (per step {steps}), {np.mean(got == ref):.1%} bit-equal; the "
          f"float model with dequantized weights {far:.2e}")
    assert error < 1e-6 and far > 1e-3


def test_hybrid_lstm_symmetric_refused(lstm, tmp_path):
    """The hybrid LSTM's other input quantization (symmetric: the option turned off in the file) is not
    emulated: exit 1, one line naming the operator, nothing written."""
    from tests.test_hostile import refuses_without_output
    from tests.tflite.test_quantized import _rewritten

    def symmetric(model, schema) -> None:
        for op in model.subgraphs[0].operators:
            if isinstance(op.builtinOptions, schema.UnidirectionalSequenceLSTMOptionsT):
                op.builtinOptions.asymmetricQuantizeInputs = False

    path = _rewritten(lstm, tmp_path / "symmetric.tflite", symmetric)
    print(refuses_without_output(tmp_path, path, "UNIDIRECTIONAL_SEQUENCE_LSTM", "symmetric", "--dequantize"))
