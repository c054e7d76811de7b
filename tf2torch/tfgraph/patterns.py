"""Layers an exporter took apart, put back together once the whole graph is lowered, so model.py reads
like the model and not like its arithmetic:

- **LayerNormalization** from ``mean -> squared difference -> mean -> + eps -> rsqrt -> * gamma`` and
  ``x * that + (beta - mean * that)`` (tf.nn.moments + batch_normalization, and Keras 3's export, which
  writes the shift as ``-mean * that + beta``);
- **GELU** from ``0.5 * x * erfc(-x * 0.7071…)`` (Keras 3) or ``0.5 * x * (1 + erf(x * 0.7071…))``;
- a **bias after a head split** folded into the Dense before it (``Dense -> Reshape(T, heads, dim) ->
  + bias(heads, dim)``: Keras 3's exported EinsumDense projections).

A match rewrites the last layer and drops the ones before it only when nothing else reads them; the
numbers are unchanged (the same operations, in torch's fused form), which the tests check against TF.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from ..readers.keras_calls import ARGS_KWARG
from ..spec import TensorRef
from .base import Const, PendingLayer

NUMPY = "keras.src.ops.numpy>"
TF = "tf2torch>"
_SQRT_HALF = 1 / math.sqrt(2)


class Graph:
    """The builder's layers with who-reads-whom, for matching."""

    def __init__(self, layers: list[PendingLayer], outputs: list[TensorRef]) -> None:
        self.layers = layers
        self.by_name = {layer.name: layer for layer in layers}
        self.readers: dict[str, int] = {layer.name: 0 for layer in layers}
        for layer in layers:
            for ref in _refs(layer):
                self.readers[ref.layer] = self.readers.get(ref.layer, 0) + 1
        for ref in outputs:
            self.readers[ref.layer] = self.readers.get(ref.layer, 0) + 1

    def producer(self, ref: TensorRef | None) -> PendingLayer | None:
        return self.by_name.get(ref.layer) if ref is not None and ref.index == 0 else None


def _flat(const: Const) -> Const:
    """A weight seen as a vector: same variable, same values in the same order."""
    size = math.prod(const.shape)
    return Const(dataclasses.replace(const.var, shape=(size,), loader=lambda: const.array().reshape(-1)),
                 weight=const.weight)


def _refs(layer: PendingLayer) -> list[TensorRef]:
    extra = [a for a in layer.kwargs.get(ARGS_KWARG, ()) if isinstance(a, TensorRef)]
    return [*layer.inputs, *extra]


def _scalar_op(layer: PendingLayer | None, cls: str) -> tuple[TensorRef, float] | None:
    """``x op number`` (either order) of a Keras numpy op layer: (x, number)."""
    if layer is None or layer.class_name != NUMPY + cls:
        return None
    args = layer.kwargs.get(ARGS_KWARG)
    if not args or len(args) != 2 or len(layer.inputs) != 1:
        return None
    number = next((a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)), None)
    return (layer.inputs[0], float(number)) if number is not None else None


def _pair(layer: PendingLayer | None, cls: str) -> tuple[TensorRef, TensorRef] | None:
    if layer is None or layer.class_name != cls or len(layer.inputs) != 2 or ARGS_KWARG in layer.kwargs:
        return None
    return layer.inputs[0], layer.inputs[1]


def _constant(layer: PendingLayer | None, op: str, reverse: bool = False) -> tuple[TensorRef, Const] | None:
    if layer is None or layer.class_name != TF + "ConstantOperand" or layer.config.get("op") != op:
        return None
    if bool(layer.config.get("reverse")) != reverse or len(layer.weights) != 1:
        return None
    const = layer.weights[0][1]
    return (layer.inputs[0], const) if const.weight and not const.expr else None


def _reduce_last(g: Graph, ref: TensorRef) -> tuple[PendingLayer, TensorRef] | None:
    layer = g.producer(ref)
    if layer is None or layer.class_name != TF + "Reduce" or layer.config.get("op") != "mean":
        return None
    if not layer.config.get("keepdims") or len(layer.config.get("axes", ())) != 1:
        return None
    return layer, layer.inputs[0]


