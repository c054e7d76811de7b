"""LSTM / GRU / SimpleRNN / Bidirectional against real Keras 3 (.keras, .h5) and Keras 2 (tf_keras .h5).

Each file format gets one model holding every case as a parallel branch of one input (building and
saving one model per case would take minutes); each case is still its own test id, comparing only
its branch's outputs. Weights are seeded random, so a swapped gate block or bias row shows up.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory, max_abs, to_tf_layout
from tf2torch.errors import UnsupportedError
from tf2torch.layers import bidirectional, rnn
from tf2torch.layers.base import Ctx, TensorInfo
from tf2torch.spec import LayerCall, LayerSpec, TensorRef

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FORMATS = ("k3.keras", "k3.h5", "k2.h5")  # Keras 3 native and legacy h5; Keras 2 (tf_keras) h5
ATOL = RTOL = 1e-5
STEPS, FEATURES, UNITS = 5, 3, 4


def _rnn_cases() -> dict[str, dict[str, Any]]:
    cases = {}
    for kind in ("LSTM", "GRU"):
        for seq in (False, True):
            for state in (False, True):
                for back in (False, True):
                    for bias in (True, False):
                        name = "-".join([kind.lower(), "seq" if seq else "last"] + ["state"] * state
                                        + ["backwards"] * back + ["nobias"] * (not bias))
                        cases[name] = dict(kind=kind, return_sequences=seq, return_state=state, go_backwards=back,
                                           use_bias=bias)
    cases["simplernn-seq"] = dict(kind="SimpleRNN", return_sequences=True)
    cases["simplernn-relu-last-state"] = dict(kind="SimpleRNN", activation="relu", return_state=True)
    cases["simplernn-backwards-nobias"] = dict(kind="SimpleRNN", go_backwards=True, use_bias=False,
                                               return_sequences=True)
    return cases


def _bidirectional_cases() -> dict[str, dict[str, Any]]:
    cases = {}
    for merge in ("concat", "sum", "mul", "ave", None):
        for seq in (False, True):
            cases[f"lstm-{str(merge).lower()}-{'seq' if seq else 'last'}"] = dict(kind="LSTM", merge_mode=merge,
                                                                     return_sequences=seq)
    cases["gru-concat-last"] = dict(kind="GRU", merge_mode="concat")
    cases["gru-ave-seq-nobias"] = dict(kind="GRU", merge_mode="ave", return_sequences=True, use_bias=False)
    cases["lstm-concat-last-state"] = dict(kind="LSTM", merge_mode="concat", return_state=True)
    cases["gru-none-seq-state"] = dict(kind="GRU", merge_mode=None, return_sequences=True, return_state=True)
    cases["simplernn-sum-seq"] = dict(kind="SimpleRNN", merge_mode="sum", return_sequences=True)
    return cases


RNN_CASES = _rnn_cases()
BIDIRECTIONAL_CASES = _bidirectional_cases()
# tf_keras builds RNN graphs slowly (~0.25 s a layer): Keras 2 runs a subset covering every option.
RNN_KERAS2 = ("lstm-last", "lstm-seq-state", "lstm-last-state-backwards-nobias", "lstm-seq-backwards", "gru-last",
              "gru-seq-state-nobias", "gru-last-state-backwards", "gru-seq-backwards-nobias", "simplernn-seq",
              "simplernn-relu-last-state", "simplernn-backwards-nobias")
BIDIRECTIONAL_KERAS2 = ("lstm-concat-last", "lstm-none-seq", "lstm-sum-seq", "lstm-mul-last", "lstm-ave-last",
                        "gru-concat-last", "lstm-concat-last-state", "gru-none-seq-state")


@dataclass
class Run:
    """One saved model with every case as a branch: Keras's outputs and the converted model's."""

    branches: dict[str, slice]  # case id -> its outputs among the model's outputs
    expected: list[np.ndarray]
    actual: list[np.ndarray]
    source: str
    fmt: str

    def check(self, case: str) -> None:
        for i in range(self.branches[case].start, self.branches[case].stop):
            expected, actual = self.expected[i], self.actual[i]
            diff = max_abs(actual, expected)
            print(f"{self.fmt} {case} output {i - self.branches[case].start}: max abs diff {diff:.3g}")
            torch.testing.assert_close(torch.from_numpy(actual), torch.from_numpy(expected), atol=ATOL, rtol=RTOL)


def keras_module(fmt: str) -> Any:
    return require_keras("tf_keras" if fmt.startswith("k2") else "keras")


def run_model(tmp: Path, formats: list[str], inputs: list[Any], branches: dict[str, Any],
              seed: int = 0) -> dict[str, Run]:
    """Save ``Model(inputs, every branch's outputs)`` in each of ``formats`` (all of one Keras), convert
    each file, and run Keras and every converted model on the same seeded inputs."""
    keras = keras_module(formats[0])
    outputs, where = [], {}
    for case, ys in branches.items():
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        where[case] = slice(len(outputs), len(outputs) + len(ys))
        outputs += ys
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(0.0, 0.5, w.shape).astype(np.float32) for w in model.get_weights()])
    xs = [rng.normal(size=(2, *tuple(i.shape)[1:])).astype(np.float32) for i in inputs]
    expected = [np.asarray(y) for y in model(xs, training=False)]
    runs = {}
    for fmt in formats:
        path = tmp / f"model.{fmt.split('.')[-1]}"
        model.save(path)
        torch_model, conversion = convert_in_memory(path)
        with torch.no_grad():
            actual = torch_model(*(torch.from_numpy(x) for x in xs))
        actual = [to_tf_layout(t) for t in (actual if isinstance(actual, tuple) else (actual,))]
        assert [a.shape for a in actual] == [e.shape for e in expected]
        runs[fmt] = Run(where, expected, actual, conversion.model_source, fmt)
    return runs


def _layer(keras: Any, name: str, case: dict[str, Any]) -> Any:
    options = {k: v for k, v in case.items() if k != "kind"}
    return getattr(keras.layers, case["kind"])(UNITS, name=name.replace("-", "_"), **options)


class Runs:
    """Session cache: the runs of one model per Keras version, built on first use."""

    def __init__(self, tmp: Path, build: Callable[[Any, list[str]], tuple[list[Any], dict[str, Any]]],
                 cases: dict[str, dict[str, Any]], keras2: tuple[str, ...], seed: int) -> None:
        self.tmp, self.build, self.cases, self.keras2, self.seed = tmp, build, cases, keras2, seed
        self.runs: dict[str, Run] = {}

    def __call__(self, fmt: str) -> Run:
        if fmt not in self.runs:  # one model per Keras version, saved in each of its formats
            version = fmt.split(".")[0]
            keras = keras_module(fmt)
            inputs, branches = self.build(keras, list(self.cases) if version == "k3" else list(self.keras2))
            formats = [f for f in FORMATS if f.startswith(version)]
            self.runs.update(run_model(self.tmp, formats, inputs, branches, self.seed))
        return self.runs[fmt]


def params(cases: dict[str, Any], keras2: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[str]]:
    """(format, case) pairs and their ids: every case in Keras 3's two formats, a subset in Keras 2's."""
    pairs = [(fmt, case) for fmt in FORMATS for case in cases if fmt.startswith("k3") or case in keras2]
    return pairs, [f"{fmt}-{case}" for fmt, case in pairs]


def _rnn_branches(keras: Any, cases: list[str]) -> tuple[list[Any], dict[str, Any]]:
    x = keras.Input((STEPS, FEATURES), name="sequence")
    return [x], {case: _layer(keras, case, RNN_CASES[case])(x) for case in cases}


def _bidirectional_branches(keras: Any, cases: list[str]) -> tuple[list[Any], dict[str, Any]]:
    x = keras.Input((STEPS, FEATURES), name="sequence")
    branches = {}
    for case in cases:
        options = BIDIRECTIONAL_CASES[case]
        inner = _layer(keras, f"inner-{case}", {k: v for k, v in options.items() if k != "merge_mode"})
        layer = keras.layers.Bidirectional(inner, merge_mode=options["merge_mode"], name=case.replace("-", "_"))
        branches[case] = layer(x)
    return [x], branches


@pytest.fixture(scope="session")
def rnn_runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("rnn"), _rnn_branches, RNN_CASES, RNN_KERAS2, seed=0)


@pytest.fixture(scope="session")
def bidirectional_runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("bidirectional"), _bidirectional_branches, BIDIRECTIONAL_CASES,
                BIDIRECTIONAL_KERAS2, seed=1)


RNN_PARAMS, RNN_IDS = params(RNN_CASES, RNN_KERAS2)
BIDIRECTIONAL_PARAMS, BIDIRECTIONAL_IDS = params(BIDIRECTIONAL_CASES, BIDIRECTIONAL_KERAS2)


@pytest.mark.parametrize(("fmt", "case"), RNN_PARAMS, ids=RNN_IDS)
def test_recurrent(rnn_runs: Runs, fmt: str, case: str) -> None:
    rnn_runs(fmt).check(case)


@pytest.mark.parametrize(("fmt", "case"), BIDIRECTIONAL_PARAMS, ids=BIDIRECTIONAL_IDS)
def test_bidirectional(bidirectional_runs: Runs, fmt: str, case: str) -> None:
    bidirectional_runs(fmt).check(case)


def test_generated_code_uses_torch_modules(rnn_runs: Runs, bidirectional_runs: Runs) -> None:
    source = rnn_runs("k3.keras").source
    assert "self.lstm_seq_state = nn.LSTM(3, 4, batch_first=True)" in source
    assert "nn.GRU(3, 4, batch_first=True, bias=False)" in source
    assert "nn.RNN(3, 4, batch_first=True, nonlinearity='relu')" in source
    assert "nn.LSTM(3, 4, batch_first=True, bidirectional=True)" in bidirectional_runs("k3.keras").source


@pytest.mark.parametrize("fmt", ["k3.keras", "k2.h5"], ids=["keras3", "keras2"])
def test_gru_reset_before_is_refused(fmt: str, tmp_path: Path) -> None:
    keras = keras_module(fmt)
    x = keras.Input((STEPS, FEATURES), name="sequence")
    model = keras.Model(x, keras.layers.GRU(UNITS, reset_after=False, name="old_gru")(x))
    path = tmp_path / f"model.{fmt.split('.')[-1]}"
    model.save(path)
    with pytest.raises(UnsupportedError, match=r"layer 'old_gru' \(GRU\): reset_after=False"):
        convert_in_memory(path)


# -- refusals, from hand-written configs (no TensorFlow needed) -------------------------------------

def _ctx(class_name: str, config: dict[str, Any], inputs: int = 1) -> Ctx:
    refs = tuple(TensorRef(f"in{i}") for i in range(inputs))
    layer = LayerSpec("rec", class_name, {"units": UNITS, **config}, (LayerCall(refs),))
    return Ctx(layer, layer.calls[0], (TensorInfo((STEPS, FEATURES)),) * inputs)


@pytest.mark.parametrize(("class_name", "config", "message"), [
    ("LSTM", {"activation": "relu"}, r"activation='relu'"),
    ("GRU", {"recurrent_activation": "hard_sigmoid"}, r"recurrent_activation='hard_sigmoid'"),
    ("LSTM", {"stateful": True}, r"stateful=True"),
    ("GRU", {"time_major": True}, r"time_major=True"),
    ("GRU", {"reset_after": False}, r"reset_after=False"),
], ids=["lstm-relu", "gru-hard-sigmoid", "lstm-stateful", "gru-time-major", "gru-reset-before"])
def test_refused_configs(class_name: str, config: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"layer 'rec' \({class_name}\): {message}"):
        rnn.recurrent(_ctx(class_name, config))


def test_initial_state_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="initial_state"):
        rnn.recurrent(_ctx("LSTM", {}, inputs=3))


@pytest.mark.parametrize(("backward", "message"), [
    ({"class_name": "GRU", "config": {"name": "backward_gru", "units": UNITS, "go_backwards": True}},
     r"GRU vs LSTM"),
    ({"class_name": "LSTM", "config": {"name": "backward_lstm", "units": 8, "go_backwards": True}}, r"; units"),
], ids=["other-class", "other-units"])
def test_bidirectional_with_a_different_backward_layer_is_refused(backward: dict[str, Any], message: str) -> None:
    forward = {"class_name": "LSTM", "config": {"name": "forward_lstm", "units": UNITS}}
    ctx = _ctx("Bidirectional", {"layer": forward, "backward_layer": backward})
    pattern = rf"layer 'rec' \(Bidirectional\): the backward layer differs.*{message}"
    with pytest.raises(UnsupportedError, match=pattern):
        bidirectional.bidirectional(ctx)
