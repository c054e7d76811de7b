"""Standalone RELU / RELU6 / LEAKY_RELU on int8 and int16 (16x8) against LiteRT's builtin kernels.

``ReluPrepare`` and ``LeakyReluPrepare`` compute the rescaling multiplier from ``input->params.scale /
output->params.scale``: two floats, so a float32 division, widened to double afterwards
(``tflite/quant_math.relu_quotient``); QUANTIZE's Prepare divides in double. The two quotients give
different fixed-point multipliers, and outputs part where the rescaled value lies near a rounding tie. The
model puts each activation after a RESHAPE (nothing to fuse into), so the converter writes it as its own
operator with an output scale of its own; the probes cover the whole int8 input range many times over. A
control converts again with the double quotient: on int16 it misses outputs (the probe tells the rules apart);
on int8 the two multipliers round every code alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_keras, require_tf
from tests.tflite.models import interpret
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
WIDTH = 256


def _model(keras, leaky: bool):
    x = keras.Input((WIDTH,))
    h = keras.layers.Dense(WIDTH)(x)
    r = keras.layers.Reshape((16, WIDTH // 16))(h)  # RESHAPE keeps h's scale; nothing for the activations to fuse into
    outs = [keras.layers.ReLU(max_value=6.0)(r), keras.layers.ReLU()(r)]
    if leaky:  # (LEAKY_RELU has no int16 kernel tf2torch emulates: 16x8 refuses it)
        outs.append(keras.layers.LeakyReLU(negative_slope=0.3)(r))
    return keras.Model(x, [keras.layers.Reshape((WIDTH,))(o) for o in outs])


def _tflite(folder: Path, mode: str) -> Path:
    tf, keras = require_tf(), require_keras()
    keras.utils.set_random_seed(5)
    model = _model(keras, leaky=mode == "int8")
    rng = np.random.default_rng(5)
    model.layers[1].set_weights([rng.normal(0, 0.3, (WIDTH, WIDTH)).astype("f4"), rng.normal(0, 1, WIDTH).astype("f4")])
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([rng.normal(0, 3, (1, WIDTH)).astype(np.float32)] for _ in range(8))
    if mode == "int8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    else:  # 16x8: int16 activations, float input and output
        converter.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    path = folder / f"relu_{mode}.tflite"
    path.write_bytes(converter.convert())
    return path


def _outputs(path: Path, x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    model, result = convert_in_memory(path)
    with torch.no_grad():
        out = model(to_torch_layout(x))
    names = [o["name"] for o in result.report.interface["outputs"]]
    got = [to_tf_layout(o) for o in out]
    return [got[i] for i in sorted(range(len(names)), key=lambda i: names[i])], interpret(path, [x])


def _missed(got: list[np.ndarray], ref: list[np.ndarray]) -> list[int]:
    return [int(np.count_nonzero(g != r)) for g, r in zip(got, ref)]


@pytest.mark.parametrize("mode", ["int8", "int16x8"])
def test_standalone_relus_divide_the_scales_in_float32(tmp_path, monkeypatch, mode):
    path = _tflite(tmp_path, mode)
    rng = np.random.default_rng(9)
    if mode == "int8":  # every int8 code many times over, in every position
        x = np.stack([rng.permutation(np.arange(-128, 128)) for _ in range(64)]).astype(np.int8)
    else:
        x = rng.normal(0, 3, (64, WIDTH)).astype(np.float32)
    got, ref = _outputs(path, x)
    missed = _missed(got, ref)
    print(f"{mode}: RELU6 / RELU (/ LEAKY_RELU) outputs differing from the builtin kernels: {missed} of {ref[0].size} "
          "each")
    assert not any(missed)

    from tf2torch.tflite import quant_math

    monkeypatch.setattr(quant_math, "relu_quotient", lambda s_in, s_out: s_in / s_out)  # the double quotient
    for module in ("ops_int_act", "ops_int16_act"):
        monkeypatch.setattr(f"tf2torch.tflite.{module}.relu_quotient", lambda s_in, s_out: s_in / s_out, raising=False)
    control = _missed(_outputs(path, x)[0], ref)
    print(f"{mode} control, scales divided in double: {control} outputs differ")
    if mode == "int16x8":  # int16 products are wide enough for the two multipliers to part (measured: [4, 2])
        assert sum(control) > 0, "the probe cannot tell the two quotients apart"
    # (on int8 they did not part on any of the 256 codes for 8,000 nearby output scales tried while writing this
    # test: there it follows the kernel's Prepare without an observable difference)