def layer_norm(g: Graph, out: PendingLayer) -> tuple[list[PendingLayer], TensorRef, dict, list] | None:
    pair = _pair(out, NUMPY + "Add")
    if pair is None:
        return None
    for xg_ref, shift_ref in (pair, pair[::-1]):
        xg = g.producer(xg_ref)
        factors = _pair(xg, NUMPY + "Multiply")
        for x_ref, scale_ref in (factors, factors[::-1]) if factors else ():
            found = _scale(g, scale_ref, x_ref)
            if found is None:
                continue
            inner, gamma, mean_layer, eps = found
            shift = _shift(g, shift_ref, mean_layer, scale_ref)
            if shift is None:
                continue
            shift_layers, beta = shift
            matched = [*inner, xg, *shift_layers]  # type: ignore[list-item]
            config = {"axis": -1, "epsilon": eps, "center": True, "scale": gamma is not None}
            # gamma and beta broadcast as (1, .., C): the layer holds them as (C,)
            weights = [*([("gamma", _flat(gamma))] if gamma is not None else []), ("beta", _flat(beta))]
            return matched, x_ref, config, weights
    return None


def _scale(g: Graph, ref: TensorRef, x_ref: TensorRef):
    """``rsqrt(mean((x - mean(x))**2) + eps) [* gamma]``: (its layers, gamma, the mean layer, eps)."""
    layers, gamma = [], None
    layer = g.producer(ref)
    scaled = _constant(layer, "mul")
    if scaled is not None:
        ref, gamma = scaled
        layers.append(layer)
        layer = g.producer(ref)
    if layer is None or layer.class_name != TF + "Unary" or layer.config.get("fn") != "rsqrt":
        return None
    layers.append(layer)
    plus = _scalar_op(g.producer(layer.inputs[0]), "Add")
    if plus is None:
        return None
    layers.append(g.producer(layer.inputs[0]))
    variance = _reduce_last(g, plus[0])
    if variance is None:
        return None
    diff = g.producer(variance[1])
    operands = _pair(diff, TF + "Binary") if diff is not None and diff.config.get("op") == "squared_difference" else None
    if operands is None or operands[0] != x_ref:
        return None
    mean = _reduce_last(g, operands[1])
    if mean is None or mean[1] != x_ref or mean[0].config.get("axes") != variance[0].config.get("axes"):
        return None
    layers += [variance[0], diff, mean[0]]
    return layers, gamma, mean[0], plus[1]


def _shift(g: Graph, ref: TensorRef, mean_layer: PendingLayer, scale_ref: TensorRef):
    """``beta - mean * scale`` or ``-mean * scale + beta``: (its layers, beta)."""
    layer = g.producer(ref)
    for op, reverse, negated in (("sub", True, False), ("add", False, True)):
        found = _constant(layer, op, reverse)
        if found is None:
            continue
        product_ref, beta = found
        product = g.producer(product_ref)
        factors = _pair(product, NUMPY + "Multiply")
        for m_ref, s_ref in (factors, factors[::-1]) if factors else ():
            if s_ref != scale_ref:
                continue
            if negated:
                neg = g.producer(m_ref)
                if neg is None or neg.class_name != NUMPY + "Negative" or len(neg.inputs) != 1:
                    continue
                if neg.inputs[0].layer == mean_layer.name:
                    return [layer, product, neg], beta
            elif m_ref.layer == mean_layer.name:
                return [layer, product], beta
    return None


def gelu(g: Graph, out: PendingLayer) -> tuple[list[PendingLayer], TensorRef, dict, list] | None:
    pair = _pair(out, NUMPY + "Multiply")
    for half_ref, other_ref in (pair, pair[::-1]) if pair else ():
        half_layer = g.producer(half_ref)
        half = _scalar_op(half_layer, "Multiply")
        if half is None or not math.isclose(half[1], 0.5):
            continue
        x_ref = half[0]
        other = g.producer(other_ref)
        chain = _erfc_form(g, other, x_ref) or _erf_form(g, other, x_ref)
        if chain is not None:
            return [half_layer, *chain], x_ref, {"activation": "gelu"}, []  # type: ignore[list-item]
    return None


