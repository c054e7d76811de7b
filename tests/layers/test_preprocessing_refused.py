"""What the preprocessing converters do not convert is refused, naming the layer and why: adapt-only
states, sparse outputs, encodings whose shape Keras declares one way and computes another, a vocabulary
outside the archive; string layers stay refused (layers/refused.py). Each is a real Keras model."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_keras
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError
from tf2torch.layers.refused import REFUSED
from tf2torch.readers import keras_assets

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _one(shape: tuple, dtype: str, make: Callable[[Any], Any], head: bool = True) -> Callable[[Any], Any]:
    """Input -> the layer named "pre" -> (a Dense)."""
    def build(keras: Any) -> Any:
        x = keras.Input(shape, dtype=dtype, name="x")
        y = make(keras.layers)(x)
        if head and y.dtype != "string":
            y = keras.layers.Dense(2)(keras.layers.Flatten()(y) if len(y.shape) > 2 else y)
        return keras.Model(x, y)
    return build


def _adapted_lookup(L: Any) -> Any:
    layer = L.IntegerLookup(name="pre")
    layer.adapt(np.array([[3, 4], [4, 9]]))
    return layer


def _count_weights(keras: Any) -> Any:
    x, w = keras.Input((3,), dtype="int64"), keras.Input((3,))
    return keras.Model([x, w], keras.layers.CategoryEncoding(4, "count", name="pre")(x, count_weights=w))


def _count_rank1(keras: Any) -> Any:
    x = keras.Input((3,), name="x")  # (tf2torch takes no rank-1 model inputs: one from keras.ops.sum)
    return keras.Model(x, keras.layers.Discretization([0.0], output_mode="count", name="pre")(keras.ops.sum(x, 1)))


# name -> (builder, format, what the refusal must say)
CASES: dict[str, tuple[Callable[[Any], Any], str, str]] = {
    "unadapted-bins": (_one((3,), "float32", lambda L: L.Discretization(num_bins=4, name="pre")), "keras",
                       "no bin_boundaries in the config"),
    "sparse-bins": (_one((3,), "float32", lambda L: L.Discretization([0.0], output_mode="one_hot", sparse=True,
                                                                    name="pre"), head=False), "keras",
                    "sparse=True"),
    "sparse-lookup": (_one((3,), "int64", lambda L: L.IntegerLookup(vocabulary=[1, 2], output_mode="multi_hot",
                                                                   sparse=True, name="pre"), head=False), "keras",
                      "sparse=True"),
    "adapted-lookup-h5": (_one((2,), "int64", _adapted_lookup, head=False), "h5", "an .h5 file keeps no adapted"),
    "farmhash-oov": (_one((3,), "int64", lambda L: L.IntegerLookup(vocabulary=[1, 2], num_oov_indices=2,
                                                                  oov_method="farmhash", name="pre"), head=False),
                     "keras", "oov_method 'farmhash'"),
    "count-weights": (_count_weights, "keras", "count_weights are not converted"),
    "multi_hot-rank3": (_one((2, 3), "int64", lambda L: L.CategoryEncoding(4, name="pre")), "keras",
                        "(N, 2, 4) but computes (N, 3, 4), reducing axis 1"),
    "count-rank1": (_count_rank1, "keras", "sums over the batch axis"),
    "contrast-rank3": (_one((4, 5), "float32", lambda L: L.AutoContrast(name="pre"), head=False), "keras",
                       "a rank-3 input"),
}
for cls, make in {"StringLookup": lambda L: L.StringLookup(vocabulary=["a", "b"], name="pre"),
                  "TextVectorization": lambda L: L.TextVectorization(vocabulary=["a", "b"], name="pre"),
                  "Hashing": lambda L: L.Hashing(4, name="pre")}.items():
    CASES[cls] = (_one((1,), "string", make, head=False), "keras", "{}: {}; {}".format(cls, *REFUSED[cls]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_preprocessing_refusal_names_the_layer_and_why(tmp_path, name: str) -> None:
    keras = require_keras()
    build, fmt, expected = CASES[name]
    path = tmp_path / f"model.{fmt}"
    build(keras).save(path)
    with pytest.raises(UnsupportedError) as info:
        convert_in_memory(path)
    print(f"{name}: {info.value}")
    assert "layer 'pre'" in str(info.value) and expected in str(info.value)


def _edited(src: Path, dst: Path, vocabulary: Any, assets: bool) -> Path:
    """``src`` with the lookup's config vocabulary replaced, and its assets/ members kept or left out."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.startswith("assets/") and not assets:
                continue
            if info.filename == "config.json":
                config = json.loads(data)
                for layer in config["config"]["layers"]:
                    if layer["class_name"] == "IntegerLookup":
                        layer["config"]["vocabulary"] = vocabulary
                data = json.dumps(config).encode()
            zout.writestr(info, data)
    return dst


@pytest.mark.parametrize("vocabulary", [None, "/etc/hostname"])
def test_lookup_never_reads_a_vocabulary_file_outside_the_archive(tmp_path, vocabulary: Any) -> None:
    keras = require_keras()
    src = tmp_path / "model.keras"
    _one((2,), "int64", _adapted_lookup, head=False)(keras).save(src)
    # with its vocabulary.txt asset: converted from it (Keras's reload replaces a file's vocabulary by it too)
    _, conversion = convert_in_memory(_edited(src, tmp_path / "kept.keras", vocabulary, assets=True))
    print(conversion.report.notes)
    assert any("vocabulary.txt (4 lines)" in n for n in conversion.report.notes)
    with pytest.raises(UnsupportedError) as info:
        convert_in_memory(_edited(src, tmp_path / "bare.keras", vocabulary, assets=False))
    print(info.value)
    assert "no vocabulary.txt is among the .keras file's assets" in str(info.value)
    assert vocabulary is None or "tf2torch never opens" in str(info.value)


def test_an_asset_too_large_for_a_vocabulary_is_left_unread(tmp_path, monkeypatch) -> None:
    keras = require_keras()
    path = tmp_path / "model.keras"
    _one((2,), "int64", _adapted_lookup, head=False)(keras).save(path)
    monkeypatch.setattr(keras_assets, "MAX_ASSET_BYTES", 4)  # its vocabulary.txt has 8 bytes
    with pytest.raises(UnsupportedError) as info:
        convert_in_memory(path)
    assert "no vocabulary.txt is among the .keras file's assets" in str(info.value)
