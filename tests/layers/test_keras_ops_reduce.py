"""keras.ops reductions recorded in a Keras 3 Functional model, against real Keras: mean, sum, max and
min over one axis, several axes, negative axes and with keepdims, on sequences and on a conv's output
(channels-first in the generated model, so the axes must follow Keras's numbering); the batch axis and
max's ``initial`` are refused."""

from __future__ import annotations

import os

import pytest

from tests.conftest import require_keras
from tests.layers.harness import check_seq_image, save_seq_image
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError

CASES = ("mean-time", "sum-last-keepdims", "max-spatial", "min-negative-axes", "mean-image-keepdims")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(6)
    seq, image = keras.Input((5, 4), name="seq"), keras.Input((6, 6, 3), name="image")
    conv = keras.layers.Conv2D(2, 3)(image)
    outputs = [
        keras.ops.mean(seq, axis=[1]),
        keras.ops.sum(keras.layers.Dense(3)(seq), axis=-1, keepdims=True),
        keras.ops.max(conv, axis=[1, 2]),
        keras.ops.min(conv, axis=[-3, -1]),
        keras.ops.mean(conv, axis=3, keepdims=True),
    ]
    return save_seq_image(keras, tmp_path_factory.mktemp("ops_reduce") / "ops.keras", seq, image, outputs)


def test_reductions_match_keras(saved) -> None:
    check_seq_image(*saved, CASES)


@pytest.mark.parametrize("call, message", [(lambda k, x: k.ops.mean(x, axis=[0, 1]), "the batch axis"),
                                           (lambda k, x: k.ops.sum(x), "axis"),
                                           (lambda k, x: k.ops.max(x, axis=1, initial=0.0), "initial")])
def test_a_reduction_tf2torch_cannot_express_is_refused(tmp_path, call, message) -> None:
    keras = require_keras()
    seq = keras.Input((5, 4))
    path = tmp_path / "reduce.keras"
    keras.Model(seq, call(keras, keras.layers.Dense(3)(seq))).save(path)
    with pytest.raises(UnsupportedError, match=message) as info:
        convert_in_memory(path)
    print(info.value)
