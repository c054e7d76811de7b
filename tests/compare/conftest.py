"""Conversions shared by the verify tests (made once per session; tests break copies of them)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_keras
from tf2torch import api

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
KERAS3 = FIXTURES / "keras3" / "cnn.keras"
KERAS2 = FIXTURES / "keras2" / "cnn.h5"
WRN = FIXTURES / "wrn16_2" / "model.ckpt"
WRN_MODEL = f"{FIXTURES / 'wrn.py'}:wrn_16_2"


class Outputs(dict):
    """Convert outputs made on first use, by name: keras3, keras2, wrn, square."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.base = base

    def source_of(self, name: str) -> Path:
        sources = {"keras3": KERAS3, "keras2": KERAS2, "wrn": WRN}
        return sources[name] if name in sources else square_dense_model(self.base / "square.keras")

    def __missing__(self, name: str) -> Path:
        out = self.base / name
        if name == "wrn":
            api.convert(WRN, out, model=WRN_MODEL, input_shape=(1, 3, 32, 32))
        elif name in ("keras3", "keras2", "square"):
            api.convert(self.source_of(name), out)
        else:
            raise KeyError(name)
        self[name] = out
        return out


@pytest.fixture(scope="session")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    return Outputs(tmp_path_factory.mktemp("converted"))


def square_dense_model(path: Path) -> Path:
    """A tiny Keras 3 MLP whose middle Dense is square (8 -> 8): transposing its kernel keeps the shape."""
    if path.exists():
        return path
    keras = require_keras("keras")
    inp = keras.Input(shape=(6,), name="features")
    x = keras.layers.Dense(8, activation="tanh", name="pre")(inp)
    x = keras.layers.Dense(8, name="square")(x)
    out = keras.layers.Dense(3, name="head")(x)
    model = keras.Model(inp, out, name="square_mlp")
    rng = np.random.default_rng(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Keras's own np.array(variable) under NumPy 2
        for layer in model.layers:
            if layer.weights:
                layer.set_weights([rng.normal(0, 0.5, tuple(w.shape)).astype(np.float32) for w in layer.weights])
        model.save(path)
    return path
