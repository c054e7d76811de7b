"""Give a TF2 checkpoint or SavedModel of a Keras model its architecture, and tie weights to layers.

The architecture comes from ``--config`` (``model.to_json()``) or, for tf_keras SavedModels, from
``keras_metadata.pb``. Weights are found through the checkpoint's object graph: the reader already
resolved each weight to its object path (Keras 3 keys trainable weights under the optimizer; the
reader follows the graph to the model) and its ``full_name`` (``conv1/kernel``), which names the owning
layer. Never by index order: a weight no layer claims stays unclaimed and is reported.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import FormatError, UsageError
from ..spec import Format, GraphSpec, LayerSpec, ModelSpec, Role, Variable
from .keras_config import parse_model_config, parse_model_json


def _owner(parts: list[str], graph: GraphSpec) -> tuple[LayerSpec, GraphSpec] | None:
    """The layer a weight's name path (``[outer, layer, …, leaf]``) belongs to, searching nested models.

    Keras 3 names nested weights ``seq/d1/kernel``; Keras 2 only ``d1/kernel`` (layer names are unique
    across the whole model, so a nested layer is found by searching the nested graphs).
    """
    names = {layer.name: layer for layer in graph.layers}
    for i, part in enumerate(parts[:-1]):
        layer = names.get(part)
        if layer is None:
            continue
        if layer.graph is not None:
            inner = _owner(parts[i + 1:], layer.graph)
            if inner is not None:
                return inner
        return layer, graph
    for layer in graph.layers:
        if layer.graph is not None:
            inner = _owner(parts, layer.graph)
            if inner is not None:
                return inner
    return None


def _attach(graph: GraphSpec, owned: dict[int, list[Variable]]) -> GraphSpec:
    layers = []
    for layer in graph.layers:
        nested = _attach(layer.graph, owned) if layer.graph is not None else None
        layers.append(replace(layer, weights=tuple(owned.get(id(layer), ())), graph=nested))
    return replace(graph, layers=tuple(layers))


def attach_weights(spec: ModelSpec, graph: GraphSpec) -> ModelSpec:
    owned: dict[int, list[Variable]] = {}
    for var in spec.variables:
        if var.role is not Role.WEIGHT or not var.tf_name:
            continue
        found = _owner(var.tf_name.split(":")[0].split("/"), graph)
        if found is not None:
            owned.setdefault(id(found[0]), []).append(var)
    if not owned:
        raise UsageError(f"{spec.path}: no weight of the checkpoint belongs to a layer of model {graph.name!r}; "
                         "is the config for this checkpoint?")
    return replace(spec, graph=_attach(graph, owned))


def attach_config(spec: ModelSpec, config: Path) -> ModelSpec:
    """``--config model.json``: the architecture for a checkpoint or SavedModel."""
    if spec.format not in (Format.TF2_CHECKPOINT, Format.SAVED_MODEL):
        raise UsageError(f"--config applies to TF2 checkpoints and SavedModels; {spec.path} is {spec.format.value}")
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--config {config}: cannot read it ({exc})") from None
    return attach_weights(spec, parse_model_json(text, where=str(config)))


def _untuple(value: object) -> object:
    """keras_metadata.pb writes tuples as {"class_name": "__tuple__", "items": [...]}; configs use lists."""
    if isinstance(value, dict):
        if value.get("class_name") == "__tuple__" and isinstance(value.get("items"), list):
            return [_untuple(v) for v in value["items"]]
        return {k: _untuple(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untuple(v) for v in value]
    return value


def from_keras_metadata(spec: ModelSpec, metadata: list[dict]) -> ModelSpec:
    """A tf_keras SavedModel: the root node's metadata holds the model's class and config."""
    root = next((m for m in metadata if m.get("node_path") == "root"), None)
    meta = root.get("metadata") if isinstance(root, dict) else None
    if not isinstance(meta, dict) or "config" not in meta or "class_name" not in meta:
        raise FormatError(f"{spec.path}: keras_metadata.pb has no model config at its root; pass --config")
    config = {"class_name": meta["class_name"], "config": _untuple(meta["config"])}
    return attach_weights(spec, parse_model_config(config,
                                                   keras_version=2, where=f"{spec.path}/keras_metadata.pb"))

