"""QUANTIZE of float values (int8, int16, uint8) against LiteRT's builtin kernel, position by position.

``optimized_ops::AffineQuantize`` runs a vector loop over the tensor's flat (channels-last) order, 8 values at a
time — x times the float32 reciprocal of the scale, rounded half to even — and a scalar loop over the last
``size mod 8`` values — x / scale in double, rounded half away from zero (runtime/lite_quantize.py). The probes
hold exact ties ((k + 1/2) steps) and values where x / scale and x * (1 / scale) round apart, on batch sizes
whose flat sizes are and are not multiples of 8, on an image input (channels-first in PyTorch: the tail is the
last pixel's last channels in TFLite's order) and a flat one. Each probe is also checked to tell the rules
apart: one rule for every position would fail on it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_keras, require_tf
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
BATCHES = (1, 2, 3, 8)  # image (3, 5, 3): 45 values a sample, flat sizes 45, 90, 135, 360 (mod 8: 5, 2, 7, 0)
TYPES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def _probe(rng: np.random.Generator, shape: tuple[int, ...], scale: np.float32, zero: int) -> np.ndarray:
    """Half exact ties, half values whose x / scale and x * float32(1 / scale) round to different integers."""
    reciprocal = np.float32(1.0 / np.float64(scale))
    size = int(np.prod(shape))
    ties = ((rng.integers(-90, 90, size) + 0.5) * scale).astype(np.float32)
    # near ties, a few ulps either side: where the float32 product and the double quotient part ways
    near = ((rng.integers(-90, 90, 20_000) + 0.5) * scale).astype(np.float32)
    pool = np.concatenate([near + np.float32(u) * np.spacing(near) for u in (-3, -2, -1, 1, 2, 3)])
    apart = pool[np.round(pool.astype(np.float64) / np.float64(scale)) != np.round(pool * reciprocal)]
    assert apart.size > 100, apart.size
    values = ties.copy()
    values[1::2] = rng.choice(apart, values[1::2].size)
    return values.reshape(shape)


def _rules(x: np.ndarray, scale: np.float32, zero: int, dtype: str) -> dict[str, np.ndarray]:
    """The candidate rules on every position, in TFLite's flat order."""
    low, high = TYPES[dtype]
    v = x.reshape(-1).astype(np.float64) / np.float64(scale)
    away = np.sign(v) * np.floor(np.abs(v) + 0.5)
    even = np.round((x.reshape(-1) * np.float32(1.0 / np.float64(scale))).astype(np.float32)).astype(np.float64)
    return {name: np.clip(r + zero, low, high) for name, r in (("divide, halves away", away), ("reciprocal, "
                                                                "halves to even", even))}


def _interpreter_quantize(path: Path, x: np.ndarray) -> tuple[np.ndarray, float, int]:
    """The first QUANTIZE's output (every tensor kept), its scale and zero point."""
    tf = require_tf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interp = tf.lite.Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                                     experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                     .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    detail = interp.get_input_details()[0]
    interp.resize_tensor_input(detail["index"], list(x.shape))
    interp.allocate_tensors()
    interp.set_tensor(detail["index"], x)
    interp.invoke()
    index = next(op["outputs"][0] for op in interp._get_ops_details() if op["op_name"] == "QUANTIZE")
    q = next(t for t in interp.get_tensor_details() if t["index"] == index)["quantization_parameters"]
    return np.array(interp.get_tensor(index)), float(q["scales"][0]), int(q["zero_points"][0])


def _keras_model(dtype: str, folder: Path) -> Path:
    """An image input through a conv and a flat one through a Dense, float in and out; 16x8 for int16."""
    tf, keras = require_tf(), require_keras()
    keras.utils.set_random_seed(3)
    L = keras.layers
    inp = keras.Input((3, 5, 3))
    model = keras.Model(inp, L.Conv2D(4, 3, padding="same")(inp))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    converter.representative_dataset = lambda: ([rng.normal(size=(1, 3, 5, 3)).astype(np.float32)] for _ in range(4))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if dtype == "int8" else
                                           tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    path = folder / f"quantize_{dtype}.tflite"
    path.write_bytes(converter.convert())
    return path


def _uint8_model(folder: Path) -> Path:
    """TF 1's converter with inference_type uint8 and a float input: QUANTIZE float -> uint8 (zero point 141). The
    model's uint8 kernels are not emulated (refused): the QUANTIZE module is checked on its own."""
    tf = require_tf()
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, (None, 3, 5, 3), name="input")
        fq = tf.quantization.fake_quant_with_min_max_args
        out = tf.identity(fq(tf.nn.relu(fq(x, -2.1, 1.7)), 0.0, 2.0), name="out")
        with tf1.Session(graph=graph) as sess:
            converter = tf1.lite.TFLiteConverter.from_session(sess, [x], [out])
            converter.inference_type = tf.uint8
            converter.inference_input_type = converter.inference_output_type = tf.float32
            converter.quantized_input_stats = {"input": (127.5, 127.5 / 2.0)}
            path = folder / "quantize_uint8.tflite"
            path.write_bytes(converter.convert())
    return path


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8"])
def test_quantize_follows_the_vector_loop_and_the_scalar_tail(dtype, tmp_path):
    path = _uint8_model(tmp_path) if dtype == "uint8" else _keras_model(dtype, tmp_path)
    _, scale, zero = _interpreter_quantize(path, np.zeros((1, 3, 5, 3), np.float32))
    if dtype == "uint8":
        from tf2torch.runtime.lite_int16 import TFLiteQuantizeTo

        module = TFLiteQuantizeTo(scale, zero, "uint8", channels_first=True)
    else:
        model, result = convert_in_memory(path)
        kind = "TFLiteQuantize" if dtype == "int8" else "TFLiteQuantizeTo"
        module = next(m for m in model.modules() if type(m).__name__ == kind)
        assert "channels_first=True" in result.model_source  # the image input is channels-first in PyTorch
    rng = np.random.default_rng(7)
    for batch in BATCHES:
        x = _probe(rng, (batch, 3, 5, 3), np.float32(scale), zero)
        expected, _, _ = _interpreter_quantize(path, x)
        with torch.no_grad():
            got = to_tf_layout(module(to_torch_layout(x)))
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        equal = float(np.mean(got == expected))
        tail = x.size % 8
        # each single rule fails somewhere on this probe (the probe tells them apart), tf2torch nowhere
        misses = {name: int(np.sum(r != expected.reshape(-1))) for name, r in _rules(x, np.float32(scale), zero,
                                                                                     dtype).items()}
        print(f"{dtype} QUANTIZE, flat size {x.size} (scalar tail {tail}): {equal:.2%} equal to the reference "
              f"kernel; one rule everywhere misses {misses}")
        np.testing.assert_array_equal(got, expected)
        assert misses["divide, halves away"] > 0
        if tail:
            assert misses["reciprocal, halves to even"] > 0, "no probe value in the scalar tail tells the rules apart"
