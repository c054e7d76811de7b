"""Model configs of both Keras dialects as GraphSpecs, checked against Keras's own graph."""

from __future__ import annotations

import json
import zipfile
from typing import Any

import h5py
import pytest

from tests.readers.conftest_keras import live_graph, spec_graph
from tf2torch.errors import FormatError, UnsupportedError
from tf2torch.readers.keras_calls import ARGS_KWARG
from tf2torch.readers.keras_config import parse_model_config, parse_model_json
from tf2torch.spec import TensorRef

SOURCES = ["h5", "keras", "json"]


def config_of(saved: Any, source: str) -> tuple[Any, int | None]:
    """The model config as Keras saved it in ``source``, and the writer's major version."""
    if source == "json":
        return json.loads(saved.model.to_json()), None
    if source == "h5":
        with h5py.File(saved.files["h5"], "r") as f:
            return json.loads(f.attrs["model_config"]), int(str(f.attrs["keras_version"])[0])
    with zipfile.ZipFile(saved.files["keras"]) as zf:
        return json.loads(zf.read("config.json")), int(
            json.loads(zf.read("metadata.json"))["keras_version"][0]
        )


def assert_same_graph(graph: Any, model: Any) -> None:
    """Edges, inputs and outputs equal Keras's, recursively through nested models."""
    assert spec_graph(graph) == live_graph(model)
    for layer in graph.layers:
        if layer.graph is not None:
            assert_same_graph(layer.graph, model.get_layer(layer.name))


def check(models: dict, name: str, source: str, version: int) -> Any:
    saved = models[name]
    if source not in saved.files and source != "json":
        pytest.skip(f"{name} has no {source} file")  # never under TF: only tf_keras .keras of TFOpLambda
    config, writer = config_of(saved, source)
    graph = (
        parse_model_config(config, writer) if source != "json" else parse_model_json(saved.model.to_json())
    )
    assert graph.keras_version == version and graph.name == saved.model.name
    assert_same_graph(graph, saved.model)
    return graph


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", ["cnn", "seq", "nested", "quirks"])
def test_keras3_graph(keras3_models: dict, name: str, source: str) -> None:
    check(keras3_models, name, source, 3)


@pytest.mark.parametrize("source", ["h5", "json"])
@pytest.mark.parametrize("name", ["cnn", "seq", "nested", "quirks", "chunked"])
def test_keras2_graph(keras2_models: dict, name: str, source: str) -> None:
    check(keras2_models, name, source, 2)


@pytest.mark.parametrize("name", ["cnn", "seq", "nested"])
def test_tf_keras_dot_keras_graph(keras2_models: dict, name: str) -> None:
    check(keras2_models, name, "keras", 2)


@pytest.mark.parametrize("which", ["keras2", "keras3"])
def test_layer_classes_and_nesting(keras2_models: dict, keras3_models: dict, which: str) -> None:
    saved = (keras2_models if which == "keras2" else keras3_models)["nested"]
    graph = parse_model_json(saved.model.to_json())
    assert [(layer.name, layer.class_name) for layer in graph.layers] == [
        (layer.name, layer.__class__.__name__) for layer in saved.model.layers
    ]
    assert graph.layer("inner").graph.class_name == "Sequential"
    assert graph.layer("subfunc").graph.class_name == "Functional"
    assert len(graph.layer("shared").calls) == 2  # the shared layer, called on a and b


def test_keras3_call_constants_and_ops(keras3_models: dict) -> None:
    config, version = config_of(keras3_models["quirks"], "h5")
    graph = parse_model_config(config, version)
    add = graph.layer("add")  # ``s2 + 1.0``: an op, saved without "module" in legacy h5
    assert add.calls[0].inputs == (TensorRef("sub", 1, 0),)
    assert add.calls[0].kwargs[ARGS_KWARG] == [TensorRef("sub", 1, 0), 1.0]
    assert graph.outputs == (TensorRef("lam", 0, 0), TensorRef("sub", 1, 0))  # saved as ["sub", 2, 0]
    assert config["config"]["output_layers"][1] == ["sub", 2, 0]


def test_lambda_is_data(keras3_models: dict) -> None:
    config, version = config_of(keras3_models["quirks"], "keras")
    lam = parse_model_config(config, version).layer("lam")
    assert lam.class_name == "Lambda" and lam.config["function"]["class_name"] == "__lambda__"
    assert isinstance(lam.config["function"]["config"]["code"], str)  # bytecode, untouched


def test_keras2_tfoplambda_and_tensor_kwargs(keras2_models: dict) -> None:
    graph = parse_model_json(keras2_models["quirks"].model.to_json())
    add_1 = graph.layer("tf.__operators__.add_1")  # tf.zeros(...) + y: a constant positional input
    assert add_1.calls[0].kwargs["y"] == TensorRef("tf.__operators__.add", 0, 0)
    assert add_1.calls[0].kwargs[ARGS_KWARG] == [[[0.0, 0.0, 0.0, 0.0]]]
    mha = graph.layer("mha")  # value= is a tensor in kwargs: listed after the positional query
    assert mha.calls[0].inputs == (TensorRef("r1", 0, 0), TensorRef("r2", 0, 0))
    assert mha.calls[0].kwargs["value"] == TensorRef("r2", 0, 0)