def _erfc_form(g: Graph, layer: PendingLayer | None, x_ref: TensorRef) -> list[PendingLayer] | None:
    """``erfc(-x * 0.7071…)``."""
    if layer is None or layer.class_name != TF + "Unary" or layer.config.get("fn") != "erfc":
        return None
    scaled_layer = g.producer(layer.inputs[0])
    scaled = _scalar_op(scaled_layer, "Multiply")
    if scaled is None or not math.isclose(scaled[1], _SQRT_HALF, rel_tol=1e-6):
        return None
    neg = g.producer(scaled[0])
    if neg is None or neg.class_name != NUMPY + "Negative" or neg.inputs != [x_ref]:
        return None
    return [layer, scaled_layer, neg]  # type: ignore[list-item]


def _erf_form(g: Graph, layer: PendingLayer | None, x_ref: TensorRef) -> list[PendingLayer] | None:
    """``1 + erf(x * 0.7071…)``."""
    one = _scalar_op(layer, "Add")
    if one is None or one[1] != 1.0:
        return None
    erf = g.producer(one[0])
    if erf is None or erf.class_name != TF + "Unary" or erf.config.get("fn") != "erf":
        return None
    scaled_layer = g.producer(erf.inputs[0])
    scaled = _scalar_op(scaled_layer, "Multiply")
    if scaled is None or scaled[0] != x_ref or not math.isclose(scaled[1], _SQRT_HALF, rel_tol=1e-6):
        return None
    return [layer, erf, scaled_layer]  # type: ignore[list-item]


PATTERNS: tuple[tuple[str, Callable], ...] = (("LayerNormalization", layer_norm), ("Activation", gelu))


def simplify(layers: list[PendingLayer], outputs: list[TensorRef]
             ) -> tuple[list[PendingLayer], dict[str, TensorRef], set[str]]:
    """``layers`` with the patterns above rewritten (the layers they replace dropped), the layers that
    became another's output (name -> the tensor their readers read instead), and the rewritten ones."""
    g = Graph(layers, outputs)
    dropped: set[str] = set()
    rebuilt: set[str] = set()
    aliases: dict[str, TensorRef] = {}
    for layer in layers:
        if layer.name in dropped:
            continue
        for cls, match in PATTERNS:
            found = match(g, layer)
            if found is None:
                continue
            inner, x_ref, config, weights = found
            inner_names = {m.name for m in inner}
            # Rewrite only when the parts feed nothing but each other and the result.
            uses = {name: 0 for name in inner_names}
            for other in [*inner, layer]:
                for ref in _refs(other):
                    if ref.layer in uses:
                        uses[ref.layer] += 1
            if any(uses[name] != g.readers.get(name, 0) for name in inner_names):
                continue
            layer.class_name, layer.config, layer.inputs, layer.kwargs = cls, config, [x_ref], {}
            layer.weights = list(weights)
            dropped |= inner_names
            rebuilt.add(layer.name)
            break
    for layer in layers:  # a bias right after a head split belongs to the Dense before it
        _bias_through_split(g, layer, dropped, aliases)
    return [layer for layer in layers if layer.name not in dropped], aliases, rebuilt


def _bias_through_split(g: Graph, layer: PendingLayer, dropped: set[str], aliases: dict[str, TensorRef]) -> None:
    found = _constant(layer, "add")
    if found is None or layer.name in dropped:
        return
    split_ref, bias = found
    split = g.producer(split_ref)
    dense = g.producer(split.inputs[0]) if split is not None and split.class_name == "Reshape" else None
    if dense is None or dense.class_name != "Dense" or dense.config.get("use_bias"):
        return
    if g.readers.get(split.name) != 1 or g.readers.get(dense.name) != 1:
        return
    target = split.config.get("target_shape", [])
    units = dense.config.get("units")
    if len(bias.shape) < 2 or list(bias.shape) != list(target[-len(bias.shape):]) or math.prod(bias.shape) != units:
        return
    dense.config["use_bias"] = True
    dense.weights.append(("bias", _flat(bias)))
    aliases[layer.name] = split_ref  # the add is gone: its readers read the reshape
    dropped.add(layer.name)
