"""Collects the layers TF-op converters add, names them after TF scopes, and freezes a ``GraphSpec``."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedError
from ..readers.keras_calls import ARGS_KWARG
from ..spec import GraphNode, GraphSpec, LayerCall, LayerSpec, TensorRef
from .base import Const, NodeCtx, PendingLayer, Tensor, TFShape, f32

GRAPH_CLASS = "TFGraph"  # what the generated class's docstring calls its source ("TFLite" for a .tflite model)
SCALE = "tf2torch>ScaleByConstant"  # provisional: a BatchNormalization, else a constant operand (or refused)
# Layers a following BiasAdd (or an Add of a bias vector) folds into.
BIASED = frozenset({"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "Dense", "Conv2DTranspose"})


_CALL_SCOPE = re.compile(r"^(Stateful)?PartitionedCall(_\d+)?$")


def _readable(node: str) -> str:
    """A node name without the call scopes inlining adds (``StatefulPartitionedCall_1/.../relu_1/Relu``)."""
    parts = [p for p in node.split("/") if not _CALL_SCOPE.match(p)]
    return "/".join(parts) or node


def _scope(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else name


class Builder:
    def __init__(self, consumers: dict[str, list[str]], input_shape: tuple[int | None, ...] | None = None) -> None:
        self.consumers = consumers
        self.input_shape = input_shape
        self.layers: list[PendingLayer] = []
        self.by_name: dict[str, PendingLayer] = {}
        self.inputs: list[str] = []
        self.scales: dict[str, tuple[Const, str]] = {}  # provisional x * constant layers -> (constant, op)
        self.renamed_refs: dict[str, str] = {}  # a layer renamed after others already refer to it

    def _unique(self, candidate: str) -> str:
        name, n = candidate, 1
        while name in self.by_name:
            name = f"{candidate}_{n}"
            n += 1
        return name

    def _norm_name(self, scope: str) -> str:
        """TF-slim and tf.contrib put a norm's variables under ``<name>/BatchNorm/``: the layer is
        ``<name>`` (``bn1/BatchNorm`` -> ``bn1``) unless a layer already has that name (``conv1``)."""
        head, _, last = scope.rpartition("/")
        return head if last == "BatchNorm" and head and head not in self.by_name else scope

    def input(self, node: GraphNode) -> Tensor:
        shape = node.attrs.get("shape")
        if self.input_shape is not None:
            if self.inputs:
                raise UnsupportedError("--input-shape applies to graphs with exactly one input")
            if shape is not None and (len(shape) != len(self.input_shape) or any(
                    g is not None and g != u for g, u in zip(shape[1:], self.input_shape[1:]))):
                raise UnsupportedError(f"input {node.name!r}: --input-shape {list(self.input_shape)} (in TF's layout) "
                                       f"contradicts the graph's {list(shape)}")
            shape = self.input_shape
        if shape is None or len(shape) < 2:
            raise UnsupportedError(f"input {node.name!r}: its shape is {'unknown' if shape is None else list(shape)}; "
                                   "tf2torch needs the rank and the non-batch sizes of a graph's inputs")
        name = self._unique(node.name)
        dtype = {3: "int32", 9: "int64"}.get(getattr(node.attrs.get("dtype"), "enum", 1), "float32")
        layer = PendingLayer(name, "InputLayer", {"batch_shape": [None, *shape[1:]], "dtype": dtype}, [],
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
            # (a SavedModel's variables are object paths like variables/0: their TF name says more)
            stored = [c.var.tf_name or c.var.name for _, c in weights if c.weight]
            name = self._norm_name(_scope(stored[0])) if stored else _readable(ctx.node.name)
        layer = PendingLayer(self._unique(name), class_name, dict(config), [t.ref for t in inputs],
                             list(weights), dict(kwargs), ctx.node.name)
        layer.node_named = not any(c.weight for _, c in weights)
        self.layers.append(layer)
        self.by_name[layer.name] = layer
        return Tensor(TensorRef(layer.name), tuple(shape), ctx.node.name)

    def fuse_bias(self, x: Tensor, bias: Const, own: bool = False) -> bool:
        """``own``: the bias is part of the op that made ``x`` (a TFLite conv's fused bias), so it joins the
        layer whatever else reads ``x``."""
        layer = self.by_name.get(x.ref.layer)
        if layer is None or layer.class_name not in BIASED or layer.config.get("use_bias"):
            return False
        if not own and (len(self.consumers.get(x.node, ())) != 1 or layer.node != x.node):
            return False  # the conv's own output is used elsewhere too: it must stay bias-free
        if len(bias.shape) != 1 or bias.shape[0] != x.shape[-1]:
            return False
        layer.config["use_bias"] = True
        layer.weights.append(("bias", bias))
        return True

    def scale(self, ctx: NodeCtx, x: Tensor, scale: Const) -> Tensor:
        out = self.add(ctx, SCALE, {}, [x], x.shape, [], {}, ctx.node.name)
        self.scales[out.ref.layer] = (scale, ctx.where())
        return out

    def complete_batch_norm(self, t: Tensor, shift: Const) -> Tensor | None:
        """``t = x * scale`` then ``+ shift``: a batch norm when ``scale`` is ``gamma * rsqrt(var + eps)``
        (or without gamma) and ``shift`` is ``beta - mean * scale``, as ``tf.nn.batch_normalization`` and
        Keras 3's exported BatchNormalization compute it; the layer becomes a BatchNormalization."""
        layer = self.by_name.get(t.ref.layer)
        if layer is None or layer.class_name != SCALE or len(self.consumers.get(t.node, ())) != 1:
            return None
        scale, _ = self.scales[layer.name]
        parts = batch_norm_parts(scale, shift)
        if parts is None:
            return None
        gamma, beta, mean, variance, eps = parts
        layer.class_name = "BatchNormalization"
        layer.config = {"axis": -1, "epsilon": eps, "center": True, "scale": gamma is not None}
        layer.weights = [*([("gamma", gamma)] if gamma is not None else []), ("beta", beta),
                         ("moving_mean", mean), ("moving_variance", variance)]
        stored = [c.var.tf_name or c.var.name for _, c in layer.weights if c.weight]
        del self.by_name[layer.name]
        layer.name = self._unique(self._norm_name(_scope(stored[0])) if stored else layer.name)
        layer.node_named = not stored
        self.by_name[layer.name] = layer
        del self.scales[t.ref.layer]
        self.renamed_refs[t.ref.layer] = layer.name
        return Tensor(TensorRef(layer.name), t.shape, t.node)

    def simplify(self, outputs: tuple[TensorRef, ...]) -> None:
        """Put back layers the exporter took apart (``patterns.py``), named after their weights."""
        from .patterns import simplify

        self.layers, aliases, rebuilt = simplify(self.layers, list(outputs))
        for old, ref in aliases.items():
            self.renamed_refs[old] = ref.layer
        self.by_name = {layer.name: layer for layer in self.layers}
        for layer in self.layers:
            if layer.name not in rebuilt:
                continue
            # named after its weights (ln1/gamma -> ln1), or a GELU after its scope (ff1/Gelu/mul_2 -> ff1/Gelu)
            stored = [c.var.tf_name or c.var.name for _, c in layer.weights if c.weight] or [layer.name]
            if "/" in stored[0]:
                del self.by_name[layer.name]
                new = self._unique(self._norm_name(_scope(stored[0])))
                self.renamed_refs[layer.name] = new
                layer.name, layer.node_named = new, not any(c.weight for _, c in layer.weights)
                self.by_name[new] = layer

    def freeze(self, name: str, outputs: tuple[TensorRef, ...], tf_outputs: tuple[str, ...] = (),
               output_names: tuple[str, ...] = (), class_name: str = GRAPH_CLASS) -> GraphSpec:
        for layer_name, (scale, where) in self.scales.items():  # products no add made a batch norm
            if scale.expr:  # computed from weights: only a batch norm says which weights
                raise UnsupportedError(f"{where}: a product with a constant of shape {list(scale.shape)} computed "
                                       "from weights that is not part of a batch norm (x * gamma * rsqrt(var + eps) "
                                       "+ beta - mean * ...); not converted")
            layer = self.by_name[layer_name]  # a product with a weight or a constant, as it stands
            layer.class_name = "tf2torch>ConstantOperand"
            layer.config = {"op": "mul", "shape": list(scale.shape), "reverse": False}
            layer.weights = [("value", scale)]
        names = [layer.name for layer in self.layers if layer.class_name != "InputLayer"]
        renames = _strip(names, names, self.inputs)
        # Layers named after ops often share a model scope the weights' names lack (Keras 3 exports:
        # "mobilenetv2_1.00_96_1/block_1_pad_1/Pad" beside "block_1_expand"): strip that too.
        by_op = [renames[n] for n in names if self.by_name[n].node_named]
        again = _strip(by_op, list(renames.values()), self.inputs)
        renames = {n: again.get(r, r) for n, r in renames.items()}

        def ref(r: TensorRef) -> TensorRef:
            layer = r.layer
            for _ in range(len(self.renamed_refs) + 1):  # renames chain: an alias of a renamed layer
                if layer not in self.renamed_refs:
                    break
                layer = self.renamed_refs[layer]
            return TensorRef(renames.get(layer, layer), r.node, r.index)

        specs = []
        for layer in self.layers:
            lname = renames.get(layer.name, layer.name)
            weights = []
            for leaf, const in layer.weights:
                # The Keras converters bind weights by their Keras name (kernel, gamma...); the source
                # name stays the variable's own, for the report.
                weights.append(dataclasses.replace(const.var, tf_name=f"{lname}/{leaf}"))
            kwargs = {k: tuple(ref(a) if isinstance(a, TensorRef) else a for a in v) if k == ARGS_KWARG else v
                      for k, v in layer.kwargs.items()}
            calls = () if layer.class_name == "InputLayer" else (
                LayerCall(tuple(ref(r) for r in layer.inputs), kwargs),)
            specs.append(LayerSpec(lname, layer.class_name, {"name": lname, **layer.config}, calls, tuple(weights)))
        return GraphSpec(name=name, class_name=class_name, layers=tuple(specs),
                         inputs=tuple(TensorRef(i) for i in self.inputs), outputs=tuple(ref(o) for o in outputs),
                         keras_version=3, tf_inputs=tuple(f"{self.by_name[i].node}:0" for i in self.inputs),
                         tf_outputs=tf_outputs, output_names=output_names)


def _leaf_weight(c: object) -> Const | None:
    return c if isinstance(c, Const) and c.weight and not c.expr else None


def _scalar(c: object) -> float | None:
    if not isinstance(c, Const) or c.weight or c.expr or c.shape not in ((), (1,)):
        return None
    return f32(c.array().reshape(-1)[0])


def _rsqrt_of_variance(c: Const) -> tuple[Const, float] | None:
    """``rsqrt(var + eps)`` -> (var, eps)."""
    if c.expr[:1] != ("rsqrt",):
        return None
    inner = c.expr[1]
    if not isinstance(inner, Const) or inner.expr[:1] != ("add",):
        return None
    a, b = inner.expr[1:]
    for var, eps in ((a, b), (b, a)):
        if _leaf_weight(var) is not None and _scalar(eps) is not None:
            return var, _scalar(eps)  # type: ignore[return-value]
    return None


def batch_norm_parts(scale: Const, shift: Const):
    """(gamma or None, beta, mean, variance, eps) when scale/shift are an unfused batch norm's."""
    gamma, found = None, _rsqrt_of_variance(scale)
    if found is None and scale.expr[:1] == ("mul",):
        a, b = scale.expr[1:]
        for r, g in ((a, b), (b, a)):
            if isinstance(r, Const) and _rsqrt_of_variance(r) is not None and _leaf_weight(g) is not None:
                found, gamma = _rsqrt_of_variance(r), g
    if found is None or shift.expr[:1] != ("sub",):
        return None
    variance, eps = found
    beta, product = shift.expr[1:]
    if _leaf_weight(beta) is None or not isinstance(product, Const) or product.expr[:1] != ("mul",):
        return None
    a, b = product.expr[1:]
    mean = a if b is scale else b if a is scale else None
    if _leaf_weight(mean) is None:
        return None
    return gamma, beta, mean, variance, eps


def _strip(names: list[str], everything: list[str], taken: list[str]) -> dict[str, str]:
    """``names`` without the scopes they all share, unless that makes any of ``everything`` collide."""
    prefix = _common_prefix(names)
    out = {n: (n[len(prefix):] or n) if n in set(names) else n for n in everything}
    if len(set(out.values())) != len(out) or any(v in taken for v in out.values()):
        return {n: n for n in everything}  # stripping would make two names equal: keep them whole
    return out


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
