"""Build small TF1 graphs with TensorFlow, randomise them, and save them the three ways users have them:
frozen to a GraphDef ``.pb`` (variables made Consts) and as ``.meta`` + checkpoint; run tf2torch on one
and compare the generated model with TF's output for the same input."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tests.conftest import require_tf
from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api


@dataclass
class Saved:
    folder: Path
    x: np.ndarray
    expected: np.ndarray
    output: str  # the output op's name

    @property
    def frozen(self) -> Path:
        return self.folder / "frozen.pb"

    @property
    def checkpoint(self) -> Path:
        return self.folder / "model.ckpt"


def save_graph(folder: Path, build: Callable, shape: tuple[int, ...], seed: int = 0, batch: int = 2) -> Saved:
    """``build(tf1, x, var) -> output`` where ``var(name, shape)`` makes a random variable."""
    tf = require_tf()
    tf1 = tf.compat.v1
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, *shape], name="input")

        def var(name, vshape, low=None):
            value = rng.uniform(low, 1.5, vshape) if low is not None else rng.normal(0, 0.4, vshape)
            return tf1.get_variable(name, initializer=value.astype(np.float32), use_resource=False)

        out = build(tf1, x, var)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            data = rng.normal(size=(batch, *shape)).astype(np.float32)
            expected = sess.run(out, {x: data})
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"))
            frozen = tf1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), [out.op.name])
            (folder / "frozen.pb").write_bytes(frozen.SerializeToString())
    return Saved(folder, data, expected, out.op.name)


def run_generated(result, x: np.ndarray) -> np.ndarray | list[np.ndarray]:
    namespace = load_source(result.model_source, "model.py")
    model = namespace["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x))
    outs = [o.numpy() for o in out] if isinstance(out, tuple) else [out.numpy()]
    outs = [np.moveaxis(o, 1, -1) if o.ndim >= 4 else o for o in outs]  # the model returns NCHW images
    return outs if isinstance(out, tuple) else outs[0]


def check(saved: Saved, source: Path, label: str, **options) -> float:
    result = api.convert(source, None, dry_run=True, **options)
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    out = run_generated(result, saved.x)
    assert out.shape == saved.expected.shape, (out.shape, saved.expected.shape)
    rel = float(np.abs(out - saved.expected).max()) / max(float(np.abs(saved.expected).max()), 1e-12)
    print(f"{label} ({source.name}): max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5
    return rel
