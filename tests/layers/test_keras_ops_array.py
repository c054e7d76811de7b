"""keras.ops array calls recorded in a Keras 3 Functional model, against real Keras: ``ops.pad`` on a
sequence (axes as in Keras) and on a conv's output (channels-first in the generated model), and ``x[...]``
with slices (an open one too), an integer and a new axis."""

from __future__ import annotations

import os

import pytest

from tests.conftest import require_keras
from tests.layers.harness import check_seq_image, save_seq_image


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(5)
    seq, image = keras.Input((5, 4), name="seq"), keras.Input((6, 6, 3), name="image")
    outputs = [
        keras.ops.pad(seq, [[0, 0], [1, 2], [0, 0]]),  # the time axis, zeros
        keras.ops.pad(keras.layers.Conv2D(2, 3)(image), [[0, 0], [1, 1], [2, 0], [0, 0]], constant_values=-1.5),
        keras.layers.Dense(3)(seq)[:, 1:4, None, :],  # slices and a new axis
        keras.layers.Dense(3)(seq)[:, -1, :],  # an integer drops the time axis
        keras.layers.Dense(3)(seq)[:, 2:],  # an open slice stays a slice (x[:, 2:], never x[:, 2])
    ]
    return save_seq_image(keras, tmp_path_factory.mktemp("ops_array") / "ops.keras", seq, image, outputs)


def test_ops_array_matches_keras(saved) -> None:
    check_seq_image(*saved, ["pad-seq", "pad-image", "slice-newaxis", "integer", "open-slice"])
