"""Masked inputs reaching layers called with training= (``LSTM(4)(x, training=False)``). Keras 3 records a
mask as a mask= argument only for a call with no keyword argument (a call with training= copies its kwargs
before filling the mask in), yet fills the mask in from the input when the model runs: every layer whose
Keras 3 call takes a mask must then compute with the tracked mask, or be refused by name.

Converted, against real Keras 3 (and tf_keras where it has the layer and tf2torch converts it masked): the
recurrent layers, RNN over a cell, Bidirectional, GlobalAveragePooling1D, MultiHeadAttention,
BatchNormalization, TimeDistributed over a layer that takes no mask, and a mask ended by a Conv1D before the
LSTM reading it. Refused (each checked to compute other numbers masked than unmasked in Keras 3):
TimeDistributed over an LSTM or a pooling, ConvLSTM1D, Softmax, the attentions tf2torch does not mask, a
layer carrying the mask on (Rescaling) to an LSTM called with training=, and a nested model a mask enters
or leaves (a mask is a local of one generated forward).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError

IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 7, 8, 2, 1], [0, 0, 0, 0, 0, 0]], "int32")
KERAS3_ONLY = ("mha", "time-distributed-dense-average", "rescaling-conv-lstm", "training-true-lstm")
UNMASKED_IN_KERAS = {"rescaling-conv-lstm"}  # Conv1D ends the mask: the LSTM after it computes every step


def _branches(keras, masked: bool) -> tuple[Any, dict[str, Any]]:
    L = keras.layers
    ids = keras.Input((6,), dtype="int32", name="ids")
    x = L.Embedding(20, 8, mask_zero=masked)(ids)
    out = {
        "lstm": L.LSTM(4)(x, training=False),
        "gru-seq-average": L.GlobalAveragePooling1D()(L.GRU(3, return_sequences=True)(x, training=False),
                                                      training=False),
        "rnn-cell": L.RNN(L.SimpleRNNCell(3))(x, training=False),
        "bidirectional": L.Bidirectional(L.LSTM(3, return_sequences=True))(x, training=False),
        "bidirectional-cell": L.Bidirectional(L.RNN(L.GRUCell(2)))(x, training=False),
        "dense-lstm": L.LSTM(3)(L.Dense(4)(x), training=False),
        "batch-norm-lstm": L.LSTM(3)(L.BatchNormalization()(x, training=False), training=False),
    }
    if keras.__name__ == "keras":
        y = L.Embedding(20, 8, mask_zero=masked)(ids)  # an attention reads its own (Keras clears what it reads)
        out |= {
            "mha": L.GlobalAveragePooling1D()(L.MultiHeadAttention(2, 4)(y, y, training=False)),
            "time-distributed-dense-average": L.GlobalAveragePooling1D()(
                L.TimeDistributed(L.Dense(2))(x, training=False)),
            "rescaling-conv-lstm": L.LSTM(3)(L.Conv1D(4, 1)(L.Rescaling(2.0)(x)), training=False),
            "training-true-lstm": L.LSTM(3)(x, training=True),  # Keras 3's call(training=False) overrides it
        }
    return ids, out


@pytest.fixture(scope="module", params=["keras", "tf_keras"])
def converted(request, tmp_path_factory) -> tuple[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Per case: (converted, Keras, Keras on the same model built without masks)."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras(request.param)
    keras.utils.set_random_seed(9)
    ids, branches = _branches(keras, True)
    model = keras.Model(ids, list(branches.values()))
    plain_ids, plain_branches = _branches(keras, False)
    unmasked = keras.Model(plain_ids, list(plain_branches.values()))
    rng = np.random.default_rng(9)
    model.set_weights([rng.normal(0.3, 0.5, w.shape).astype(np.float32) for w in model.get_weights()])
    for layer in model.layers:  # BatchNormalization's moving statistics random too, its variances positive
        if type(layer).__name__ == "BatchNormalization":
            gamma, beta, mean, variance = layer.get_weights()
            layer.set_weights([gamma, beta, mean, rng.uniform(0.5, 2.0, variance.shape).astype(np.float32)])
    path = tmp_path_factory.mktemp(request.param) / ("m.keras" if request.param == "keras" else "m.h5")
    model.save(path)
    unmasked.set_weights(model.get_weights())
    expected = [np.asarray(o) for o in model(IDS, training=False)]
    plain = [np.asarray(o) for o in unmasked(IDS, training=False)]
    result, _ = convert_in_memory(path)
    with torch.no_grad():
        got = [g.numpy() for g in result(torch.from_numpy(IDS))]
    return request.param, dict(zip(branches, zip(got, expected, plain, strict=True), strict=True))


CASES = ("lstm", "gru-seq-average", "rnn-cell", "bidirectional", "bidirectional-cell", "dense-lstm", "batch-norm-lstm")


def test_layers_called_with_training_compute_with_the_mask(converted) -> None:
    """Every branch of the module's model (tf_keras has no KERAS3_ONLY ones), each checked in turn."""
    module, pairs = converted
    assert sorted(pairs) == sorted([*CASES, *(KERAS3_ONLY if module == "keras" else ())])
    for case, (got, expected, plain) in sorted(pairs.items()):
        # real Keras: the mask changes these numbers (it reached the layer although no mask= was recorded)
        assert np.array_equal(expected, plain) == (case in UNMASKED_IN_KERAS), case
        finite = np.isfinite(expected)  # an average over the all-padding row is 0 / 0 in Keras and here
        assert got.shape == expected.shape and (np.isfinite(got) == finite).all(), case
        error = float(np.abs(got[finite] - expected[finite]).max())
        print(f"{module} {case} {expected.shape}: max abs error {error:.2e}, non-finite {int((~finite).sum())}")
        assert error <= 1e-5, case


