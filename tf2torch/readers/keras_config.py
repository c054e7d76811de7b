"""A Keras model config (JSON, either dialect) as a ``GraphSpec``; the config is data, never executed.

Models (Functional, Sequential, nested) and layers are read here; each call's ``inbound_nodes`` entry,
whose format differs between Keras 2 and Keras 3, is read by ``keras_calls.CallParser``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import FormatError, UnsupportedError
from ..spec import GraphSpec, LayerCall, LayerSpec, TensorRef
from .jsonsafe import MAX_DEPTH, load_json, shallow
from .keras_calls import KERAS_TENSOR, CallParser

_SEQUENTIAL = "Sequential"
_FUNCTIONAL = ("Functional", "Model")
_INPUT_LAYER = "InputLayer"
# Modules of Keras's own layers and models; a class from anywhere else (keras.src.ops, keras_hub,
# user code) gets a qualified class_name so it can never be mistaken for a built-in layer.
_KERAS_LAYER_MODULES = (
    "keras",
    "keras.layers",
    "keras.models",
    "keras.src.layers",
    "keras.src.models",
    "tf_keras",
    "tf_keras.layers",
    "tf_keras.models",
    "tf_keras.src.layers",
    "tf_keras.src.engine",
)


def parse_model_json(text: str, where: str = "model JSON") -> GraphSpec:
    """Parse ``model.to_json()`` output (either Keras version) into a ``GraphSpec``."""
    return parse_model_config(load_json(text, where), where=where)


def parse_model_config(
    config: Any, keras_version: int | None = None, where: str = "model config"
) -> GraphSpec:
    """Normalise a serialized Keras model (``{"class_name", "config"}``) into a ``GraphSpec``.

    Args:
        config: the decoded JSON of ``model_config`` / ``config.json`` / ``model.to_json()``.
        keras_version: major version of the Keras that wrote it (2 or 3); inferred when None.
        where: file name used in error messages.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("class_name"), str):
        raise FormatError(
            f"{where}: expected a Keras model config with 'class_name' and 'config', found {type(config).__name__}"
        )
    if not shallow(config):  # the walks below recurse once per level
        raise FormatError(f"{where}: model config nests over {MAX_DEPTH} levels deep (corrupt or hostile)")
    version = keras_version if keras_version in (2, 3) else _infer_version(config)
    return _Parser(version, where).model(config, path=())


def qualified_class_name(entry: Mapping[str, Any]) -> str:
    """The class name, prefixed by its registered package or module unless it is Keras's own layer."""
    class_name = str(entry.get("class_name", ""))
    registered = entry.get("registered_name")
    if isinstance(registered, str) and ">" in registered:
        return registered  # "package>Name" of register_keras_serializable
    module = entry.get("module")
    if not isinstance(module, str) or module in _KERAS_LAYER_MODULES:
        return class_name
    if module.startswith(tuple(m + "." for m in _KERAS_LAYER_MODULES if "." in m)):
        return class_name  # e.g. keras.src.models.functional, tf_keras.src.engine.functional
    return f"{module}>{class_name}"  # e.g. keras.src.ops.numpy>Add for ``x + 1`` in Keras 3


def is_model_entry(entry: Mapping[str, Any]) -> bool:
    """A layer entry that is itself a Functional or Sequential model (its config has layers)."""
    config = entry.get("config")
    if entry.get("class_name") == _SEQUENTIAL:
        return True
    return isinstance(config, Mapping) and "layers" in config and "input_layers" in config


def layer_name(entry: Mapping[str, Any]) -> str:
    # Sequential entries carry the name only inside "config"; functional ones also at top level.
    name = entry.get("name")
    if not isinstance(name, str):
        config = entry.get("config")
        name = config.get("name") if isinstance(config, Mapping) else None
    return name if isinstance(name, str) else ""


