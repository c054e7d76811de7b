"""Session fixtures: small models built and saved by the real Keras 3 (``keras``) and Keras 2
(``tf_keras``) in every file variant the Keras readers handle. Imported by ``tests/readers/conftest.py``.

Each fixture returns ``{model name: Saved}``; ``Saved.model`` is the live Keras model, so tests can
compare what we read with ``layer.get_weights()`` and with Keras's own graph bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_keras


@dataclass
class Saved:
    model: Any
    files: dict[str, Path] = field(default_factory=dict)  # variant -> path


def _fit(model: Any, keras: Any) -> None:
    """One optimizer step, so BatchNorm statistics and optimizer slots hold non-trivial values."""
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    xs = [np.random.RandomState(1).rand(2, *i.shape[1:]).astype("float32") for i in model.inputs]
    ys = [np.random.RandomState(2).rand(2, *o.shape[1:]).astype("float32") for o in model.outputs]
    model.fit(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0], epochs=1, batch_size=2, verbose=0)


def _cnn(keras: Any) -> Any:
    layers = keras.layers
    x = keras.Input((16, 16, 3), name="img")
    y = layers.Conv2D(8, 3, strides=2, padding="same", name="conv")(x)
    y = layers.BatchNormalization(name="bn")(y)
    y = layers.MaxPooling2D(name="pool")(y)
    y = layers.Flatten(name="flat")(y)
    return keras.Model(x, layers.Dense(4, name="fc")(y), name="cnn")


def _nested(keras: Any) -> Any:
    """Two inputs, a shared Dense, Add/Concatenate, a nested Sequential and Functional, two outputs."""
    layers = keras.layers
    inner = keras.Sequential([keras.Input((4,)), layers.Dense(4, name="inner_d")], name="inner")
    sub_in = keras.Input((4,))
    sub = keras.Model(sub_in, layers.Dense(4, name="sub_d")(sub_in), name="subfunc")
    shared = layers.Dense(4, name="shared")
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    ha, hb = shared(a), shared(b)
    s = layers.Add(name="add")([ha, hb])
    c = layers.Concatenate(name="cat")([inner(s), sub(s)])
    return keras.Model(
        [a, b], [layers.Dense(2, name="out1")(c), layers.Dense(1, name="out2")(hb)], name="nested"
    )


def _k3_quirks(keras: Any) -> Any:
    """A nested model called twice whose output is a model output, an op with a constant, a Lambda."""
    layers = keras.layers
    x = keras.Input((4,), name="x")
    i2 = keras.Input((4,), name="ii")
    sub = keras.Model(i2, layers.Dense(4, name="idense")(i2), name="sub")
    s2 = sub(sub(x))
    y = layers.Lambda(lambda t: t * 2.0, name="lam")(s2 + 1.0)
    return keras.Model(x, [y, s2], name="quirks")


def _k2_quirks(keras: Any) -> Any:
    """tf_keras: TFOpLambda with constants, MultiHeadAttention's tensor kwarg, a nested model twice."""
    import tensorflow as tf

    layers = keras.layers
    x = keras.Input((4,), name="x")
    i2 = keras.Input((4,), name="ii")
    sub = keras.Model(i2, layers.Dense(4, name="idense")(i2), name="sub")
    seq = keras.Sequential([layers.Dense(4, name="sd", input_shape=(4,))], name="seqn")
    s2 = sub(sub(x))
    q = seq(s2)
    y = q + 1.0
    y = tf.concat([y, tf.zeros((1, 4)) + y], axis=-1)
    z = layers.MultiHeadAttention(2, 2, name="mha")(
        layers.Reshape((1, 8), name="r1")(y), layers.Reshape((1, 8), name="r2")(y)
    )
    return keras.Model(x, [y, s2, q, z], name="quirks")


def _k2_chunked(keras: Any) -> Any:
    """Over 64 KB of layer names, so Keras splits the attribute into layer_names0, layer_names1, ..."""
    long = "x" * 250
    body = [keras.layers.Activation("linear", name=f"{long}_{i}") for i in range(300)]
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, name="first"), *body, keras.layers.Dense(1, name="last")],
        name="chunked",
    )


