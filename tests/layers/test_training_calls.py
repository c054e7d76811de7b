"""A layer recorded as called with ``training=True`` (``Dropout(0.5)(x, training=True)``, MC dropout; a
BatchNormalization on batch statistics). tf_keras honours it in every run, ``predict`` included: such a
file is refused by name (a nested model's call too). Keras 3's ``predict`` and ``call(training=False)``
override it with the model's training=False: the converted model computes that, checked against
``predict``, and the report notes the call."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError

LAYERS = ("Dropout", "GaussianNoise", "BatchNormalization", "nested")


def _saved(module: str, layer: str, tmp_path):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(module)
    keras.utils.set_random_seed(3)
    x = keras.Input((4,), name="x")
    h = keras.layers.Dense(3, name="fc")(x)
    if layer == "nested":  # every layer inside runs in training mode
        inner_x = keras.Input((3,))
        y = keras.Model(inner_x, keras.layers.Dropout(0.5)(inner_x), name="inner")(h, training=True)
    elif layer == "BatchNormalization":
        bn = keras.layers.BatchNormalization(name="noisy")
        y = bn(h, training=True)
        bn.moving_mean.assign(np.full(3, 2.0, "float32"))  # far from any batch's own mean
    else:
        y = getattr(keras.layers, layer)(0.5, name="noisy")(h, training=True)
    model = keras.Model(x, y)
    path = tmp_path / ("m.keras" if module == "keras" else "m.h5")
    model.save(path)
    return model, path


@pytest.mark.parametrize("layer", LAYERS)
def test_tf_keras_training_true_is_refused(tmp_path, layer: str) -> None:
    model, path = _saved("tf_keras", layer, tmp_path)
    sample = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    if layer != "BatchNormalization":  # really random in predict: two runs differ
        assert not np.allclose(model.predict(sample, verbose=0), model.predict(sample, verbose=0))
    with pytest.raises(UnsupportedError, match=r"training=True") as info:
        convert_in_memory(path)
    print(info.value)
    assert ("'inner'" if layer == "nested" else "'noisy'") in str(info.value)


@pytest.mark.parametrize("layer", LAYERS)
def test_keras3_training_true_converts_as_predict_computes(tmp_path, layer: str) -> None:
    model, path = _saved("keras", layer, tmp_path)
    sample = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    expected = model.predict(sample, verbose=0)
    assert np.allclose(expected, model.predict(sample, verbose=0))  # deterministic: training=False wins
    converted, result = convert_in_memory(path)
    with torch.no_grad():
        got = converted(torch.from_numpy(sample)).numpy()
    error = float(np.abs(got - expected).max())
    print(f"{layer}(training=True) in Keras 3: max abs error vs predict {error:.2e}")
    assert error <= 1e-5
    assert any("training=True" in note for note in result.report.notes)
