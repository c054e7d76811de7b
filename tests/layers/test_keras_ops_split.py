"""``keras.ops.split`` recorded in a Keras 3 Functional model, against real Keras: equal sections of a conv's
channels (channels-first in the generated model), split indices along a spatial axis, and along a
sequence's features; a split Keras itself could not make (unsorted indices) is refused by name."""

from __future__ import annotations

import os

import pytest

from tests.conftest import require_keras
from tests.layers.harness import check_seq_image, save_seq_image
from tests.util import convert_in_memory, edit_keras_member
from tf2torch.errors import UnsupportedError


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(7)
    seq, image = keras.Input((5, 6), name="seq"), keras.Input((6, 6, 3), name="image")
    conv = keras.layers.Conv2D(6, 1)(image)
    thirds = keras.ops.split(conv, 3, axis=-1)  # the channel axis: dim 1 of the channels-first tensor
    rows = keras.ops.split(conv, [1, 4], axis=1)  # pieces of 1, 3 and 2 rows
    features = keras.ops.split(keras.layers.Dense(6)(seq), [2, 2, 5], axis=2)  # an empty piece, as tf.split gives
    outputs = [thirds[0], keras.layers.Add()([thirds[1], thirds[2]]), *rows, *features]
    return save_seq_image(keras, tmp_path_factory.mktemp("ops_split") / "split.keras", seq, image, outputs)


def test_ops_split_matches_keras(saved) -> None:
    check_seq_image(*saved, [f"output {i}" for i in range(len(saved[2]))])


def test_unsorted_split_indices_are_refused(saved, tmp_path) -> None:
    path, _, _ = saved

    def unsort(config):
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "Split" and layer["config"]["indices_or_sections"] == [1, 4]:
                layer["config"]["indices_or_sections"] = [4, 1]
        return config

    edited = edit_keras_member(path, tmp_path / "unsorted.keras", "config.json", unsort)
    with pytest.raises(UnsupportedError, match=r"numpy>Split\): split indices \[4, 1\] are not sorted"):
        convert_in_memory(edited)
