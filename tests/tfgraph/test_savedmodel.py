"""TF2 SavedModels with no Keras metadata (``tf.saved_model.save`` of a ``tf.Module``, Keras 3
``model.export()``) to generated PyTorch: the signature's functions inlined, its captures resolved to
checkpoint variables, compared with the signature's own output in TensorFlow (random seeded weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_keras, require_tf
from tests.test_hostile import run_cli
from tests.tfgraph.graphs import run_generated
from tf2torch import api


def _module_mlp(tf, folder: Path, rng) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.w1 = tf.Variable(rng.normal(0, 0.5, (8, 16)).astype(np.float32), name="w1")
            self.b1 = tf.Variable(rng.normal(0, 0.1, (16,)).astype(np.float32), name="b1")
            self.w2 = tf.Variable(rng.normal(0, 0.5, (16, 4)).astype(np.float32), name="w2")

        @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
        def logits(self, x):
            return tf.matmul(tf.nn.relu(tf.matmul(x, self.w1) + self.b1), self.w2)

        @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
        def probabilities(self, x):
            return {"probs": tf.nn.softmax(self.logits(x))}

    module = MLP()
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.logits,
                                                         "probabilities": module.probabilities})
    x = rng.normal(size=(3, 8)).astype(np.float32)
    return x, {"serving_default": module.logits(x).numpy(), "probabilities": module.probabilities(x)["probs"].numpy()}


def _module_convnet(tf, folder: Path, rng) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    class ConvNet(tf.Module):
        def __init__(self):
            super().__init__()
            self.k = tf.Variable(rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32), name="conv/kernel")
            self.kb = tf.Variable(rng.normal(0, 0.1, (8,)).astype(np.float32), name="conv/bias")
            self.scale = tf.Variable(rng.uniform(0.5, 1.5, (8,)).astype(np.float32), name="bn/gamma")
            self.offset = tf.Variable(rng.normal(0, 0.1, (8,)).astype(np.float32), name="bn/beta")
            self.mean = tf.Variable(rng.normal(0, 0.1, (8,)).astype(np.float32), name="bn/mean")
            self.var = tf.Variable(rng.uniform(0.5, 1.5, (8,)).astype(np.float32), name="bn/variance")
            self.w = tf.Variable(rng.normal(0, 0.3, (4, 5)).astype(np.float32), name="fc/kernel")

        @tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32, name="img")])
        def __call__(self, img):
            y = tf.nn.bias_add(tf.nn.conv2d(img, self.k, 2, "SAME"), self.kb)  # 16 -> 8: pads 0 / 1
            y, *_ = tf.raw_ops.FusedBatchNormV3(x=y, scale=self.scale, offset=self.offset, mean=self.mean,
                                                variance=self.var, epsilon=0.01, is_training=False)
            a, b = tf.split(tf.nn.relu(y), 2, axis=3)
            y = tf.reduce_mean(tf.concat([b, a * 0.5], axis=3)[:, :, :, 2:6], [1, 2])
            return {"logits": tf.matmul(y, self.w), "pooled": tf.nn.tanh(y)}

    module = ConvNet()
    tf.saved_model.save(module, str(folder), signatures=module.__call__)
    x = rng.normal(size=(2, 16, 16, 3)).astype(np.float32)
    out = module(x)
    return x, {"serving_default": [out["logits"].numpy(), out["pooled"].numpy()]}


def _keras_mobilenet_export(tf, folder: Path, rng) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    keras = require_keras()
    keras.utils.set_random_seed(3)
    model = keras.applications.MobileNetV2(input_shape=(64, 64, 3), weights=None, classes=6)
    for layer in model.layers:  # random statistics, so a lost or misplaced batch norm shows
        if isinstance(layer, keras.layers.BatchNormalization):
            g, b, mean, var = layer.get_weights()
            layer.set_weights([1 + rng.normal(0, 0.1, g.shape), rng.normal(0, 0.1, b.shape),
                               rng.normal(0, 0.1, mean.shape), rng.uniform(0.5, 1.5, var.shape)])
    model.export(str(folder), verbose=False)
    x = rng.normal(size=(2, 64, 64, 3)).astype(np.float32)
    return x, {"serving_default": model(x, training=False).numpy()}


def _keras_encoder_export(tf, folder: Path, rng) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A small transformer encoder block: multi-head self-attention (einsums), two layer norms, a GELU
    feed-forward (Dense on (N, T, C): tf.tensordot in the export)."""
    keras = require_keras()
    keras.utils.set_random_seed(4)
    tokens = keras.Input((10, 16), name="tokens")
    h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="mha")(tokens, tokens)
    h = keras.layers.LayerNormalization(epsilon=1e-5, name="ln1")(tokens + h)
    f = keras.layers.Dense(32, activation="gelu", name="ff1")(h)
    out = keras.layers.LayerNormalization(name="ln2")(h + keras.layers.Dense(16, name="ff2")(f))
    model = keras.Model(tokens, out)
    for layer in model.layers:  # gammas and betas away from 1 and 0, so a lost one shows
        if isinstance(layer, keras.layers.LayerNormalization):
            layer.set_weights([1 + rng.normal(0, 0.2, (16,)), rng.normal(0, 0.2, (16,))])
    model.export(str(folder), verbose=False)
    x = rng.normal(size=(2, 10, 16)).astype(np.float32)
    return x, {"serving_default": model(x).numpy()}


