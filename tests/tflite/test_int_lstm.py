"""The full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input, output and weights, an int16 cell state) that
TF's converter makes of a tf_keras LSTM with a seeded representative dataset, emulated
(runtime/lite_int_lstm.py) and compared in int8, every step of every row, with the interpreter's builtin
kernels without delegates (XNNPACK's distance printed beside). The probe rows: the representative
distribution quantized, the same four times wider (past the calibration: saturated gates, the cell clipped),
and the whole int8 range at random."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_tf
from tests.tflite.models import _randomise, interpret
from tests.tflite.test_quantized import _rewritten
from tests.util import convert_in_memory

pytestmark = pytest.mark.tf
SHAPE = (11, 9)  # steps, features


@pytest.fixture(scope="module")
def lstm(tmp_path_factory) -> Path:
    tf = require_tf()
    import tf_keras

    tf_keras.utils.set_random_seed(6)
    inp = tf_keras.Input(SHAPE, batch_size=4)
    model = tf_keras.Model(inp, tf_keras.layers.LSTM(20, return_sequences=True)(inp))
    _randomise(model, 6)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(6)
    converter.representative_dataset = lambda: ([rng.normal(size=(4, *SHAPE)).astype(np.float32)] for _ in range(6))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    path = tmp_path_factory.mktemp("int_lstm") / "lstm_int8.tflite"
    path.write_bytes(converter.convert())
    return path


def _probe(path: Path) -> np.ndarray:
    from tf2torch.readers.tflite.reader import read_model

    graph = read_model(path).subgraphs[0]
    q = graph.tensors[graph.inputs[0]].quantization
    rng = np.random.default_rng(13)
    real = rng.normal(size=(2, *SHAPE)) * np.array([1.0, 4.0])[:, None, None]
    quantized = np.clip(np.round(real / q.scales[0]) + q.zero_points[0], -128, 127)
    return np.concatenate([quantized, rng.integers(-128, 128, size=(2, *SHAPE))]).astype(np.int8)


def test_int_lstm_matches_the_reference_kernels(lstm):
    from tf2torch.readers.tflite.reader import read_model

    graph = read_model(lstm).subgraphs[0]
    op = next(op for op in graph.operators if op.op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert graph.tensors[op.inputs[19]].dtype == "int16" and graph.tensors[op.outputs[0]].dtype == "int8"
    model, result = convert_in_memory(lstm)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert "TFLiteQuantLSTM(" in result.model_source
    kinds = sorted(p.dtype.name for p in result.plans if p.source)
    assert kinds == ["int32"] * 4 + ["int8"] * 8, kinds  # the file's weights and biases, kept as they are
    x = _probe(lstm)
    with torch.no_grad():
        got = model(torch.from_numpy(x)).numpy()
    for xnnpack in (False, True):
        ref = interpret(lstm, [x], xnnpack=xnnpack)[0]
        assert got.dtype == ref.dtype == np.int8
        steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        rows = ", ".join(f"{np.mean(steps[k] == 0):.1%}" for k in range(x.shape[0]))
        print(f"full-integer LSTM vs {'XNNPACK' if xnnpack else 'reference kernels'}: {np.mean(steps == 0):.2%} "
              f"exact (per probe row {rows}), {np.mean(steps <= 1):.2%} within one step, max {steps.max()} steps "
              f"({steps.size} values; {len(np.unique(ref))} distinct)")
        if not xnnpack:
            assert steps.max() == 0


def test_int_lstm_cell_scale_not_a_power_of_two_refused(lstm, tmp_path):
    """LiteRT takes the cell state's scale as a power of two (its log2 rounded): another one is refused by
    name, nothing written."""
    from tests.test_hostile import refuses_without_output

    def cell_scale(model, schema):
        graph = model.subgraphs[0]
        for op in graph.operators:
            if len(op.inputs) > 19 and graph.tensors[op.inputs[19]].type == schema.TensorType.INT16:
                graph.tensors[op.inputs[19]].quantization.scale = [3.0e-5]

    path = _rewritten(lstm, tmp_path / "cell_scale.tflite", cell_scale)
    print(refuses_without_output(tmp_path, path, "UNIDIRECTIONAL_SEQUENCE_LSTM", "cell state of scale"))