def _infer_version(config: Mapping[str, Any]) -> int:
    text = json.dumps(config)
    if KERAS_TENSOR in text or '"batch_shape"' in text:
        return 3
    if '"inbound_nodes": [[' in text or '"batch_input_shape"' in text:
        return 2
    return 3


class _Parser(CallParser):
    def __init__(self, version: int, where: str) -> None:
        self.version = version
        self.where = where

    def fail(self, path: tuple[str, ...], what: str) -> FormatError:
        inside = f" (in {'/'.join(path)})" if path else ""
        return FormatError(f"{self.where}{inside}: {what}")

    def model(self, entry: Mapping[str, Any], path: tuple[str, ...]) -> GraphSpec:
        class_name = qualified_class_name(entry)
        config = entry.get("config")
        if entry.get("class_name") == _SEQUENTIAL:
            return self.sequential(class_name, config, path)
        if isinstance(config, Mapping) and "layers" in config and "input_layers" in config:
            return self.functional(class_name, config, path)
        if class_name.startswith("keras_hub>"):
            raise UnsupportedError(
                f"{self.where}: {class_name!r} is a keras-hub model, which tf2torch does not generate PyTorch "
                "for yet; map it onto your own PyTorch model with --model FILE.py:CALLABLE, or write its "
                "weights alone with --weights-only"
            )
        raise UnsupportedError(
            f"{self.where}: model class {class_name!r} has no layer graph in its config (a subclassed "
            "model); rebuild it as a Functional or Sequential model, map it onto your PyTorch model "
            "with --model, or write its weights alone with --weights-only"
        )

    def layer(self, entry: Any, path: tuple[str, ...], calls: tuple[LayerCall, ...]) -> LayerSpec:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("class_name"), str):
            raise self.fail(path, f"expected a layer entry with 'class_name', found {str(entry)[:80]!r}")
        name = layer_name(entry)
        if not name:
            raise self.fail(path, f"layer of class {entry['class_name']!r} has no name")
        config = entry.get("config")
        graph = self.model(entry, path + (name,)) if is_model_entry(entry) else None
        return LayerSpec(
            name, qualified_class_name(entry), config if isinstance(config, Mapping) else {}, calls, (), graph
        )

    def sequential(self, class_name: str, config: Any, path: tuple[str, ...]) -> GraphSpec:
        # Keras <= 2.2 wrote a bare list of layers; later versions {"name", "layers", ...}.
        entries = config if isinstance(config, list) else (config or {}).get("layers")
        name = (config or {}).get("name", "sequential") if isinstance(config, Mapping) else "sequential"
        if not isinstance(entries, list):
            raise self.fail(path, f"Sequential model '{name}' has no 'layers' list")
        layers = [self.layer(e, path + (name,), ()) for e in entries]
        if layers and layers[0].class_name != _INPUT_LAYER:
            # No InputLayer saved: synthesise the one Keras creates from the first layer's shape.
            layers.insert(0, self.synthetic_input(layers[0], config, path))
        chained = layers[:1]
        for prev, layer in zip(layers[:-1], layers[1:], strict=True):
            call = LayerCall((TensorRef(prev.name, 0, 0),))  # each layer's only call feeds the next
            chained.append(LayerSpec(layer.name, layer.class_name, layer.config, (call,), (), layer.graph))
        inputs = (TensorRef(chained[0].name, 0, 0),) if chained else ()
        outputs = (TensorRef(chained[-1].name, 0, 0),) if chained else ()
        return GraphSpec(name, class_name, tuple(chained), inputs, outputs, self.version)

    def synthetic_input(self, first: LayerSpec, config: Any, path: tuple[str, ...]) -> LayerSpec:
        shape = first.config.get("batch_input_shape") or first.config.get("batch_shape")
        if shape is None and isinstance(config, Mapping):
            shape = config.get("build_input_shape")
        key = "batch_shape" if self.version == 3 else "batch_input_shape"
        name = f"{first.name}_input"  # the name Keras 2 gives the InputLayer it creates
        return LayerSpec(name, _INPUT_LAYER, {"name": name, key: shape})

    def functional(self, class_name: str, config: Mapping[str, Any], path: tuple[str, ...]) -> GraphSpec:
        name = str(config.get("name", ""))
        entries = config.get("layers")
        if not isinstance(entries, list):
            raise self.fail(path, f"model '{name}' has no 'layers' list")
        inner = path + (name,)
        by_name = {layer_name(e): e for e in entries if isinstance(e, Mapping)}
        if len(by_name) != len(entries):
            raise self.fail(
                inner,
                f"model '{name}' has {len(entries)} layers but {len(by_name)} distinct layer names; names must be unique",
            )
        layers = []
        for entry in entries:
            layer = self.layer(entry, inner, ())
            nodes = entry.get("inbound_nodes", [])
            if not isinstance(nodes, list):
                raise self.fail(
                    inner,
                    f"layer '{layer.name}' has inbound_nodes of type {type(nodes).__name__}, expected a list",
                )
            calls = tuple(self.call(node, layer.name, by_name, inner) for node in nodes)
            layers.append(LayerSpec(layer.name, layer.class_name, layer.config, calls, (), layer.graph))
        graph_in = tuple(
            self.ref(t, by_name, inner, "input_layers", io=True) for t in _triples(config.get("input_layers"))
        )
        graph_out = tuple(
            self.ref(t, by_name, inner, "output_layers", io=True)
            for t in _triples(config.get("output_layers"))
        )
        graph = GraphSpec(name, class_name, tuple(layers), graph_in, graph_out, self.version)
        self.check_refs(graph, inner)
        return graph

    def offset(self, entry: Mapping[str, Any], io: bool) -> int:
        """How many built-in nodes precede the calls of a nested model in saved node indices.

        A Functional model (and, in Keras 2, a Sequential built with an input) starts with a node
        of its own linking its inputs to outputs. Keras 2 counts it in every reference
        (``_should_skip_first_node``); Keras 3 only in ``input_layers``/``output_layers`` and only
        for Functional (``node_reindexing_map``), while call arguments use 0-based call indices.
        """
        if not is_model_entry(entry):
            return 0
        if self.version == 3:
            return int(io and entry.get("class_name") != _SEQUENTIAL)
        if entry.get("class_name") != _SEQUENTIAL:
            return 1
        config = entry.get("config")
        layers = config if isinstance(config, list) else (config or {}).get("layers") or []
        first = layers[0] if layers and isinstance(layers[0], Mapping) else {}
        first_config = first.get("config") if isinstance(first.get("config"), Mapping) else {}
        return int(first.get("class_name") == _INPUT_LAYER or "batch_input_shape" in first_config)

    def check_refs(self, graph: GraphSpec, path: tuple[str, ...]) -> None:
        counts = {layer.name: len(layer.calls) for layer in graph.layers}
        inputs = {layer.name for layer in graph.layers if layer.class_name == _INPUT_LAYER}
        refs = [(f"input_layers/output_layers of '{graph.name}'", r) for r in graph.inputs + graph.outputs]
        refs += [
            (f"call of layer '{layer.name}'", r)
            for layer in graph.layers
            for c in layer.calls
            for r in c.inputs
        ]
        for where, ref in refs:
            limit = 1 if ref.layer in inputs else counts[ref.layer]
            if not 0 <= ref.node < limit or ref.index < 0:
                raise self.fail(
                    path,
                    f"{where}: refers to node {ref.node} of layer '{ref.layer}', which has {limit} call(s); "
                    "the config is inconsistent",
                )


def _triples(value: Any) -> list[Any]:
    """Flatten input_layers/output_layers: one triple, a list of them, or a (nested) dict/list."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        return [value]  # Keras 3 writes a single input/output as a bare triple
    if isinstance(value, Mapping):
        return [t for k in sorted(value) for t in _triples(value[k])]
    if isinstance(value, list):
        return [t for v in value for t in _triples(v)]
    return [value] if value is not None else []
