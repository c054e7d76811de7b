"""ConvLSTM1D / 2D / 3D against real Keras 3 (.keras) and Keras 2 (tf_keras .h5): sequences and last
states, 'same' and 'valid' padding, strides, dilation, go_backwards, another activation."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory


def _model(keras):
    layers = keras.layers
    seq2d, seq1d, seq3d = keras.Input((4, 7, 6, 3)), keras.Input((5, 9, 2)), keras.Input((3, 4, 5, 4, 2))
    outputs = [
        layers.ConvLSTM2D(4, 3, padding="same", return_sequences=True)(seq2d),
        *layers.ConvLSTM2D(3, 3, strides=2, return_state=True)(seq2d),
        layers.ConvLSTM2D(2, 3, padding="same", dilation_rate=2, activation="relu")(seq2d),
        layers.ConvLSTM1D(3, 5, padding="same", go_backwards=True, return_sequences=True)(seq1d),
        layers.ConvLSTM3D(2, 3, padding="same")(seq3d),
    ]
    return keras.Model([seq2d, seq1d, seq3d], outputs)


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_conv_lstm_matches_keras(module: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(7)
    model = _model(keras)
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model.save(path)
    rng = np.random.default_rng(8)
    x = [rng.normal(size=(2, *i.shape[1:])).astype("float32") for i in model.inputs]
    expected = [np.asarray(o) for o in model(x)]
    converted, _ = convert_in_memory(path, channels_last=True)  # the sequences in Keras's layout
    with torch.no_grad():
        got = [g.numpy() for g in converted(*(torch.from_numpy(v) for v in x))]
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        error = float(np.abs(g - e).max() / np.abs(e).max())
        print(f"{module} output {i} {tuple(e.shape)}: max relative error {error:.2e}")
        assert g.shape == e.shape and error <= 1e-5
