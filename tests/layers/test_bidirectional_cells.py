"""Bidirectional over keras.layers.RNN of one LSTMCell / GRUCell / SimpleRNNCell (or a StackedRNNCells of
one), against real Keras 3 (.keras, .h5) and Keras 2 (tf_keras .h5): converted as the Bidirectional over the
LSTM / GRU / SimpleRNN layer it computes.

One model per Keras version holds every case as a branch: unmasked ones read a float sequence, masked ones
an Embedding(mask_zero=True) of ids padded at the end, at the start, not at all, and entirely. Weights are
seeded random. Keras 3 cannot run a masked RNN over a one-cell StackedRNNCells (a state-structure error in
its loop), so that case is Keras 2's only. A stack of several cells, and a masked unrolled Bidirectional
with return_sequences (Keras zeroes the backward direction at the unreversed mask's steps), are refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.layers.recurrent_branches import (
    FEATURES,
    FORMATS,
    IDS,
    STEPS,
    Build,
    Pairs,
    cached,
    check,
    keras_for,
)
from tests.util import convert_in_memory, max_abs
from tf2torch.errors import UnsupportedError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


UNMASKED: dict[str, Build] = {
    "lstm-seq-concat": lambda L: L.Bidirectional(L.RNN(L.LSTMCell(4), return_sequences=True)),
    "gru-last-sum": lambda L: L.Bidirectional(L.RNN(L.GRUCell(3)), merge_mode="sum"),
    "simple-relu-state-none": lambda L: L.Bidirectional(L.RNN(L.SimpleRNNCell(3, activation="relu"),
                                                              return_state=True), merge_mode=None),
    "lstm-nobias-seq-state-mul": lambda L: L.Bidirectional(L.RNN(L.LSTMCell(3, use_bias=False), return_state=True,
                                                                 return_sequences=True), merge_mode="mul"),
    "stack-one-gru-seq-ave": lambda L: L.Bidirectional(L.RNN(L.StackedRNNCells([L.GRUCell(3)]),
                                                             return_sequences=True), merge_mode="ave"),
    "stack-one-lstm-state": lambda L: L.Bidirectional(L.RNN(L.StackedRNNCells([L.LSTMCell(2)]), return_state=True)),
    "backward-layer-given": lambda L: L.Bidirectional(
        L.RNN(L.LSTMCell(3), return_sequences=True),
        backward_layer=L.RNN(L.LSTMCell(3), return_sequences=True, go_backwards=True)),
    # the LSTM layer, as the same path converts it (tf_keras names a given backward layer backward_<name>)
    "lstm-layer-backward-layer-given": lambda L: L.Bidirectional(
        L.LSTM(3), backward_layer=L.LSTM(3, go_backwards=True), merge_mode="sum"),
}
MASKED: dict[str, Build] = {
    "masked-lstm-seq-concat": lambda L: L.Bidirectional(L.RNN(L.LSTMCell(4), return_sequences=True)),
    "masked-gru-last-sum": lambda L: L.Bidirectional(L.RNN(L.GRUCell(3)), merge_mode="sum"),
    "masked-simple-state-none": lambda L: L.Bidirectional(L.RNN(L.SimpleRNNCell(3), return_state=True),
                                                          merge_mode=None),
    "masked-lstm-seq-state-ave": lambda L: L.Bidirectional(L.RNN(L.LSTMCell(2), return_sequences=True,
                                                                 return_state=True), merge_mode="ave"),
    "masked-lstm-unroll-last": lambda L: L.Bidirectional(L.RNN(L.LSTMCell(3), unroll=True)),
}
MASKED_KERAS2: dict[str, Build] = {
    "masked-stack-one-gru-seq": lambda L: L.Bidirectional(L.RNN(L.StackedRNNCells([L.GRUCell(3)]),
                                                                return_sequences=True)),
}
CASES = [(fmt, case) for fmt in FORMATS for case in (*UNMASKED, *MASKED, *(MASKED_KERAS2 if "k2" in fmt else ()))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Pairs]:
    return cached(tmp_path_factory, UNMASKED, lambda version: {**MASKED, **(MASKED_KERAS2 if version == "k2" else {})}, seed=4)


@pytest.mark.parametrize(("fmt", "case"), CASES, ids=[f"{f}-{c}" for f, c in CASES])
def test_bidirectional_over_a_cell_matches_keras(runs, fmt: str, case: str) -> None:
    check(fmt, case, runs(fmt)[case])


@pytest.mark.parametrize("fmt", ["k3.keras", "k3.h5", "k2.h5"])
def test_bidirectional_over_a_stack_of_cells_is_refused(fmt: str, tmp_path: Path) -> None:
    keras = keras_for(fmt)
    x = keras.Input((STEPS, FEATURES))
    layer = keras.layers.RNN([keras.layers.GRUCell(3), keras.layers.SimpleRNNCell(2)])
    model = keras.Model(x, keras.layers.Bidirectional(layer, name="both")(x))
    path = tmp_path / f"model.{fmt.split('.')[-1]}"
    model.save(path)
    with pytest.raises(UnsupportedError, match=r"'both'.*StackedRNNCells of 2 cells") as info:
        convert_in_memory(path)
    print(info.value)


@pytest.mark.parametrize("inner", ["RNN", "LSTM"])
@pytest.mark.parametrize("fmt", ["k3.keras", "k2.h5"])
def test_masked_unrolled_bidirectional_sequences_are_refused(fmt: str, inner: str, tmp_path: Path) -> None:
    """Keras's unrolled loop zeroes the backward layer's (reversed) outputs at the unreversed mask's steps:
    real Keras computes other numbers unrolled than looped, with the same weights."""
    keras = keras_for(fmt)
    layers = keras.layers
    keras.utils.set_random_seed(2)

    def model(unroll: bool) -> Any:
        ids = keras.Input((IDS.shape[1],), dtype="int32")
        x = layers.Embedding(10, 4, mask_zero=True)(ids)
        rnn = layers.RNN(layers.LSTMCell(3), unroll=unroll, return_sequences=True) if inner == "RNN" else \
            layers.LSTM(3, unroll=unroll, return_sequences=True)
        return keras.Model(ids, layers.Bidirectional(rnn, name="both")(x))

    unrolled, looped = model(True), model(False)
    looped.set_weights(unrolled.get_weights())
    difference = max_abs(np.asarray(unrolled(IDS)), np.asarray(looped(IDS)))
    print(f"{fmt} {inner}: Keras unrolled vs looped, max abs difference {difference:.2e}")
    assert difference > 1e-3
    path = tmp_path / f"model.{fmt.split('.')[-1]}"
    unrolled.save(path)
    with pytest.raises(UnsupportedError, match=r"'both'.*unroll=True with return_sequences under a mask") as info:
        convert_in_memory(path)
    print(info.value)
