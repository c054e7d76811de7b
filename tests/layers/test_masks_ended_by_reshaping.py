"""ZeroPadding1D, Cropping1D, UpSampling1D, Conv1DTranspose, Reshape and Permute on masked steps
(Embedding(mask_zero=True), Masking), against real Keras 3 and Keras 2: in both, these layers neither
support masking nor take a mask (supports_masking False, no `mask` in call), so they compute every step and
their outputs carry no mask. The layer after each (an LSTM, a pooling, a Bidirectional, in Keras 3 an
attention) would read a mask that reached it; the same model built without masks gives Keras's numbers
exactly, which shows none does. A Reshape to the same shape and an identity Permute keep the time axis as it
was, so a mask could have been carried on there and is not."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory

IDS = np.array([[3, 4, 5, 0, 0, 0], [0, 0, 1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]], "int32")
FEATURES = np.zeros((4, 6, 4), "float32")  # Masking's input: zero steps are padding, the last row all padding
FEATURES[0, :4] = np.linspace(-2.0, 1.5, 16, dtype="float32").reshape(4, 4)
FEATURES[1, 2:] = np.linspace(0.5, -1.0, 16, dtype="float32").reshape(4, 4)
FEATURES[2] = np.linspace(1.0, -3.0, 24, dtype="float32").reshape(6, 4)


def _model(keras, masked: bool):
    """A branch per layer; masked=False builds the same layers on the same tensors without masks."""
    L = keras.layers
    ids, feats = keras.Input((6,), dtype="int32", name="ids"), keras.Input((6, 4), name="feats")
    x = L.Embedding(20, 8, mask_zero=masked)(ids)
    m = L.Masking(0.0)(feats) if masked else feats
    outputs = {
        "zero_padding_lstm": L.LSTM(5)(L.ZeroPadding1D((1, 2))(x)),
        "cropping_average": L.GlobalAveragePooling1D()(L.Cropping1D((1, 2))(x)),
        "upsampling_gru": L.GRU(3)(L.UpSampling1D(2)(m)),
        "conv_transpose_average": L.GlobalAveragePooling1D()(L.Conv1DTranspose(4, 3, strides=2)(x)),
        "reshape_lstm": L.LSTM(4)(L.Reshape((3, 16))(x)),
        "same_reshape_bidirectional": L.Bidirectional(L.SimpleRNN(3), merge_mode="sum")(L.Reshape((6, 8))(x)),
        "permute_average": L.GlobalAveragePooling1D()(L.Permute((2, 1))(m)),
        "identity_permute_lstm": L.LSTM(3, return_sequences=True)(L.Permute((1, 2))(m)),
    }
    if keras.__name__ == "keras":  # tf_keras's attention on masked inputs is refused: unmasked here, converted
        for name, layer in (("zero_padding_attention", L.ZeroPadding1D(1)), ("reshape_attention", L.Reshape((6, 8)))):
            y = layer(x)
            outputs[name] = L.GlobalAveragePooling1D()(L.MultiHeadAttention(2, 4)(y, y))
    return keras.Model([ids, feats], list(outputs.values())), list(outputs)


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_reshaping_layers_end_a_mask_as_keras_does(module: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(8)
    (model, names), (unmasked, _) = _model(keras, True), _model(keras, False)
    unmasked.set_weights(model.get_weights())
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model.save(path)
    expected = [np.asarray(o) for o in model([IDS, FEATURES])]
    for name, e, plain in zip(names, expected, unmasked([IDS, FEATURES]), strict=True):
        assert np.array_equal(e, np.asarray(plain)), name  # real Keras: the masks change nothing here
    converted, _ = convert_in_memory(path)
    with torch.no_grad():
        got = [g.numpy() for g in converted(torch.from_numpy(IDS), torch.from_numpy(FEATURES))]
    assert len(got) == len(expected)
    for name, g, e in zip(names, got, expected, strict=True):
        error = float(np.abs(g - e).max())
        print(f"{module} {name} {tuple(e.shape)}: max abs error {error:.2e}")
        assert g.shape == e.shape and error <= 1e-5


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_these_layers_neither_support_nor_take_a_mask(module: str) -> None:
    """What masks.DROP relies on, on instances of both Kerases: supports_masking False, no `mask` in call,
    and the base class's compute_mask."""
    import inspect

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    L = keras.layers
    for layer in (L.ZeroPadding1D(1), L.Cropping1D(1), L.UpSampling1D(2), L.Conv1DTranspose(3, 2),
                  L.Reshape((6, 8)), L.Permute((2, 1))):
        name = type(layer).__name__
        assert layer.supports_masking is False, name
        assert "mask" not in inspect.signature(layer.call).parameters, name
        assert type(layer).compute_mask is L.Layer.compute_mask, name
