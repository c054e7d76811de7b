"""Full-integer int8 REDUCE_PROD (LiteRT's ``QuantizedReduceProd``: the product rescaled at every step, so the
order of the reads and each step's rounding matter) in one Keras model made full-integer by TF's converter
(seeded weights and representative dataset): over the last axis of the input and of a Dense output, over the
first axis with keep_dims, over two axes at once (row-major reads). Compared in int8 with the interpreter's
builtin kernels without delegates, on a batch of random int8 inputs over the whole range (XNNPACK's distance
printed beside). Printed: exact fraction, max steps, distinct values. The target is 100 % equal.
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
SHAPE = (4, 6)
OUTPUTS = ("last axis", "first axis (keep_dims)", "Dense output", "two axes")


@pytest.fixture(scope="module")
def tflite(tmp_path_factory) -> Path:
    tf, keras = require_tf(), require_keras()
    keras.utils.set_random_seed(6)
    L, ops = keras.layers, keras.ops
    a = keras.Input(SHAPE, name="a")
    outs = [ops.prod(a, axis=-1), ops.prod(a, axis=1, keepdims=True), ops.prod(L.Dense(5)(a), axis=-1),
            L.Lambda(lambda t: tf.reduce_prod(tf.reshape(t, (-1, 2, 2, 6)), [1, 2]))(a)]
    model = keras.Model(a, [L.Identity(name=f"output_{k}")(o) for k, o in enumerate(outs)])
    _randomise(model, 6)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(6)
    converter.representative_dataset = lambda: ([rng.uniform(-1.6, 1.6, (1, *SHAPE)).astype(np.float32)]
                                                for _ in range(16))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    path = tmp_path_factory.mktemp("int8_prod") / "int8_prod.tflite"
    path.write_bytes(converter.convert())
    return path


def test_reduce_prod_matches_the_reference_kernels(tflite):
    from tf2torch.readers.tflite.reader import read_model

    kinds = [op.op for op in read_model(tflite).subgraphs[0].operators]
    print("operators:", ", ".join(kinds))
    assert kinds.count("REDUCE_PROD") >= 4, kinds  # (and int32 ones: the batch size's shape arithmetic)
    model, result = convert_in_memory(tflite)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert result.model_source.count("TFLiteQuantProd((") == 4  # four modules (their first argument: the axes)
    rng = np.random.default_rng(7)
    # the whole int8 range, and values near the zero point (the products then stay off the clamp)
    x = np.concatenate([rng.integers(-128, 128, (400, *SHAPE)), rng.integers(-40, 40, (400, *SHAPE))]).astype(np.int8)
    with torch.no_grad():
        outs = [to_tf_layout(o) for o in model(to_torch_layout(x))]
    names = [o["name"] for o in result.report.interface["outputs"]]
    order = sorted(range(len(names)), key=lambda i: names[i])  # the interpreter's order (by signature key)
    outs, labels = [outs[i] for i in order], [OUTPUTS[int(names[i].split("_")[1])] for i in order]
    refs, fast = interpret(tflite, [x]), interpret(tflite, [x], xnnpack=True)
    for label, got, ref, xnn in zip(labels, outs, refs, fast):
        assert got.dtype == ref.dtype == np.int8 and got.shape == ref.shape, (label, got.dtype, got.shape, ref.shape)
        steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        far = np.abs(xnn.astype(np.int64) - ref.astype(np.int64))
        print(f"REDUCE_PROD {label}: {np.mean(steps == 0):.2%} of {steps.size} int8 outputs equal to the reference "
              f"kernels', max {steps.max()} steps, {len(np.unique(ref))} distinct values (XNNPACK: "
              f"{np.mean(far == 0):.2%} equal, max {far.max()} steps)")
        assert steps.max() == 0 and len(np.unique(ref)) > 16, label  # (not a saturated constant)