@pytest.fixture(scope="session")
def keras3_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Saved]:
    keras = require_keras("keras")
    from keras.src.saving import saving_lib

    keras.backend.clear_session()  # auto names ("add", not "add_3") must not depend on earlier tests
    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("keras3")
    seq = keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(3, name="d1"),
            keras.layers.Dropout(0.1, name="drop"),
            keras.layers.Dense(2, name="d2", dtype="bfloat16"),
        ],
        name="seq",
    )
    models = {"cnn": _cnn(keras), "seq": seq, "nested": _nested(keras), "quirks": _k3_quirks(keras)}
    for name in ("cnn", "nested"):
        _fit(models[name], keras)
    out = {}
    for name, model in models.items():
        saved = Saved(model)
        saved.files["keras"] = root / f"{name}.keras"
        saved.files["h5"] = root / f"{name}.h5"
        saved.files["weights_h5"] = root / f"{name}.weights.h5"
        model.save(saved.files["keras"])
        model.save(saved.files["h5"])
        model.save_weights(saved.files["weights_h5"])
        out[name] = saved
    out["seq"].files["npz"] = root / "seq_npz.keras"
    saving_lib.save_model(models["seq"], out["seq"].files["npz"], weights_format="npz")
    return out


@pytest.fixture(scope="session")
def keras2_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Saved]:
    keras = require_keras("tf_keras")
    import tensorflow as tf

    keras.backend.clear_session()  # auto names (tf.__operators__.add_1) must not depend on earlier tests
    tf.random.set_seed(0)
    root = tmp_path_factory.mktemp("keras2")
    seq = keras.Sequential(
        [keras.layers.Dense(3, name="d1", input_shape=(5,)), keras.layers.Dense(2, name="d2")], name="seq"
    )
    models = {
        "cnn": _cnn(keras),
        "seq": seq,
        "nested": _nested(keras),
        "quirks": _k2_quirks(keras),
        "chunked": _k2_chunked(keras),
    }
    for name in ("cnn", "nested"):
        _fit(models[name], keras)
    out = {}
    for name, model in models.items():
        saved = Saved(model)
        saved.files["h5"] = root / f"{name}.h5"
        saved.files["weights_legacy_h5"] = root / f"{name}_weights.h5"
        model.save(saved.files["h5"])
        model.save_weights(saved.files["weights_legacy_h5"])
        if name != "quirks":  # tf_keras cannot write TFOpLambda layers to .keras
            saved.files["keras"] = root / f"{name}.keras"
            model.save(saved.files["keras"])
        out[name] = saved
    return out


# --- Keras's own view of a model's graph, to compare a GraphSpec with ----------------------------------
Triple = tuple[str, int, int]


def live_graph(model: Any) -> tuple[dict[str, list[list[Triple]]], list[Triple], list[Triple]]:
    """Per layer, the inputs of each call as (layer, call index, tensor index); and model in/outputs.

    Built from Keras's node bookkeeping (``_inbound_nodes`` filtered by the model's node set), not
    from the config, so it checks our reading of node indices independently.
    """
    if hasattr(model, "_network_nodes"):  # tf_keras Functional (also Sequential with an input)
        from tf_keras.src.engine.functional import _make_node_key

        def in_model(layer: Any, i: int) -> bool:
            return _make_node_key(layer.name, i) in model._network_nodes

        def history(t: Any) -> Triple:
            h = t._keras_history
            return (h.layer.name, call_index(h.layer, h.node_index), h.tensor_index)

        def inputs_of(node: Any) -> list[Any]:
            return list(node.keras_inputs)

        # ``Sequential.layers`` hides its InputLayer; the graph has it.
        ops = list(model._input_layers) + [x for x in model.layers if x not in model._input_layers]
    else:  # Keras 3; a Sequential keeps its graph in ``_functional``
        from keras.src.ops.function import make_node_key

        model = getattr(model, "_functional", None) or model

        def in_model(layer: Any, i: int) -> bool:
            return make_node_key(layer, i) in model._nodes

        def history(t: Any) -> Triple:
            h = t._keras_history
            return (h.operation.name, call_index(h.operation, h.node_index), h.tensor_index)

        def inputs_of(node: Any) -> list[Any]:
            return list(node.arguments.keras_tensors)

        ops = model.operations

    def call_index(layer: Any, raw: int) -> int:
        return sum(1 for i in range(raw) if in_model(layer, i) and not layer._inbound_nodes[i].is_input)

    edges = {}
    for layer in ops:
        nodes = [n for i, n in enumerate(layer._inbound_nodes) if in_model(layer, i) and not n.is_input]
        edges[layer.name] = [[history(t) for t in inputs_of(n)] for n in nodes]
    return edges, [history(t) for t in model.inputs], [history(t) for t in model.outputs]


def spec_graph(graph: Any) -> tuple[dict[str, list[list[Triple]]], list[Triple], list[Triple]]:
    def triple(r: Any) -> Triple:
        return (r.layer, r.node, r.index)

    edges = {layer.name: [[triple(r) for r in c.inputs] for c in layer.calls] for layer in graph.layers}
    return edges, [triple(r) for r in graph.inputs], [triple(r) for r in graph.outputs]
