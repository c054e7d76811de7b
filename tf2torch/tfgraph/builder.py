"""Collects the layers TF-op converters add, names them after TF scopes, and freezes a ``GraphSpec``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedError
from ..readers.keras_calls import ARGS_KWARG
from ..spec import GraphNode, GraphSpec, LayerCall, LayerSpec, TensorRef, Variable
from .base import Const, NodeCtx, PendingLayer, Tensor, TFShape

# Layers a following BiasAdd (or an Add of a bias vector) folds into, and their channel axis size.
BIASED = frozenset({"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "Dense", "Conv2DTranspose"})


def _scope(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else name


class Builder:
    def __init__(self, consumers: dict[str, list[str]]) -> None:
        self.consumers = consumers
        self.layers: list[PendingLayer] = []
        self.by_name: dict[str, PendingLayer] = {}
        self.inputs: list[str] = []

    def _unique(self, candidate: str) -> str:
        name, n = candidate, 1
        while name in self.by_name:
            name = f"{candidate}_{n}"
            n += 1
        return name

    def input(self, node: GraphNode) -> Tensor:
        shape = node.attrs.get("shape")
        if shape is None or len(shape) < 2:
            raise UnsupportedError(f"input {node.name!r}: its shape is {'unknown' if shape is None else list(shape)}; "
                                   "tf2torch needs the rank and the non-batch sizes of a graph's inputs")
        name = self._unique(node.name)
        layer = PendingLayer(name, "InputLayer", {"batch_shape": [None, *shape[1:]], "dtype": "float32"}, [],
                             node=node.name)
        self.layers.append(layer)
        self.by_name[name] = layer
        self.inputs.append(name)
        return Tensor(TensorRef(name), (None, *shape[1:]), node.name)

    def add(self, ctx: NodeCtx, class_name: str, config: dict[str, Any], inputs: Sequence[Tensor], shape: TFShape,
            weights: Sequence[tuple[str, Const]], kwargs: dict[str, Any], name: str) -> Tensor:
        if not name:
            # Weighted layers are named after their weights' scope (the variable scope in the TF code);
            # the rest after their op, which TF already made unique.
            stored = [c.var.name for _, c in weights if c.weight]
            name = _scope(stored[0]) if stored else ctx.node.name
        layer = PendingLayer(self._unique(name), class_name, dict(config), [t.ref for t in inputs],
                             list(weights), dict(kwargs), ctx.node.name)
        self.layers.append(layer)
        self.by_name[layer.name] = layer
        return Tensor(TensorRef(layer.name), tuple(shape), ctx.node.name)

    def fuse_bias(self, x: Tensor, bias: Const) -> bool:
        layer = self.by_name.get(x.ref.layer)
        if layer is None or layer.class_name not in BIASED or layer.config.get("use_bias"):
            return False
        if len(self.consumers.get(x.node, ())) != 1 or layer.node != x.node:
            return False  # the conv's own output is used elsewhere too: it must stay bias-free
        if len(bias.shape) != 1 or bias.shape[0] != x.shape[-1]:
            return False
        layer.config["use_bias"] = True
        layer.weights.append(("bias", bias))
        return True

    def freeze(self, name: str, outputs: tuple[TensorRef, ...]) -> GraphSpec:
        prefix = _common_prefix([layer.name for layer in self.layers if layer.class_name != "InputLayer"])
        renames = {layer.name: layer.name[len(prefix):] or layer.name for layer in self.layers
                   if layer.class_name != "InputLayer"}
        if len(set(renames.values())) != len(renames) or any(v in self.inputs for v in renames.values()):
            renames = {}  # stripping would make two names equal: keep them whole
        self._copies: dict[int, Variable] = {}

        def ref(r: TensorRef) -> TensorRef:
            return TensorRef(renames.get(r.layer, r.layer), r.node, r.index)

        specs = []
        for layer in self.layers:
            lname = renames.get(layer.name, layer.name)
            weights = []
            for leaf, const in layer.weights:
                # The Keras converters bind weights by their Keras name (kernel, gamma...); the source
                # name stays the variable's own, for the report.
                copy = dataclasses.replace(const.var, tf_name=f"{lname}/{leaf}")
                self._copies.setdefault(id(const.var), copy)
                weights.append(copy)
            kwargs = {k: tuple(ref(a) if isinstance(a, TensorRef) else a for a in v) if k == ARGS_KWARG else v
                      for k, v in layer.kwargs.items()}
            calls = () if layer.class_name == "InputLayer" else (
                LayerCall(tuple(ref(r) for r in layer.inputs), kwargs),)
            specs.append(LayerSpec(lname, layer.class_name, {"name": lname, **layer.config}, calls, tuple(weights)))
        return GraphSpec(name=name, class_name="Functional", layers=tuple(specs),
                         inputs=tuple(TensorRef(i) for i in self.inputs), outputs=tuple(ref(o) for o in outputs),
                         keras_version=3)

    def renamed(self) -> dict[int, Variable]:
        """id(original variable) -> the copy the layers hold (call after ``freeze``)."""
        return self._copies


def _common_prefix(names: list[str]) -> str:
    """The leading scopes every name shares (``resnet_v1_50/``), if any."""
    if len(names) < 2 or not all("/" in n for n in names):
        return ""
    parts = [n.split("/")[:-1] for n in names]
    common = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return "/".join(common) + "/" if common else ""