# --- synthetic configs: dialect corners Keras no longer writes, and broken input ----------------------


def dense(name: str, **extra: Any) -> dict:
    return {"class_name": "Dense", "config": {"name": name, "units": 2, **extra}}


def test_old_sequential_list_without_input_layer() -> None:
    # Keras <= 2.2: config is a bare list; the first layer carries batch_input_shape.
    graph = parse_model_config(
        {"class_name": "Sequential", "config": [dense("a", batch_input_shape=[None, 3]), dense("b")]}, 2
    )
    assert [(layer.name, layer.class_name) for layer in graph.layers] == [
        ("a_input", "InputLayer"),
        ("a", "Dense"),
        ("b", "Dense"),
    ]
    assert graph.layers[0].config["batch_input_shape"] == [None, 3]
    assert graph.layer("b").calls[0].inputs == (TensorRef("a", 0, 0),)
    assert graph.inputs == (TensorRef("a_input", 0, 0),) and graph.outputs == (TensorRef("b", 0, 0),)


def test_keras3_sequential_without_input_uses_build_shape() -> None:
    graph = parse_model_config(
        {
            "class_name": "Sequential",
            "config": {"name": "s", "layers": [dense("a")], "build_input_shape": [None, 7]},
        },
        3,
    )
    assert graph.layers[0].config["batch_shape"] == [None, 7]


def functional(layers: list[dict], inputs: Any, outputs: Any) -> dict:
    return {
        "class_name": "Functional",
        "config": {"name": "m", "layers": layers, "input_layers": inputs, "output_layers": outputs},
    }


def k3_tensor(layer: str, node: int = 0, index: int = 0) -> dict:
    return {
        "class_name": "__keras_tensor__",
        "config": {"shape": [None, 2], "dtype": "float32", "keras_history": [layer, node, index]},
    }


def inp(name: str) -> dict:
    return {
        "class_name": "InputLayer",
        "name": name,
        "config": {"name": name, "batch_shape": [None, 2]},
        "inbound_nodes": [],
    }


def test_keras3_dict_inputs_are_flattened_in_sorted_key_order() -> None:
    add = {
        "class_name": "Add",
        "module": "keras.layers",
        "name": "add",
        "config": {"name": "add"},
        "inbound_nodes": [{"args": [{"z": k3_tensor("b"), "a": k3_tensor("a")}], "kwargs": {}}],
    }
    graph = parse_model_config(
        functional([inp("a"), inp("b"), add], {"y": ["b", 0, 0], "x": ["a", 0, 0]}, ["add", 0, 0])
    )
    assert graph.inputs == (TensorRef("a", 0, 0), TensorRef("b", 0, 0))
    assert graph.layer("add").calls[0].inputs == (TensorRef("a", 0, 0), TensorRef("b", 0, 0))


def test_custom_classes_are_qualified() -> None:
    custom = {
        "class_name": "Dense",
        "module": "my_project.layers",
        "registered_name": None,
        "name": "d",
        "config": {"name": "d"},
        "inbound_nodes": [{"args": [k3_tensor("a")], "kwargs": {}}],
    }
    registered = {
        **custom,
        "module": None,
        "registered_name": "pkg>Dense",
        "name": "e",
        "config": {"name": "e"},
    }
    graph = parse_model_config(functional([inp("a"), custom, registered], [["a", 0, 0]], [["d", 0, 0]]), 3)
    assert graph.layer("d").class_name == "my_project.layers>Dense"  # never mistaken for keras Dense
    assert graph.layer("e").class_name == "pkg>Dense"


def test_subclassed_model_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="subclassed"):
        parse_model_config({"class_name": "MyModel", "config": {"name": "m", "units": 3}})


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([[["ghost", 0, 0, {}]]], "not in the model"),
        ([[["a", 3, 0, {}]]], "node 3 of layer 'a'"),
        ([[["a", "x", 0, {}]]], "tensor reference"),
        ([42], "expected a list or dict"),
    ],
    ids=["unknown-layer", "node-out-of-range", "bad-triple", "bad-node"],
)
def test_broken_references(nodes: list[Any], message: str) -> None:
    layer = {**dense("d"), "name": "d", "inbound_nodes": nodes}
    with pytest.raises(FormatError, match=message) as exc:
        parse_model_config(functional([inp("a"), layer], [["a", 0, 0]], [["d", 0, 0]]), 2, where="cfg.h5")
    assert "\n" not in str(exc.value) and str(exc.value).startswith("cfg.h5")


def test_invalid_json() -> None:
    with pytest.raises(FormatError, match="invalid JSON"):
        parse_model_json("{nope", where="model.json")


def test_not_a_model_config() -> None:
    with pytest.raises(FormatError, match="class_name"):
        parse_model_config([1, 2, 3])
