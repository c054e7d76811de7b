"""``--suggest-rules``: a checkpoint with no graph (no .meta: no creation order) whose four same-sized
layers the matcher must refuse to pair by position gets one ``[[rename]]`` for the family; with it the
conversion matches what TF computed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tests.conftest import require_tf
from tests.util import load_source, state_dict
from tf2torch import api
from tf2torch.cli import EXIT_ERROR, main

PORT = '''import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block.fc(x))
        return x
'''


@pytest.fixture(scope="module")
def tower(tmp_path_factory):
    tf = require_tf()
    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp("suggest")
    rng = np.random.default_rng(21)
    x = rng.normal(size=(3, 8)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, 8])
        y = inputs
        for i in range(4):
            with tf1.variable_scope(f"tower/layer_{i}/dense"):
                w = tf1.get_variable("kernel", initializer=rng.normal(0, 0.5, (8, 8)).astype(np.float32))
                b = tf1.get_variable("bias", initializer=rng.normal(0, 0.5, 8).astype(np.float32))
                y = tf.nn.relu(tf.matmul(y, w) + b)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            expected = sess.run(y, {inputs: x})
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"), write_meta_graph=False)
    (folder / "port.py").write_text(PORT)
    return folder, x, expected


def test_suggested_rename_settles_a_family_the_matcher_refused(tower):
    folder, x, expected = tower
    runner = CliRunner()
    args = ["convert", str(folder / "model.ckpt"), "--model", f"{folder / 'port.py'}:Tower"]
    refused = runner.invoke(main, [*args, "-o", str(folder / "out")])
    assert refused.exit_code == EXIT_ERROR  # eight same-shaped candidates each way: never by position
    suggested = runner.invoke(main, [*args, "--suggest-rules"])
    print(suggested.output)
    assert suggested.exit_code == 0
    assert 'pattern = "^tower/layer_(\\\\d+)/dense/"' in suggested.output
    assert 'replace = "blocks/\\\\1/fc/"' in suggested.output
    rules = folder / "rules.toml"
    rules.write_text(suggested.output)
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{folder / 'port.py'}:Tower", rules=rules)
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(torch.from_numpy(x)).numpy()
    diff = float(np.abs(out - expected).max())
    print(f"with the suggested rules: max abs diff {diff:.2e}")
    assert diff <= 1e-5 * float(np.abs(expected).max())
