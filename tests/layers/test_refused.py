"""`tf2torch layers` accounts for every ``keras.layers`` class: converted, or refused with a reason that
the refusal itself carries."""

from __future__ import annotations

import inspect
import os

import pytest
from click.testing import CliRunner

from tests.conftest import require_keras
from tf2torch.cli import EXIT_ERROR, main
from tf2torch.layers import registry
from tf2torch.layers.refused import REFUSED


def test_every_keras_layer_class_is_converted_or_refused_with_a_reason() -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    # by the class's own name: aliases (Convolution2D is Conv2D) are saved under it
    classes = {cls.__name__ for cls in vars(keras.layers).values()
               if inspect.isclass(cls) and issubclass(cls, keras.layers.Layer)}
    converted = set(registry.supported())
    unaccounted = sorted(classes - converted - set(REFUSED) - {"InputLayer"})  # (the graph's inputs)
    print(f"{len(classes)} keras.layers classes: {len(classes & converted)} converted, "
          f"{len(classes & set(REFUSED))} refused with a reason")
    assert not unaccounted
    assert not converted & set(REFUSED)


def test_layers_refused_prints_each_class_with_its_reason() -> None:
    result = CliRunner().invoke(main, ["layers", "--refused"])
    assert result.exit_code == 0
    lines = dict(line.split(": ", 1) for line in result.output.splitlines())
    assert sorted(lines) == sorted(REFUSED)
    assert "never runs" in lines["Lambda"] and "TFSMLayer" in lines


@pytest.mark.parametrize("class_name", ["Lambda", "RandomCrop", "Hashing"])
def test_a_refused_class_is_refused_with_its_reason(tmp_path, class_name: str) -> None:
    """The refusal names the layer, the class, why, and what to do; nothing is written."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    layer = {"Lambda": lambda: keras.layers.Lambda(lambda x: x * 2.0, name="the_layer"),
             "RandomCrop": lambda: keras.layers.RandomCrop(2, 2, name="the_layer"),
             "Hashing": lambda: keras.layers.Hashing(3, name="the_layer")}[class_name]()
    x = keras.Input((4, 4, 3))
    path = tmp_path / "model.keras"
    keras.Model(x, layer(keras.layers.Dense(3)(x))).save(path)
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")])
    print(result.stderr)
    why, fix = REFUSED[class_name]
    assert result.exit_code == EXIT_ERROR and not (tmp_path / "out").exists()
    assert f"layer 'the_layer' is a {class_name}: {why}; {fix}" in result.stderr