FEATURES = np.random.default_rng(0).normal(size=(3, 3, 4, 2)).astype("float32")  # (N, T, steps, F)
FEATURES[0, :, 2:] = 0.0  # Masking's padding: inner steps, a whole outer step, a whole sample
FEATURES[1, 1] = 0.0
FEATURES[2] = 0.0
Refused = Callable[[Any, bool], tuple[Any, np.ndarray]]  # (keras, masked) -> (model, its input)


def _sequences(build: Callable[[Any, Any], Any]) -> Refused:
    def model(keras, masked: bool) -> tuple[Any, np.ndarray]:
        inp = keras.Input((3, 4, 2))
        return keras.Model(inp, build(keras.layers, keras.layers.Masking(0.0)(inp) if masked else inp)), FEATURES
    return model


def _ids(build: Callable[[Any, Any], Any], batch: int = len(IDS)) -> Refused:
    def model(keras, masked: bool) -> tuple[Any, np.ndarray]:
        inp = keras.Input((6,), dtype="int32")
        return keras.Model(inp, build(keras.layers, keras.layers.Embedding(20, 6, mask_zero=masked)(inp))), IDS[:batch]
    return model


def _nested(keras, masked: bool, inside: bool) -> tuple[Any, np.ndarray]:
    """An LSTM in a nested model called with training= on masked embeddings, or (inside) the embeddings made
    in the nested model and read by an LSTM after it."""
    L = keras.layers
    inner_x = keras.Input((6,), dtype="int32") if inside else keras.Input((6, 6))
    inner = keras.Model(inner_x, L.Embedding(20, 6, mask_zero=masked)(inner_x) if inside else L.LSTM(3)(inner_x),
                        name="t")
    ids = keras.Input((6,), dtype="int32")
    if inside:
        return keras.Model(ids, L.LSTM(3)(inner(ids, training=False), training=False)), IDS
    return keras.Model(ids, inner(L.Embedding(20, 6, mask_zero=masked)(ids), training=False)), IDS


REFUSED: dict[str, tuple[str, Refused]] = {
    "time-distributed-lstm": ("TimeDistributed", _sequences(lambda L, x: L.TimeDistributed(L.LSTM(3), name="t")(
        x, training=False))),
    "time-distributed-average": ("TimeDistributed", _sequences(lambda L, x: L.TimeDistributed(
        L.GlobalAveragePooling1D(), name="t")(x, training=False))),
    "conv-lstm-1d": ("ConvLSTM1D", _sequences(lambda L, x: L.ConvLSTM1D(2, 3, padding="same", name="t")(
        x, training=False))),
    # Keras broadcasts the (N, T) mask against the (N, T, D) input from the last axis: T == D, one sample
    "softmax": ("Softmax", _ids(lambda L, x: L.Softmax(name="t")(x, training=False), batch=1)),
    "rescaling-lstm": ("Rescaling", _ids(lambda L, x: L.LSTM(3)(L.Rescaling(2.0, name="t")(x), training=False))),
    "attention": ("Attention", _ids(lambda L, x: L.Attention(name="t")([x, x], training=False))),
    "additive-attention": ("AdditiveAttention", _ids(lambda L, x: L.AdditiveAttention(name="t")(
        [x, x], training=False))),
    "group-query-attention": ("GroupQueryAttention", _ids(lambda L, x: L.GroupQueryAttention(4, 2, 1, name="t")(
        x, x, training=False))),
    "nested-model-reads-a-mask": ("nested model 't' receives", lambda keras, masked: _nested(keras, masked, False)),
    "nested-model-makes-a-mask": ("nested model 't' returns", lambda keras, masked: _nested(keras, masked, True)),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_masked_layers_called_with_training_are_refused(case: str, tmp_path) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras("keras")
    message, build = REFUSED[case]
    keras.utils.set_random_seed(4)
    model, data = build(keras, True)
    unmasked, _ = build(keras, False)
    unmasked.set_weights(model.get_weights())
    difference = float(np.nanmax(np.abs(np.asarray(model(data)) - np.asarray(unmasked(data)))))
    print(f"{case}: Keras 3 masked vs unmasked, max abs difference {difference:.2e}")
    assert difference > 1e-4  # the mask changes Keras's numbers: converting it unmasked would be wrong
    path = tmp_path / "m.keras"
    model.save(path)
    if not message.startswith("nested"):
        message = rf"layer 't' \({message}\) receives a Keras mask"
    with pytest.raises(UnsupportedError, match=message) as info:
        convert_in_memory(path)
    print(info.value)
