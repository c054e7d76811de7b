"""keras.layers.RNN over LSTMCell / GRUCell / SimpleRNNCell and stacks of them (StackedRNNCells, or a list
of cells), against real Keras 3 (.keras, .h5) and Keras 2 (tf_keras .h5).

One model per Keras version holds every case as a branch: unmasked ones read a float sequence, masked
ones an Embedding(mask_zero=True) of ids padded at the end, at the start, not at all, and entirely (the
last step masked, the first, none, every one). Weights are seeded random.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.layers.recurrent_branches import (
    FEATURES,
    FORMATS,
    STEPS,
    Build,
    Pairs,
    cached,
    check,
    keras_for,
)
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError
from tf2torch.layers import rnn_cell
from tf2torch.layers.base import Ctx, TensorInfo
from tf2torch.spec import LayerCall, LayerSpec, TensorRef

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


UNMASKED: dict[str, Build] = {
    "lstm-seq": lambda L: L.RNN(L.LSTMCell(4), return_sequences=True),
    "lstm-last-state-nobias": lambda L: L.RNN(L.LSTMCell(4, use_bias=False), return_state=True),
    "gru-reset-after-last-state": lambda L: L.RNN(L.GRUCell(4, reset_after=True), return_state=True),
    "gru-seq-backwards-nobias": lambda L: L.RNN(L.GRUCell(3, use_bias=False), go_backwards=True,
                                                return_sequences=True),
    "simple-relu-backwards-state": lambda L: L.RNN(L.SimpleRNNCell(4, activation="relu"), go_backwards=True,
                                                   return_state=True),
    "lstm-unroll-seq": lambda L: L.RNN(L.LSTMCell(3), unroll=True, return_sequences=True),
    "stack-gru-simple-state": lambda L: L.RNN(L.StackedRNNCells([L.GRUCell(4), L.SimpleRNNCell(2)]),
                                              return_state=True),
    "stack-one-lstm-state": lambda L: L.RNN(L.StackedRNNCells([L.LSTMCell(3)]), return_state=True),
    "list-lstm-gru-lstm-seq-backwards-state": lambda L: L.RNN([L.LSTMCell(4), L.GRUCell(3), L.LSTMCell(2)],
                                                              return_sequences=True, go_backwards=True,
                                                              return_state=True),
}
MASKED: dict[str, Build] = {
    "masked-lstm-seq": lambda L: L.RNN(L.LSTMCell(4), return_sequences=True),
    "masked-gru-last-state": lambda L: L.RNN(L.GRUCell(3), return_state=True),
    "masked-simple-backwards-seq": lambda L: L.RNN(L.SimpleRNNCell(3), go_backwards=True, return_sequences=True),
    "masked-stack-lstm-simple-state": lambda L: L.RNN([L.LSTMCell(4), L.SimpleRNNCell(3)], return_state=True),
    "masked-stack-gru-lstm-seq-backwards": lambda L: L.RNN([L.GRUCell(3), L.LSTMCell(2)], go_backwards=True,
                                                           return_sequences=True),
    "masked-zero-output-seq": lambda L: L.RNN(L.LSTMCell(3), return_sequences=True, zero_output_for_mask=True),
    "masked-zero-output-stack-last-backwards": lambda L: L.RNN([L.SimpleRNNCell(3), L.GRUCell(2)],
                                                               go_backwards=True, zero_output_for_mask=True),
    "masked-unroll-stack-seq": lambda L: L.RNN([L.LSTMCell(3), L.LSTMCell(2)], unroll=True, return_sequences=True),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Pairs]:
    return cached(tmp_path_factory, UNMASKED, lambda version: MASKED, seed=3)


@pytest.mark.parametrize("case", [*UNMASKED, *MASKED])
@pytest.mark.parametrize("fmt", FORMATS)
def test_rnn_over_cells_matches_keras(runs, fmt: str, case: str) -> None:
    check(fmt, case, runs(fmt)[case])


@pytest.mark.parametrize("fmt", ["k3.keras", "k2.h5"], ids=["keras3", "keras2"])
def test_gru_cell_reset_before_is_refused(fmt: str, tmp_path: Path) -> None:
    keras = keras_for(fmt)
    x = keras.Input((STEPS, FEATURES))
    cells = [keras.layers.LSTMCell(3), keras.layers.GRUCell(2, reset_after=False, name="old")]
    model = keras.Model(x, keras.layers.RNN(cells, name="stack")(x))
    path = tmp_path / f"model.{fmt.split('.')[-1]}"
    model.save(path)
    with pytest.raises(UnsupportedError, match=r"layer 'stack/old' \(GRU\): reset_after=False"):
        convert_in_memory(path)


# -- refusals, from hand-written configs (no TensorFlow needed) -------------------------------------

def _cell(class_name: str = "LSTMCell", **config: Any) -> dict[str, Any]:
    return {"module": "keras.layers", "class_name": class_name, "registered_name": None,
            "config": {"name": class_name.lower(), "units": 3, **config}}


def _ctx(config: dict[str, Any], mask: str = "") -> Ctx:
    layer = LayerSpec("rec", "RNN", config, (LayerCall((TensorRef("in0"),)),))
    return Ctx(layer, layer.calls[0], (TensorInfo((STEPS, FEATURES), mask=mask),))


@pytest.mark.parametrize(("config", "mask", "message"), [
    ({"cell": {**_cell(), "module": "my_package.cells"}}, "", r"cell class 'my_package.cells>LSTMCell'"),
    ({"cell": {**_cell(), "registered_name": "Custom>LSTMCell"}}, "", r"cell class 'Custom>LSTMCell'"),
    ({"cell": _cell("StackedRNNCells", cells=[_cell("StackedRNNCells", cells=[_cell()])])}, "",
     r"cell class 'StackedRNNCells' is not supported"),
    ({"cell": _cell("StackedRNNCells", cells=[_cell()], reverse_state_order=True)}, "", r"reverse_state_order"),
    ({"cell": _cell(), "stateful": True}, "", r"layer 'rec/lstmcell' \(LSTM\): stateful=True"),
    ({"cell": _cell("GRUCell"), "time_major": True}, "", r"time_major=True"),
    ({"cell": _cell(), "unroll": True, "go_backwards": True, "return_sequences": True,
      "zero_output_for_mask": True}, "mask", r"unroll=True with go_backwards"),
], ids=["module-cell", "registered-cell", "nested-stack", "reverse-state-order", "stateful", "time-major",
        "unrolled-reversed-zero-output"])
def test_refused_configs(config: dict[str, Any], mask: str, message: str) -> None:
    with pytest.raises(UnsupportedError, match=message):
        rnn_cell.rnn_layer(_ctx(config, mask))
