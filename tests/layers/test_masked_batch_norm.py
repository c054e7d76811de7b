"""BatchNormalization on masked steps (Embedding(mask_zero=True)), against real Keras 3 and Keras 2. Keras 3
records the mask as BatchNormalization's mask= argument, which it uses only for the batch moments in
training: inference normalises every step by the moving statistics, and the mask goes on to the layers
after it (GlobalAveragePooling1D and the LSTM get it as mask=, MultiHeadAttention reads it itself). A
sequence that is all padding gives 0 / 0 in the pooling, as in Keras. (Called with training=True:
test_training_calls.py.)"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory

IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]], "int32")
NAMES = ("batch_norm", "average_pooling", "lstm", "attention")


def _model(keras, masked: bool):
    ids = keras.Input((6,), dtype="int32")
    embedded = keras.layers.Embedding(20, 8, mask_zero=masked)(ids)
    x = keras.layers.BatchNormalization(name="bn")(embedded)
    outputs = [x, keras.layers.GlobalAveragePooling1D()(x), keras.layers.LSTM(5)(x)]
    if keras.__name__ == "keras":  # tf_keras's attention on masked inputs is refused (test_attention_masks)
        y = keras.layers.BatchNormalization(name="bn_attention")(embedded)  # an attention's input read by it only
        outputs.append(keras.layers.MultiHeadAttention(2, 4)(y, y))
    return keras.Model(ids, outputs)


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_masked_batch_norm_matches_keras(module: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(7)
    model, unmasked = _model(keras, True), _model(keras, False)
    for bn in (layer for layer in model.layers if layer.name.startswith("bn")):  # statistics away from (0, 1)
        for weight, value in zip(bn.weights, (np.linspace(0.5, 2.0, 8), np.linspace(-1.0, 1.0, 8),
                                              np.linspace(-0.7, 0.9, 8), np.linspace(0.3, 2.5, 8)), strict=True):
            weight.assign(value.astype("float32"))  # gamma, beta, moving_mean, moving_variance
    unmasked.set_weights(model.get_weights())
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model.save(path)
    expected = [np.asarray(o) for o in model(IDS)]
    # real Keras: at inference the mask does not change BatchNormalization's own output, and it goes on past
    # it: each layer after it computes masked (the attention reads it from BatchNormalization's output)
    plain = [np.asarray(o) for o in unmasked(IDS)]
    assert np.array_equal(expected[0], plain[0])
    assert not any(np.allclose(e, p, equal_nan=True) for e, p in zip(expected[1:], plain[1:], strict=True))
    converted, _ = convert_in_memory(path)
    with torch.no_grad():
        got = [g.numpy() for g in converted(torch.from_numpy(IDS))]
    got[0] = got[0].transpose(0, 2, 1)  # tf2torch's outputs are channels-first: (N, C, T)
    for name, g, e in zip(NAMES[:len(expected)], got, expected, strict=True):
        finite = np.isfinite(e)
        assert (np.isfinite(g) == finite).all(), (name, g, e)  # the all-padding row's mean: 0 / 0 in both
        error = float(np.abs(g[finite] - e[finite]).max())
        print(f"{module} {name}: max abs error {error:.2e}, non-finite entries {int((~finite).sum())}")
        assert error <= 1e-5
