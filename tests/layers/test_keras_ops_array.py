"""keras.ops array calls recorded in a Keras 3 Functional model, against real Keras: ``ops.pad`` on a
sequence (axes as in Keras) and on a conv's output (channels-first in the generated model), and ``x[...]``
with slices, an integer and a new axis."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(5)
    seq, image = keras.Input((5, 4), name="seq"), keras.Input((6, 6, 3), name="image")
    outputs = [
        keras.ops.pad(seq, [[0, 0], [1, 2], [0, 0]]),  # the time axis, zeros
        keras.ops.pad(keras.layers.Conv2D(2, 3)(image), [[0, 0], [1, 1], [2, 0], [0, 0]], constant_values=-1.5),
        keras.layers.Dense(3)(seq)[:, 1:4, None, :],  # slices and a new axis
        keras.layers.Dense(3)(seq)[:, -1, :],  # an integer drops the time axis
    ]
    path = tmp_path_factory.mktemp("ops_array") / "ops.keras"
    keras.Model([seq, image], outputs).save(path)
    rng = np.random.default_rng(0)
    x = {"seq": rng.normal(size=(2, 5, 4)).astype("float32"), "image": rng.normal(size=(2, 6, 6, 3)).astype("float32")}
    expected = [np.asarray(o) for o in keras.saving.load_model(path)([x["seq"], x["image"]])]
    return path, x, expected


def test_ops_array_matches_keras(saved) -> None:
    path, x, expected = saved
    model, _ = convert_in_memory(path)
    with torch.no_grad():
        got = model(torch.from_numpy(x["seq"]), to_torch_layout(x["image"]))
    for name, g, e in zip(("pad-seq", "pad-image", "slice-newaxis", "integer"), got, expected, strict=True):
        error = float(np.abs(to_tf_layout(g) - e).max())
        print(f"{name}: shape {tuple(e.shape)}, max abs error {error:.2e}")
        assert to_tf_layout(g).shape == e.shape and error <= 1e-6
