"""The layout table's recurrent entries against TensorFlow itself.

TF1 ``LSTMCell`` / ``BasicLSTMCell`` keep one kernel (in + u, 4u) with gates (i, j, f, o) and add
``forget_bias`` at run time; ``tf1_lstm_kernel`` / ``tf1_lstm_bias`` must turn them into a torch
``nn.LSTM`` (gates i, f, g, o, forget bias folded in) computing the same outputs and states.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import require_keras, require_tf
from tests.util import max_abs
from tf2torch.map import layouts

BATCH, STEPS, FEATURES, UNITS = 2, 6, 3, 5


def _tf1_lstm(cell_class: str, forget_bias: float, seed: int) -> dict[str, np.ndarray]:
    """Run a TF1 graph with the cell over a seeded batch: its variables, outputs and final state."""
    tf = require_tf()
    require_keras("tf_keras")
    # tf.compat.v1.nn.rnn_cell.* resolve to these classes only under TF_USE_LEGACY_KERAS=1 (set before
    # TensorFlow is imported); importing them from tf_keras works either way.
    from tf_keras.src.layers.rnn import legacy_cells

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.compat.v1.placeholder(tf.float32, x.shape)
        cell = getattr(legacy_cells, cell_class)(UNITS, forget_bias=forget_bias)
        outputs, state = tf.compat.v1.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        kernel, bias = cell.variables  # (in + u, 4u) and (4u,)
        with tf.compat.v1.Session(graph=graph) as session:
            values = {"kernel": rng.normal(0.0, 0.5, kernel.shape).astype(np.float32),
                      "bias": rng.normal(0.0, 0.5, bias.shape).astype(np.float32)}
            for var in (kernel, bias):
                var.load(values[var.name.split("/")[-1].split(":")[0]], session)
            out, (c, h) = session.run([outputs, state], {inputs: x})
    return {**values, "x": x, "outputs": out, "c": c, "h": h}


@pytest.mark.parametrize(("cell_class", "forget_bias"), [
    ("LSTMCell", 1.0), ("LSTMCell", 0.0), ("LSTMCell", 0.7), ("BasicLSTMCell", 1.0),
], ids=["lstmcell-forget1", "lstmcell-forget0", "lstmcell-forget0.7", "basiclstmcell-forget1"])
def test_tf1_lstm_cell_layouts(cell_class: str, forget_bias: float) -> None:
    tf1 = _tf1_lstm(cell_class, forget_bias, seed=3)
    lstm = torch.nn.LSTM(FEATURES, UNITS, batch_first=True)
    converted = {
        "weight_ih_l0": layouts.tf1_lstm_kernel(FEATURES, "ih").apply(tf1["kernel"]),
        "weight_hh_l0": layouts.tf1_lstm_kernel(FEATURES, "hh").apply(tf1["kernel"]),
        "bias_ih_l0": layouts.tf1_lstm_bias(forget_bias).apply(tf1["bias"]),
        "bias_hh_l0": np.zeros(4 * UNITS, np.float32),
    }
    shapes = [layouts.tf1_lstm_kernel(FEATURES, part).out_shape(tf1["kernel"].shape) for part in ("ih", "hh")]
    assert shapes == [(4 * UNITS, FEATURES), (4 * UNITS, UNITS)]  # known before reading any data
    lstm.load_state_dict({k: torch.from_numpy(v) for k, v in converted.items()}, strict=True)
    with torch.no_grad():
        out, (h, c) = lstm(torch.from_numpy(tf1["x"]))
    for name, actual, expected in (("outputs", out, tf1["outputs"]), ("h", h[0], tf1["h"]), ("c", c[0], tf1["c"])):
        diff = max_abs(actual.numpy(), expected)
        print(f"{cell_class} forget_bias={forget_bias} {name}: max abs diff {diff:.3g}")
        torch.testing.assert_close(actual, torch.from_numpy(expected), atol=1e-5, rtol=1e-5)


def test_tf1_lstm_bias_adds_forget_bias_to_the_forget_block_only() -> None:
    bias = np.arange(8, dtype=np.float32)  # u = 2: blocks i=[0, 1], j=[2, 3], f=[4, 5], o=[6, 7]
    out = layouts.tf1_lstm_bias(1.5).apply(bias)
    np.testing.assert_array_equal(out, [0, 1, 5.5, 6.5, 2, 3, 6, 7])  # (i, f + 1.5, g=j, o)
