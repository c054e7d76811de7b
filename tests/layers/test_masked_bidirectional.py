"""Bidirectional recurrent layers over masked steps (Embedding(mask_zero=True)), against real Keras 3 and
Keras 2: each direction skips the masked steps (the backward one over the reversed sequence), sequences
zero at masked steps as Keras's zero_output_for_mask gives them, one sequence all padding."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory

IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]], "int32")
CASES = ("lstm-sequences-concat", "gru-last-sum", "lstm-last-states-none", "simple-sequences-ave")


def _branches(keras, x):
    layers = keras.layers
    return [
        layers.Bidirectional(layers.LSTM(5, return_sequences=True))(x),
        layers.Bidirectional(layers.GRU(4), merge_mode="sum")(x),
        *layers.Bidirectional(layers.LSTM(3, return_state=True), merge_mode=None)(x),
        layers.Bidirectional(layers.SimpleRNN(4, return_sequences=True), merge_mode="ave")(x),
    ]


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_masked_bidirectional_matches_keras(module: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(6)
    ids = keras.Input((6,), dtype="int32")
    model = keras.Model(ids, _branches(keras, keras.layers.Embedding(20, 8, mask_zero=True)(ids)))
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model.save(path)
    expected = [np.asarray(o) for o in model(IDS)]
    converted, result = convert_in_memory(path)
    assert "KerasMaskedRNN.run" in result.model_source
    with torch.no_grad():
        got = [g.numpy() for g in converted(torch.from_numpy(IDS))]
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        error = float(np.abs(g - e).max())
        print(f"{module} output {i} {tuple(e.shape)}: max abs error {error:.2e}")
        assert g.shape == e.shape and error <= 1e-5
