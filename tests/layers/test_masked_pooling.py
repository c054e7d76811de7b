"""GlobalAveragePooling1D over masked steps (Embedding(mask_zero=True), and an LSTM's sequences carrying
the mask on), against real Keras 3 and Keras 2: the mean over the unmasked steps; a sequence that is all
padding gives 0 / 0 as in Keras. A pool Keras does not apply masks in pools every step."""

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


def test_a_mask_keras_3_does_not_apply_is_dropped_and_keras_2s_refused(tmp_path) -> None:
    """GlobalMaxPooling1D ignores masks (Keras warns and pools every step): a Keras 3 file converts to the
    plain max, as Keras computes it; Keras 2 computes masks implicitly, so there it stays refused by name."""
    from tf2torch import api
    from tf2torch.errors import UnsupportedError

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    for module, name in (("keras", "m.keras"), ("tf_keras", "m.h5")):
        keras = require_keras(module)
        ids = keras.Input((6,), dtype="int32")
        x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
        model = keras.Model(ids, keras.layers.GlobalMaxPooling1D(name="gmp")(x))
        model.save(tmp_path / name)
        if module == "tf_keras":
            with pytest.raises(UnsupportedError, match="'gmp'") as info:
                api.convert(tmp_path / name, None, dry_run=True)
            print(info.value)
            continue
        converted, _ = convert_in_memory(tmp_path / name)
        with torch.no_grad():
            error = float(np.abs(converted(torch.from_numpy(IDS)).numpy() - np.asarray(model(IDS))).max())
        print(f"keras 3 max pooling past a mask: max abs error {error:.2e}")
        assert error <= 1e-6
