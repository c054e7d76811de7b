"""A TF1 checkpoint whose .meta graph has no Placeholder holds no model: its weights are written as a bare
state_dict without decoding the graph (the gate in pipelines/tf_graph.py); one with a Placeholder feeding a
weight still becomes a generated model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from tests.conftest import require_tf
from tf2torch import api
from tf2torch.readers import checkpoint

pytestmark = pytest.mark.tf


def save_tf1(prefix: Path, with_input: bool) -> dict[str, np.ndarray]:
    """A TF1 Saver checkpoint: a dense layer's two variables, and a Placeholder feeding them when asked."""
    tf = require_tf()
    tf1 = tf.compat.v1
    rng = np.random.default_rng(7)
    graph = tf.Graph()
    with graph.as_default():
        w = tf1.get_variable("dense/kernel", initializer=rng.standard_normal((6, 3)).astype("float32"))
        b = tf1.get_variable("dense/bias", initializer=rng.standard_normal(3).astype("float32"))
        if with_input:
            x = tf1.placeholder(tf.float32, [None, 6], name="input")
            tf1.identity(tf1.nn.bias_add(tf1.matmul(x, w), b), name="logits")
        saver = tf1.train.Saver()
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, str(prefix))
    reader = tf.train.load_checkpoint(str(prefix))  # what TF itself reads back is the truth
    return {name: reader.get_tensor(name) for name in ("dense/kernel", "dense/bias")}


def test_a_graph_without_placeholders_is_written_bare_without_decoding_it(tmp_path: Path, monkeypatch) -> None:
    stored = save_tf1(tmp_path / "model.ckpt", with_input=False)

    def never(meta):
        raise AssertionError(f"{meta}: the graph was decoded although no Placeholder can feed a model")

    monkeypatch.setattr(checkpoint, "read_meta_tf_graph", never)
    spec = api.read(tmp_path / "model.ckpt")
    assert spec.tf_graph is not None and not spec.graph_placeholders
    result = api.convert(tmp_path / "model.ckpt", tmp_path / "out")
    assert any("the graph has no model" in note for note in result.report.notes), result.report.notes
    assert not (tmp_path / "out" / "model.py").exists()
    got = load_file(tmp_path / "out" / "model.safetensors")
    errors = {"kernel": np.abs(got["dense.weight"] - stored["dense/kernel"].T).max(),
              "bias": np.abs(got["dense.bias"] - stored["dense/bias"]).max()}
    print(f"bare state_dict vs TF's checkpoint reader: max abs error {errors}")
    assert max(errors.values()) == 0.0


def test_a_placeholder_feeding_a_weight_still_gives_a_generated_model(tmp_path: Path) -> None:
    save_tf1(tmp_path / "model.ckpt", with_input=True)
    spec = api.read(tmp_path / "model.ckpt")
    assert spec.graph_placeholders
    api.convert(tmp_path / "model.ckpt", tmp_path / "out")
    assert (tmp_path / "out" / "model.py").is_file()
