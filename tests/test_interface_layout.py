"""The interface-layout rule end to end: ``tf2torch convert --input-shape`` takes the shape in the generated
model's layout, which tf2torch.interface decides per input from its rank and its first consumer.

Three decisions, each through the CLI on a seeded Keras 3 model and compared with Keras's ``model(x)``:
a rank-3 input read by an LSTM stays in Keras layout (it used to be transposed: the LSTM's kernel then
"did not match the config"), a rank-3 input read by a Conv1D is channels-first, an image is channels-first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tests.conftest import require_keras, require_tf
from tests.layers.harness import randomise
from tests.tfgraph.graphs import save_graph
from tests.util import load_source
from tf2torch import interface
from tf2torch.cli import EXIT_USAGE, main

MAX_REL = 1e-6  # max |torch - keras| / max |keras|: float32 rounding only (a wrong layout is O(1))


def _lstm(keras: Any) -> Any:
    x = keras.Input((None, 8), name="seq")  # open length: --input-shape fixes it
    return keras.Model(x, keras.layers.Dense(3, name="fc")(keras.layers.LSTM(16, name="lstm")(x)))


def _conv1d(keras: Any) -> Any:
    x = keras.Input((10, 8), name="seq")
    return keras.Model(x, keras.layers.Conv1D(6, 3, padding="same", name="conv")(x))


def _image(keras: Any) -> Any:
    x = keras.Input((12, 10, 3), name="image")  # H != W != C: a swapped axis cannot go unnoticed
    return keras.Model(x, keras.layers.Conv2D(4, 3, padding="same", name="conv")(x))


# builder, --input-shape (the generated model's layout), the input's layout, the output's layout
CASES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], str, str]] = {
    "rank3-lstm-keras-layout": (_lstm, (1, 10, 8), interface.KERAS, interface.KERAS),
    "rank3-conv1d-channels-first": (_conv1d, (1, 8, 10), interface.CHANNELS_FIRST, interface.CHANNELS_FIRST),
    "rank4-image-channels-first": (_image, (1, 3, 12, 10), interface.CHANNELS_FIRST, interface.CHANNELS_FIRST),
}


def _save(tmp_path: Path, build: Callable[[Any], Any]) -> tuple[Any, Path]:
    keras = require_keras()
    model = build(keras)
    randomise(model, seed=0)
    path = tmp_path / "model.keras"
    model.save(path)
    return model, path


def _convert(path: Path, out: Path, shape: tuple[int, ...]):
    return CliRunner().invoke(main, ["convert", str(path), "-o", str(out), "--input-shape",
                                     ",".join(map(str, shape))])


@pytest.mark.parametrize("name", list(CASES))
def test_input_shape_is_read_in_the_generated_models_layout(tmp_path: Path, name: str) -> None:
    build, shape, in_layout, out_layout = CASES[name]
    keras_model, path = _save(tmp_path, build)
    out = tmp_path / "out"
    result = _convert(path, out, shape)
    assert result.exit_code == 0, result.output + result.stderr
    iface = json.loads((out / "report.json").read_text())["interface"]
    assert [i["layout"] for i in iface["inputs"]] == [in_layout]
    assert [o["layout"] for o in iface["outputs"]] == [out_layout]
    assert f"(N, {', '.join(map(str, shape[1:]))})" in (out / "model.py").read_text()  # the docstring's shape

    x_torch = np.random.default_rng(1).normal(size=shape).astype(np.float32)  # as the user feeds it
    x_tf = x_torch.transpose(interface.to_tf_axes(len(shape), in_layout))
    expected = np.asarray(keras_model(x_tf))
    model = load_source((out / "model.py").read_text(), out / "model.py")["load_model"]()
    with torch.no_grad():
        actual = model(torch.from_numpy(x_torch)).numpy()
    assert actual.shape == interface.to_torch_shape(expected.shape, out_layout)
    actual = actual.transpose(interface.to_tf_axes(actual.ndim, out_layout))
    err = np.abs(actual.astype(np.float64) - expected)
    rel = float(err.max() / np.abs(expected).max())
    # per element (informative only: an output near 0 after a float32 sum of 27 terms has no 1e-6 digits)
    per_element = float(np.max(err[expected != 0] / np.abs(expected[expected != 0])))
    print(f"{name}: --input-shape {shape}, max relative error {rel:.3g} (per element {per_element:.3g})")
    assert rel <= MAX_REL


def test_tf_graph_rank3_input_takes_input_shape_in_its_layout(tmp_path: Path) -> None:
    """A TF1 graph's open-length sequence [None, None, 8] read by tf.nn.conv1d (lowered: ExpandDims, then a
    2-D conv): its input stays in TF's layout, so --input-shape 1,10,8 is (10, 8); read channels-first it
    contradicts the placeholder and is refused."""
    tf = require_tf()

    def build(tf1: Any, x: Any, var: Any) -> Any:
        y = tf1.nn.conv1d(x, var("c/weights", (3, 8, 4)), 1, "SAME")
        return tf1.identity(y + var("c/bias", (4,)), name="out")

    saved = save_graph(tmp_path, build, (10, 8))
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(saved.frozen.read_bytes())
    next(n for n in graph_def.node if n.op == "Placeholder").attr["shape"].shape.dim[1].size = -1
    saved.frozen.write_bytes(graph_def.SerializeToString())
    out = tmp_path / "out"
    assert _convert(saved.frozen, out, (1, 10, 8)).exit_code == 0
    entry = json.loads((out / "report.json").read_text())["interface"]["inputs"][0]
    assert (entry["keras_shape"], entry["layout"]) == ([10, 8], interface.KERAS)  # was [8, 10]: translated twice
    model = load_source((out / "model.py").read_text(), out / "model.py")["load_model"]()
    with torch.no_grad():
        actual = model(torch.from_numpy(saved.x)).numpy()
    rel = float(np.abs(actual.astype(np.float64) - saved.expected).max() / np.abs(saved.expected).max())
    print(f"TF graph rank 3: max relative error {rel:.3g}")
    assert rel <= MAX_REL
    refused = _convert(saved.frozen, tmp_path / "out2", (1, 8, 10))
    assert refused.exit_code != 0 and "contradicts the graph's [None, None, 8]" in refused.stderr, refused.stderr


def test_input_shape_in_the_other_layout_is_refused_with_both(tmp_path: Path) -> None:
    """An LSTM's input given channels-first: a usage error that says which layout the model takes."""
    _, path = _save(tmp_path, _lstm)
    result = _convert(path, tmp_path / "out", (1, 8, 10))
    assert result.exit_code == EXIT_USAGE, result.output + result.stderr
    assert "Keras layout" in result.stderr and "(None, None, 8)" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("rank", "wants", "channels_last", "cf"), [
    (4, None, False, True), (5, "keras", False, True), (3, "cf", False, True), (3, "keras", False, False),
    (3, "any", False, False), (3, None, False, False), (2, "cf", False, False), (4, "cf", True, False),
])
def test_input_rule(rank: int, wants: str | None, channels_last: bool, cf: bool) -> None:
    assert interface.input_channels_first(rank, wants, channels_last) is cf


def test_output_rule_and_axes() -> None:
    assert interface.output_channels_first(4, "keras", False) and interface.output_channels_first(3, "cf", False)
    assert not interface.output_channels_first(3, "keras", False)
    assert not interface.output_channels_first(2, "cf_flat", False)
    assert not interface.output_channels_first(4, "cf", True)
    assert interface.to_tf_shape((1, 3, 12, 10), interface.CHANNELS_FIRST) == (1, 12, 10, 3)
    assert interface.to_torch_shape((1, 12, 10, 3), interface.CHANNELS_FIRST) == (1, 3, 12, 10)
    assert interface.to_tf_shape((1, 10, 8), interface.KERAS) == (1, 10, 8)
    assert interface.keras_shape((1, 8, 10), True) == (10, 8)
    assert interface.torch_shape((10, 8), interface.CHANNELS_FIRST) == (8, 10)
