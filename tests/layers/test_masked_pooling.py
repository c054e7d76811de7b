"""GlobalAveragePooling1D over masked steps (Embedding(mask_zero=True), and an LSTM's sequences carrying
the mask on), against real Keras 3 and Keras 2: the mean over the unmasked steps; a sequence that is all
padding gives 0 / 0 as in Keras. Layers that neither support nor take a mask (GlobalMaxPooling1D, Conv1D,
the 1D pools, Flatten) compute every step in both Keras versions and end the mask: no layer after them,
an LSTM or an attention, sees it."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory

IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0]], "int32")


def _model(keras, path):
    ids = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    pooled = keras.layers.GlobalAveragePooling1D()(x)
    recurrent = keras.layers.GlobalAveragePooling1D()(keras.layers.LSTM(5, return_sequences=True)(x))
    model = keras.Model(ids, [pooled, recurrent])
    model.save(path)
    return model


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_masked_average_pooling_matches_keras(module: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model = _model(keras, path)
    expected = [np.asarray(o) for o in model(IDS)]
    converted, _ = convert_in_memory(path)
    with torch.no_grad():
        got = [g.numpy() for g in converted(torch.from_numpy(IDS))]
    for name, g, e in zip(("embedding", "lstm"), got, expected, strict=True):
        finite = np.isfinite(e)
        assert (np.isfinite(g) == finite).all(), (name, g, e)  # the all-padding row: 0 / 0 in both
        error = float(np.abs(g[finite] - e[finite]).max())
        print(f"{module} {name}: max abs error {error:.2e}, non-finite entries {int((~finite).sum())}")
        assert error <= 1e-6


FEATURES = np.zeros((3, 6, 4), "float32")  # Masking's input: steps of zeros are padding, the last row all padding
FEATURES[0, :4] = np.linspace(-2.0, 1.5, 16, dtype="float32").reshape(4, 4)
FEATURES[1] = np.linspace(1.0, -3.0, 24, dtype="float32").reshape(6, 4)


def _mask_ending_model(keras, masked: bool):
    """Each branch starts at a masked tensor (or, masked=False, the same tensor with no mask) and passes a
    layer that ends the mask; the LSTM and the attention after them would read a mask that reached them."""
    L = keras.layers
    ids, feats = keras.Input((6,), dtype="int32", name="ids"), keras.Input((6, 4), name="feats")
    x = L.Embedding(20, 8, mask_zero=masked)(ids)
    m = L.Masking(0.0)(feats) if masked else feats
    outputs = [
        L.GlobalMaxPooling1D(name="gmp")(x),
        L.GlobalMaxPooling1D(name="gmp_masking")(m),
        L.LSTM(5, name="lstm")(L.MaxPooling1D(2)(L.Conv1D(6, 3, padding="same")(x))),
        L.Dense(3)(L.Flatten()(L.AveragePooling1D(2, padding="same")(L.SeparableConv1D(4, 2)(x)))),
        L.GlobalMaxPool1D()(L.DepthwiseConv1D(3, padding="same")(m)),
    ]
    if keras.__name__ == "keras":  # tf_keras's attention on masked inputs is refused: unmasked here, converted
        y = L.Conv1D(8, 1)(x)
        outputs.append(L.GlobalAveragePooling1D(name="attention")(L.MultiHeadAttention(2, 4)(y, y)))
    return keras.Model([ids, feats], outputs)


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_layers_that_end_a_mask_match_keras(module: str, tmp_path) -> None:
    """Converted as Keras computes them, every step pooled; the same model built without masks (same
    weights) gives Keras's numbers exactly, which shows Keras ignores the mask there."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(5)
    model, unmasked = _mask_ending_model(keras, True), _mask_ending_model(keras, False)
    unmasked.set_weights(model.get_weights())
    path = tmp_path / ("model.keras" if module == "keras" else "model.h5")
    model.save(path)
    expected = [np.asarray(o) for o in model([IDS, FEATURES])]
    for e, plain in zip(expected, unmasked([IDS, FEATURES]), strict=True):
        assert np.array_equal(e, np.asarray(plain))  # real Keras: the masks change nothing here
    converted, _ = convert_in_memory(path)
    with torch.no_grad():
        got = [g.numpy() for g in converted(torch.from_numpy(IDS), torch.from_numpy(FEATURES))]
    for name, g, e in zip(("gmp", "gmp_masking", "conv_pool_lstm", "sepconv_pool_flatten", "depthwise_gmp",
                           "conv_attention"), got, expected):
        error = float(np.abs(g - e).max())
        print(f"{module} {name}: max abs error {error:.2e}")
        assert error <= 1e-5


@pytest.mark.parametrize("module", ["keras", "tf_keras"])
def test_attention_layer_on_masked_inputs_stays_refused(module: str, tmp_path) -> None:
    """keras.layers.Attention applies its inputs' masks (Keras 3 records them as mask=, tf_keras passes them
    implicitly); tf2torch does not convert a masked Attention, so it is refused by name in both."""
    from tf2torch import api
    from tf2torch.errors import UnsupportedError

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    ids = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    model = keras.Model(ids, keras.layers.Attention(name="dot_attention")([x, x]))
    path = tmp_path / ("m.keras" if module == "keras" else "m.h5")
    model.save(path)
    with pytest.raises(UnsupportedError, match="'dot_attention'") as info:
        api.convert(path, None, dry_run=True)
    print(info.value)
