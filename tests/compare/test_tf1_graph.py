"""TF1 graphs: which tensor is the input, the output, and each module's output (from the report's mapping).

A small graph built with TensorFlow at test time holds the cases: a conv with a bias (``Conv2D`` then
``BiasAdd``: the module's output is the ``BiasAdd``), an unfused batch norm (its output is the final
``add`` of ``x * scale + (beta - mean * scale)``), a Dense as ``MatMul + b``, a labels placeholder that
does not feed the output, an ``is_training`` flag that does, and two ops named ``logits``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_tf
from tf2torch.compare.outdir import OutDir

KEYS = {
    "conv/kernel": "features.conv.weight", "conv/bias": "features.conv.bias",
    "bn/gamma": "features.bn.weight", "bn/beta": "features.bn.bias",
    "bn/moving_mean": "features.bn.running_mean", "bn/moving_variance": "features.bn.running_var",
    "fc/w": "fc.weight", "fc/b": "fc.bias",
}


@pytest.fixture(scope="module")
def graph_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tf = require_tf()
    tf1 = tf.compat.v1
    prefix = tmp_path_factory.mktemp("tf1") / "model.ckpt"
    rng = np.random.default_rng(5)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 6, 6, 2], name="x")
        tf1.placeholder(tf.float32, [None, 3], name="labels")  # training only: does not feed the logits
        training = tf1.placeholder(tf.bool, [], name="is_training")

        def var(name, shape):
            return tf1.get_variable(name, initializer=rng.normal(0, 0.5, shape).astype(np.float32))

        with tf1.variable_scope("conv"):
            y = tf.nn.bias_add(tf.nn.conv2d(x, var("kernel", (3, 3, 2, 4)), 1, "SAME"), var("bias", (4,)))
        with tf1.variable_scope("bn"):
            gamma, beta, mean = var("gamma", (4,)), var("beta", (4,)), var("moving_mean", (4,))
            variance = tf1.get_variable("moving_variance", initializer=rng.uniform(0.5, 1.5, 4).astype(np.float32))
            y = tf1.nn.batch_normalization(y, mean, variance, beta, gamma, 1e-3)
        y = tf.nn.relu(y)
        y = tf.where(training, y * 0.5, y)  # a stand-in for training-only behaviour (dropout)
        y = tf.reduce_mean(y, [1, 2])
        with tf1.variable_scope("fc"):
            logits = tf.matmul(y, var("w", (4, 3))) + var("b", (3,))
        tf.identity(logits, name="logits")
        tf.identity(logits * 2, name="aux/logits")  # deeper in the name tree: not the output
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(sess, str(prefix))
    return prefix


def _reference(prefix: Path, **options):
    from tf2torch.compare.run_tf1 import MetaGraphReference

    return MetaGraphReference(prefix, OutDir(prefix.parent, "model", str(prefix), key_of=KEYS), **options)


def test_input_output_and_flags(graph_prefix):
    ref = _reference(graph_prefix)
    assert [t.name for t in ref.inputs] == ["x:0"]
    assert [t.name for t in ref.outputs] == ["logits:0"]
    assert [t.name for t in ref.feeds] == ["is_training:0"]
    assert ref.input_specs()[0].tf_shape == (None, 6, 6, 2)


def test_module_outputs_include_bias_and_whole_batch_norm(graph_prefix):
    ref = _reference(graph_prefix)
    found = {p.name: p.tf for p in ref.probes}
    assert list(found) == ["features.conv", "features.bn", "fc"]  # network order
    assert found["features.conv"] == "conv/BiasAdd:0"  # not conv/Conv2D: torch's Conv2d adds its bias
    assert found["features.bn"] == "bn/batchnorm/add_1:0"
    assert found["fc"] == "fc/add:0"
    assert {p.prefer for p in ref.probes} == {"cf"}  # NHWC ops: PyTorch's modules are channels-first


def test_run_feeds_and_fetches(graph_prefix):
    ref = _reference(graph_prefix)
    x = np.random.default_rng(0).normal(size=(2, 6, 6, 2)).astype(np.float32)
    run = ref.run([x])
    assert run.outputs[0].shape == (2, 3)
    assert run.layers["features.conv"].shape == (2, 6, 6, 4)
    np.testing.assert_allclose(run.layers["fc"], run.outputs[0])


def test_explicit_names(graph_prefix):
    ref = _reference(graph_prefix, tf_inputs=["x"], tf_outputs=["aux/logits:0"])
    assert [t.name for t in ref.outputs] == ["aux/logits:0"]
