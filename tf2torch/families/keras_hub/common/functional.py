"""Writing the Functional config a keras-hub model builds in its constructor.

A keras-hub ``Backbone`` is a Functional model, but its saved ``config.json`` holds only the arguments of
its constructor (``BertBackbone(num_layers=12, ...)``); the layer graph exists only while that Python code
runs. tf2torch never runs it: each supported class has a builder (``bert.py`` …) that writes the graph the
constructor builds, in Keras 3's own Functional config format, so the rest of the pipeline (the config
parser, the weight attachment by object path, the converters) treats it as any other ``.keras`` model.

Builders call layers in the constructor's order; ``model()`` then lists them in the order Keras's
``model.operations`` does (``keras_order``), because the weights file numbers the layers of one class in
that order (``conv2d``, ``conv2d_1`` …). Keras >= 3.10 also tags each weight group with its layer's name,
which the weight attachment checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KERAS_TENSOR = "__keras_tensor__"
AUTO_NAMED = "__tf2torch_auto_named__"
MAX_LAYERS = 20_000  # far above any real model's (a 96-layer LLM has a few hundred)


class GraphTooLarge(ValueError):
    """A builder was asked for more layers than any real model has."""  # on a layer entry a builder named as Keras's per-process counter would


@dataclass(frozen=True)
class Ref:
    """One output of one call of a layer: ``[layer, node, index]`` in Keras's notation."""

    layer: str
    node: int = 0
    index: int = 0

    def serialize(self) -> dict[str, Any]:
        return {"class_name": KERAS_TENSOR, "config": {"keras_history": [self.layer, self.node, self.index]}}