SOURCES = {"tf.Module MLP": _module_mlp, "tf.Module conv net": _module_convnet,
           "Keras 3 MobileNetV2 model.export()": _keras_mobilenet_export,
           "Keras 3 transformer encoder model.export()": _keras_encoder_export}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (name, folder, input, {signature: TF's output}); each source is built once per module."""
    cache: dict[str, tuple] = {}

    def get(name: str) -> tuple:
        if name not in cache:
            tf = require_tf()
            folder = tmp_path_factory.mktemp("savedmodel") / "export"
            rng = np.random.default_rng(sum(map(ord, name)))
            cache[name] = (name, folder, *SOURCES[name](tf, folder, rng))
        return cache[name]

    return get


def _relative(got, expected) -> float:
    return float(np.abs(got - expected).max()) / max(float(np.abs(expected).max()), 1e-12)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_savedmodel_signature_converts_to_the_same_numbers(built, source):
    name, folder, x, outputs = built(source)
    for signature, expected in outputs.items():
        result = api.convert(folder, None, dry_run=True, signature=signature if signature != "serving_default" else None)
        counts = result.report.counts()
        assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
        got = run_generated(result, x)
        pairs = list(zip(got, expected)) if isinstance(expected, list) else [(got, expected)]
        for i, (g, e) in enumerate(pairs):
            rel = _relative(g, e)
            print(f"{name} signature {signature} output {i}: max rel err vs TF {rel:.2e}; {counts}")
            assert g.shape == e.shape and rel <= 1e-5


def test_keras_export_is_a_readable_model(built):
    _, folder, *_ = built("Keras 3 MobileNetV2 model.export()")
    source = api.convert(folder, None, dry_run=True).model_source
    # Keras 3 exports its batch norms as Rsqrt/Mul/Sub arithmetic: recognised as BatchNorm2d again, and
    # the modules are named after the Keras layers (their variables' names), not the export's op scopes.
    assert source.count("nn.BatchNorm2d(") == 52 and "self.block_1_expand_BN = nn.BatchNorm2d(" in source
    assert "StatefulPartitionedCall" not in source and "mobilenetv2" not in source.split("def forward")[1]


def test_unknown_signature_is_a_usage_error_naming_the_ones_there(built, tmp_path):
    _, folder, *_ = built("tf.Module MLP")
    result = run_cli("convert", folder, "-o", tmp_path / "out", "--signature", "nope")
    assert result.exit_code == 2 and not (tmp_path / "out").exists(), result.stderr  # a usage error
    assert "no signature 'nope'; the SavedModel has probabilities, serving_default" in result.stderr
    summary = run_cli("inspect", folder)
    assert "signature probabilities: x -> probs" in summary.stdout, summary.stdout


def test_keras_encoder_export_reads_like_the_model(built):
    """The export writes layer norms as moments and rsqrt, GELU as erfc, the attention biases after the
    head split: put back as nn.LayerNorm, nn.GELU, and Linear biases (the numbers are checked above)."""
    _, folder, *_ = built("Keras 3 transformer encoder model.export()")
    source = api.convert(folder, None, dry_run=True).model_source
    assert source.count("nn.LayerNorm((16,), eps=") == 2 and "self.ln1 = nn.LayerNorm((16,), eps=1e-05" in source
    forward = source.split("def forward")[1].split("\n\n")[0]
    assert "nn.GELU()" in source and "torch.erfc" not in forward and "torch.rsqrt" not in forward, forward
    assert "self.mha.query = nn.Linear(16, 16, bias=True)" in source and "TFConstant" not in source
    assert "torch.einsum('BTNH,BSNH->BNTS'" in source


def test_a_savedmodel_without_signatures_is_its_weights(tmp_path):
    """A tf.Module saved with variables and no tf.function holds no model: a bare state_dict, and the
    report says why (as before SavedModel graphs were read)."""
    tf = require_tf()
    module = tf.Module()
    module.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    tf.saved_model.save(module, str(tmp_path / "export"))
    result = api.convert(tmp_path / "export", None, dry_run=True)
    assert result.model_source is None and result.report.mode == "bare"
    assert any("has no model" in n for n in result.report.notes), result.report.notes
