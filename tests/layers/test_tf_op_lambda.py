"""Keras 2 records `x + 3.0`, `x * y`, `tf.nn.relu6(x)` as TFOpLambda layers naming a TF function.

tf2torch converts a fixed list of those names (never looking anything up in TensorFlow) and refuses
the rest with the layer's name. Compared with tf_keras's own outputs.
"""

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory, to_torch_layout
from tf2torch.errors import UnsupportedError


@pytest.fixture(scope="module")
def tf_ops_model(tmp_path_factory):
    tf_keras = require_keras("tf_keras")
    import tensorflow as tf

    inp = tf_keras.Input((6, 6, 4))
    x = tf_keras.layers.Conv2D(4, 3, padding="same", name="conv")(inp)
    hard = x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0)  # MobileNetV3's hard-swish, as tf_keras records it
    out = tf.math.add(hard, x)  # tensor + tensor
    out = tf.math.maximum(tf.math.subtract(out, 0.5), -1.0)
    model = tf_keras.Model(inp, out)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("f4") for w in model.get_weights()])
    path = tmp_path_factory.mktemp("tfop") / "ops.h5"
    model.save(path)
    x = rng.normal(size=(2, 6, 6, 4)).astype("f4")
    return path, x, model(x).numpy()


def test_tf_op_lambda_layers_match_tf_keras(tf_ops_model):
    path, x, expected = tf_ops_model
    model, result = convert_in_memory(path)
    with torch.no_grad():
        out = model(to_torch_layout(x)).movedim(1, -1)
    print(f"TFOpLambda model: max abs diff {np.abs(out.numpy() - expected).max():.2e}")
    torch.testing.assert_close(out, torch.from_numpy(expected), atol=1e-5, rtol=1e-5)
    assert "lambda" not in result.model_source.lower()


def test_unknown_tf_function_is_refused_with_the_layer_name(tmp_path):
    tf_keras = require_keras("tf_keras")
    import tensorflow as tf

    inp = tf_keras.Input((5,))
    model = tf_keras.Model(inp, tf.math.cumsum(inp, axis=1))
    path = tmp_path / "cumsum.h5"
    model.save(path)
    with pytest.raises(UnsupportedError) as info:
        convert_in_memory(path)
    assert "math.cumsum" in str(info.value) and "\n" not in str(info.value)