def _serialize(value: Any) -> Any:
    if isinstance(value, Ref):
        return value.serialize()
    if isinstance(value, tuple):  # Keras 3 keeps tuples apart from lists
        return {"class_name": "__tuple__", "config": {"value": [_serialize(v) for v in value]}}
    if isinstance(value, list):
        return [_serialize(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _serialize(v) for k, v in value.items()}
    return value


def _flat_refs(node: Mapping[str, Any]) -> list[Ref]:
    """A call's input tensors in Keras's flatten order (args, then kwargs by sorted key)."""
    def walk(v: Any) -> list[Ref]:
        if isinstance(v, Mapping) and v.get("class_name") == KERAS_TENSOR:
            return [Ref(*v["config"]["keras_history"])]
        if isinstance(v, Mapping):
            items = v["config"]["value"] if v.get("class_name") == "__tuple__" else [v[k] for k in sorted(v)]
            return [r for x in items for r in walk(x)]
        if isinstance(v, list):
            return [r for x in v for r in walk(x)]
        return []

    return walk(node["args"]) + walk(node["kwargs"])


def sliced(start: int | None = None, stop: int | None = None, step: int | None = None) -> dict[str, Any]:
    """A Python slice as Keras 3 serializes it inside an op's arguments (``x[:, 0, :]``)."""
    return {"class_name": "__slice__", "config": {"start": start, "stop": stop, "step": step}}


class FunctionalGraph:
    """Layers appended in call order; ``model()`` returns the ``{"class_name", "config"}`` entry."""

    def __init__(self, name: str, dtype: Any, keyed_inputs: bool = True) -> None:
        self.name = name
        self.keyed_inputs = keyed_inputs  # inputs={"token_ids": ...} (text models) or inputs=image (one tensor)
        self.dtype = dtype  # the model's dtype policy, which keras-hub passes to every layer
        self.entries: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, Ref] = {}
        self.auto_named: set[str] = set()
        self.models: set[str] = set()  # layers that are whole models (a Task's backbone)

    def input(self, name: str, shape: tuple[int | None, ...], dtype: str) -> Ref:
        self._add(name, {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
                         "config": {"name": name, "batch_shape": [None, *shape], "dtype": dtype}})
        self.inputs[name] = Ref(name)
        return Ref(name)

    def layer(self, class_name: str, name: str, config: Mapping[str, Any], *args: Any,
              module: str = "keras.layers", registered: str | None = None, **kwargs: Any) -> Ref:
        """Call a layer (a new one, or one already called: a shared layer gets its next node)."""
        entry = self.entries.get(name)
        if entry is None:
            entry = self._add(name, {"module": module, "class_name": class_name, "registered_name": registered,
                                     "config": {"name": name, "trainable": True, "dtype": self.dtype, **config}})
        elif entry["class_name"] != class_name:
            raise ValueError(f"two layers named {name!r}")  # a builder bug, never the user's file
        entry["inbound_nodes"].append({"args": _serialize(list(args)), "kwargs": _serialize(kwargs)})
        return Ref(name, len(entry["inbound_nodes"]) - 1)

    def hub(self, class_name: str, name: str, config: Mapping[str, Any], *args: Any, **kwargs: Any) -> Ref:
        """Call a keras-hub layer (registered as ``keras_hub>Class``)."""
        return self.layer(class_name, name, config, *args, module="keras_hub.src.layers",
                          registered=f"keras_hub>{class_name}", **kwargs)

    def model_layer(self, entry: Mapping[str, Any], *args: Any, **kwargs: Any) -> Ref:
        """Call a whole model (a Task's backbone) as one layer: ``entry`` is its built Functional entry."""
        name = entry["config"]["name"]
        added = self._add(name, {k: v for k, v in entry.items() if k not in ("name", "inbound_nodes")})
        added["inbound_nodes"].append({"args": _serialize(list(args)), "kwargs": _serialize(kwargs)})
        if entry.get("class_name") != "Sequential":  # Keras 3 counts a Functional's own first node (see model())
            self.models.add(name)
        return Ref(name)

    def op(self, class_name: str, module: str, name: str, config: Mapping[str, Any], *args: Any,
           **kwargs: Any) -> Ref:
        """A ``keras.ops`` call on symbolic tensors (``x[:, 0, :]`` is ``keras.src.ops.numpy>GetItem``)."""
        entry = self._add(name, {"module": module, "class_name": class_name, "registered_name": class_name,
                                 "config": {"name": name, **config}})
        entry["inbound_nodes"].append({"args": _serialize(list(args)), "kwargs": _serialize(kwargs)})
        return Ref(name)

    def auto_name(self, base: str) -> str:
        """The name Keras gives an unnamed layer (``base``, ``base_1`` …). Keras numbers them per process, so
        in the user's file the name may differ: the layer is marked (``AUTO_NAMED``) and the weight loader
        takes the name the file gives its weights instead of checking it (they are found by path)."""
        n = sum(1 for name in self.entries if name == base or name.startswith(base + "_"))
        name = base if n == 0 else f"{base}_{n}"
        self.auto_named.add(name)
        return name

    def model(self, class_name: str, outputs: Mapping[str, Ref] | Ref) -> dict[str, Any]:
        flat_outputs = [outputs] if isinstance(outputs, Ref) else [outputs[k] for k in sorted(outputs)]
        layers = [{**self.entries[name], **({AUTO_NAMED: True} if name in self.auto_named else {})}
                  for name in self.keras_order(flat_outputs)]
        def triple(r: Ref) -> list[Any]:  # Keras 3 counts a nested model's own first node here (not in calls)
            return [r.layer, r.node + (r.layer in self.models), r.index]

        out = triple(outputs) if isinstance(outputs, Ref) else {k: triple(v) for k, v in outputs.items()}
        ins: Any = {k: triple(v) for k, v in self.inputs.items()}
        if not self.keyed_inputs:
            ins = [triple(v) for v in self.inputs.values()]
            ins = ins[0] if len(ins) == 1 else ins
        return {"module": "keras_hub.src.models", "class_name": class_name, "registered_name": f"keras_hub>{class_name}",
                "config": {"name": self.name, "trainable": True, "layers": layers,
                           "input_layers": ins, "output_layers": out}}

    def keras_order(self, outputs: list[Ref]) -> list[str]:
        """Layer names in ``Functional.operations`` order (``keras.src.ops.function.map_graph``): a
        depth-first walk from the outputs numbers operations as first seen and lists nodes after their
        inputs; each node's depth is its longest path to an output; operations go deepest first, ties
        in walk order."""
        calls = {(n, i): [r for r in _flat_refs(node)] for n, e in self.entries.items()
                 for i, node in enumerate(e["inbound_nodes"])}
        first_seen: dict[str, int] = {}
        finished: set[tuple[str, int]] = set()
        walk: list[tuple[str, int]] = []  # nodes from the inputs to the outputs
        for out in outputs:  # iterative form of _build_map_helper (deep nets exceed Python's recursion)
            stack: list[tuple[tuple[str, int], int]] = [((out.layer, out.node), 0)]
            while stack:
                node, step = stack.pop()
                if step == 0:
                    if node in finished:
                        continue
                    first_seen.setdefault(node[0], len(first_seen))
                parents = calls.get(node, [])
                if step < len(parents):
                    stack.append((node, step + 1))
                    stack.append(((parents[step].layer, parents[step].node), 0))
                elif node not in finished:
                    finished.add(node)
                    walk.append(node)
        node_depth: dict[tuple[str, int], int] = {}
        layer_depth: dict[str, int] = {}
        for node in reversed(walk):
            depth = max(node_depth.setdefault(node, 0), layer_depth.get(node[0], 0))
            layer_depth[node[0]] = node_depth[node] = depth
            for parent in calls.get(node, []):
                key = (parent.layer, parent.node)
                node_depth[key] = max(depth + 1, node_depth.get(key, 0))
        for name in self.inputs:  # an input no output depends on
            if name not in layer_depth:
                layer_depth[name], first_seen[name] = 0, -1
        return sorted(layer_depth, key=lambda name: (-layer_depth[name], first_seen[name]))

    def _add(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        if len(self.entries) >= MAX_LAYERS:  # the arguments are data: num_layers=10**9 must not build forever
            raise GraphTooLarge(f"the arguments describe a model of over {MAX_LAYERS} layers")
        if name in self.entries:
            raise ValueError(f"two layers named {name!r}")
        entry = {**entry, "name": name, "inbound_nodes": []}
        self.entries[name] = entry
        return entry
