"""The LeNet-5 of keras-team/keras#13841 (seed 003): five MaxPooling2D configurations whose 'SAME'
padding gave different predictions on different Keras backends. Converted, each must match
TensorFlow's Keras, which is the reference the model was trained with.

The report's input is 28x28x1 (MNIST); there every SAME case happens to pad symmetrically or not at
all (8x8 before the pool), so a 32x32 variant is added where case 2 (pool 2, stride 3, SAME: 10 -> 4,
total padding 1) needs TF's extra pixel at the bottom/right. AveragePooling2D, which the report also
measured, is run in the same five configurations (its SAME divisor counts only real pixels).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_keras
from tests.layers.harness import check_file, randomise

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Case -> (pool_size, strides, padding), as in the report.
CASES = {
    0: ((2, 2), (2, 2), "valid"),
    1: ((2, 2), (2, 2), "same"),
    2: ((2, 2), (3, 3), "same"),
    3: ((2, 2), (4, 4), "same"),
    4: ((2, 2), (3, 3), "valid"),
}


def lenet5(keras: Any, size: int, case: int, pool: str) -> Any:
    """The report's architecture (he_normal / l2 do not matter at inference; weights are randomised)."""
    layers = keras.layers
    pool_size, strides, padding = CASES[case]
    inputs = keras.Input((size, size, 1), name="image")
    x = layers.Conv2D(6, (5, 5), padding="valid", activation="relu", name="conv1")(inputs)
    x = layers.MaxPooling2D(pool_size=(2, 2), name="pool1")(x)
    x = layers.Conv2D(16, (5, 5), padding="valid", activation="relu", name="conv2")(x)
    x = getattr(layers, pool)(pool_size, strides=strides, padding=padding, name=f"case{case}")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(120, activation="relu", name="fc1")(x)
    x = layers.Dense(84, activation="relu", name="fc2")(x)
    logits = layers.Dense(10, name="logits")(x)
    probs = layers.Activation("softmax", name="softmax")(logits)
    # The logits are a second output: near-uniform softmax probabilities of random weights would
    # squash a real difference, the logits do not.
    return keras.Model(inputs, [probs, logits], name="LeNet-5")


def mnist_like(size: int, batch: int = 4, seed: int = 1) -> np.ndarray:
    """[0, 1] images, mostly background with bright strokes, as MNIST digits are."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, (batch, size, size, 1))
    x[x < 0.75] = 0.0
    return x.astype(np.float32)


PARAMS = [pytest.param(size, case, pool, id=f"{pool}-case{case}-{size}px", marks=pytest.mark.tf)
          for pool in ("MaxPooling2D", "AveragePooling2D") for size in (28, 32) for case in CASES]


@pytest.mark.parametrize(("size", "case", "pool"), PARAMS)
def test_lenet_pooling_case_matches_keras(tmp_path, size: int, case: int, pool: str) -> None:
    keras = require_keras("keras")
    model = lenet5(keras, size, case, pool)
    randomise(model, seed=case)
    path = tmp_path / "lenet5.h5"
    model.save(path)
    # Probabilities in [0, 1] and logits of scale ~1: float32 through five small layers agrees to
    # ~1e-7; a SAME pixel on the wrong side changes the logits by > 1e-2.
    diffs, conversion = check_file(path, model, [mnist_like(size)], rtol=1e-5, atol=1e-6,
                                   label=f"LeNet-5 {pool} case {case} {size}x{size}")
    assert max(d.max_abs for d in diffs) <= 1e-6
    pad_note = [n for n in conversion.report.notes if n.startswith(f"case{case}:")]
    if (size, case) == (32, 2):  # the asymmetric one: the generated model must say so
        assert pad_note and "asymmetric" in pad_note[0], conversion.report.notes
