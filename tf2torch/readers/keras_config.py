"""A Keras model config (JSON, either dialect) as a ``GraphSpec``; the config is data, never executed.

Two dialects of ``inbound_nodes`` exist:

* Keras 2 (tf_keras, and every legacy ``.h5`` it wrote): one list per call, holding one
  ``[layer, node, tensor, {kwargs}]`` leaf per input tensor (nested for some layers);
* Keras 3: ``{"args": [...], "kwargs": {...}}`` per call, with tensors written as
  ``{"class_name": "__keras_tensor__", "config": {"keras_history": [layer, node, tensor]}}``.

Both count nodes differently (see ``_offset``); every ``TensorRef.node`` we hand out is an index into
the referenced layer's ``LayerSpec.calls`` (InputLayers have no calls: their tensor is node 0).
``LayerCall.inputs`` holds the tensors of the positional arguments, then those of the keyword
arguments (dict keys sorted, like Keras's ``tree.flatten``); tensors inside ``kwargs`` are also
replaced by ``TensorRef``. When positional arguments hold constants, they are kept, with tensors as
``TensorRef``, under ``kwargs[ARGS_KWARG]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import FormatError, UnsupportedError
from ..spec import GraphSpec, LayerCall, LayerSpec, TensorRef

ARGS_KWARG = "__args__"  # positional arguments of a call that contain constants (see module doc)
KERAS_TENSOR = "__keras_tensor__"  # Keras 3 class_name of a serialized symbolic tensor
CONSTANT_VALUE = "_CONSTANT_VALUE"  # Keras 2 leaf [_CONSTANT_VALUE, -1, value, kwargs]
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


MAX_DEPTH = 200  # JSON nesting; a nested model adds ~5 levels, real configs stay below 50
_TOO_DEEP = object()


def load_json(text: str | bytes, where: str, what: str = "model.to_json() text") -> Any:
    """``json.loads`` for JSON read from a file: every failure, deep nesting included, is a FormatError.

    Python's parser raises RecursionError (not JSONDecodeError) on a few thousand nested brackets, and
    structures under that limit would still exhaust the stack of the recursive walks below.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        found = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise FormatError(f"{where}: expected {what}, found invalid JSON ({found})") from None
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or not _shallow(data):
        raise FormatError(f"{where}: expected {what}, found JSON nested over {MAX_DEPTH} levels deep "
                          "(corrupt or hostile)")
    return data


def _shallow(value: Any) -> bool:
    """True when ``value`` nests at most MAX_DEPTH lists/dicts deep (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list):
            if depth > MAX_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, Mapping) else item))
    return True


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
    if not _shallow(config):  # the walks below recurse once per level
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


class _Parser:
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
        raise UnsupportedError(
            f"{self.where}: model class {class_name!r} has no layer graph in its config (a subclassed "
            "model); rebuild it as a Functional or Sequential model, or convert its weights only"
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

    def call(self, node: Any, owner: str, by_name: Mapping[str, Any], path: tuple[str, ...]) -> LayerCall:
        where = f"call of layer '{owner}'"
        if isinstance(node, Mapping):  # Keras 3: {"args": [...], "kwargs": {...}}
            args, kwargs = node.get("args", []), node.get("kwargs", {})
            if not isinstance(args, list) or not isinstance(kwargs, Mapping):
                raise self.fail(
                    path, f"{where}: expected 'args' list and 'kwargs' dict, found {str(node)[:80]!r}"
                )
            args_t = self.v3_tensors(args, by_name, path, where)
            # Converted key by key: the kwargs dict itself may look like a serialized tensor.
            kwargs_t = {k: self.v3_tensors(v, by_name, path, where) for k, v in kwargs.items()}
        elif isinstance(node, list):  # Keras 2: [[layer, node, tensor, {kwargs}], ...]
            leaves = _v2_leaves(node)
            if not leaves:
                raise self.fail(path, f"{where}: empty inbound node")
            structure = self.v2_structure(node, by_name, path, where)
            # A one-leaf list is passed unwrapped (tf_keras ``unnest_if_single_tensor``); layers
            # that keep their input structure (TFOpLambda) save a lone tensor as a bare leaf.
            single = isinstance(structure, list) and len(structure) == 1 and not _is_v2_leaf(node)
            args_t = [structure[0] if single else structure]
            raw_kwargs = next(
                (leaf[3] for leaf in leaves if len(leaf) == 4 and isinstance(leaf[3], Mapping)), {}
            )
            kwargs_t = self.v2_kwargs(dict(raw_kwargs), by_name, path, where)
        else:
            raise self.fail(
                path, f"{where}: expected a list or dict inbound node, found {type(node).__name__}"
            )
        inputs = tuple(_refs(args_t)) + tuple(_refs([kwargs_t[k] for k in sorted(kwargs_t)]))
        if not inputs:  # a graph node exists only because a symbolic tensor went in
            raise self.fail(path, f"{where}: passes no tensor (only constants); the config is inconsistent")
        if _has_constant(args_t):
            kwargs_t[ARGS_KWARG] = args_t
        return LayerCall(inputs, kwargs_t)

    def v3_tensors(self, value: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        if isinstance(value, Mapping):
            # "config" of a tensor / tuple is a dict in any file Keras wrote; other types read as {}
            # (then the reference or the tuple's items are reported as missing, never crash).
            config = value.get("config") if isinstance(value.get("config"), Mapping) else {}
            if value.get("class_name") == KERAS_TENSOR:
                return self.ref(config.get("keras_history"), by_name, path, where, io=False)
            if value.get("class_name") == "__tuple__":  # Keras 3 serializes tuples as {"__tuple__"}
                items = config.get("value", [])
                if not isinstance(items, list):
                    raise self.fail(path, f"{where}: expected a list of tuple items, found {str(items)[:80]!r}")
                return [self.v3_tensors(v, by_name, path, where) for v in items]
            return {k: self.v3_tensors(v, by_name, path, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.v3_tensors(v, by_name, path, where) for v in value]
        return value

    def v2_structure(self, node: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        if _is_v2_leaf(node):
            if node[0] == CONSTANT_VALUE:
                return node[2]  # [_CONSTANT_VALUE, -1, value, kwargs]: a constant positional input
            return self.ref(node[:3], by_name, path, where, io=False)
        if isinstance(node, Mapping):  # layers that keep a dict input structure
            return {k: self.v2_structure(v, by_name, path, where) for k, v in node.items()}
        if isinstance(node, list):
            return [self.v2_structure(v, by_name, path, where) for v in node]
        raise self.fail(path, f"{where}: unexpected inbound node item {node!r}")

    def v2_kwargs(self, value: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str) -> Any:
        # Like tf_keras, a [name, node, tensor] list inside kwargs naming a layer is a tensor.
        if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and value[0] in by_name:
            return self.ref(value, by_name, path, where, io=False)
        if isinstance(value, Mapping):
            return {k: self.v2_kwargs(v, by_name, path, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self.v2_kwargs(v, by_name, path, where) for v in value]
        return value

    def ref(
        self, triple: Any, by_name: Mapping[str, Any], path: tuple[str, ...], where: str, io: bool
    ) -> TensorRef:
        ok = isinstance(triple, list) and len(triple) >= 3 and isinstance(triple[0], str)
        if not ok or not all(isinstance(i, int) and not isinstance(i, bool) for i in triple[1:3]):
            raise self.fail(
                path, f"{where}: expected a tensor reference [layer, node, tensor], found {triple!r}"
            )
        name, node, index = triple[0], triple[1], triple[2]
        entry = by_name.get(name)
        if entry is None:
            raise self.fail(path, f"{where}: refers to layer '{name}', which is not in the model")
        return TensorRef(name, node - self.offset(entry, io), index)

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


def _is_v2_leaf(item: Any) -> bool:
    # A leaf starts with a layer name; a list of leaves starts with a list (or dict).
    return isinstance(item, list) and len(item) in (3, 4) and isinstance(item[0], str)


def _v2_leaves(node: Any) -> list[list[Any]]:
    if _is_v2_leaf(node):
        return [node]
    values = node.values() if isinstance(node, Mapping) else node if isinstance(node, list) else []
    return [leaf for v in values for leaf in _v2_leaves(v)]


def _refs(value: Any) -> list[TensorRef]:
    """Tensor references in ``value`` in Keras's flatten order (dict keys sorted)."""
    if isinstance(value, TensorRef):
        return [value]
    if isinstance(value, Mapping):
        return [r for k in sorted(value) for r in _refs(value[k])]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _has_constant(value: Any) -> bool:
    if isinstance(value, TensorRef):
        return False
    if isinstance(value, Mapping):
        return any(_has_constant(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_constant(v) for v in value)
    return True


def _triples(value: Any) -> list[Any]:
    """Flatten input_layers/output_layers: one triple, a list of them, or a (nested) dict/list."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        return [value]  # Keras 3 writes a single input/output as a bare triple
    if isinstance(value, Mapping):
        return [t for k in sorted(value) for t in _triples(value[k])]
    if isinstance(value, list):
        return [t for v in value for t in _triples(v)]
    return [value] if value is not None else []
