"""Data-flow evidence in a TF1 graph: what feeds each pool and MatMul, which Dense reads a Flatten over
NHWC, the input placeholders' shapes, and the epsilon of batch norms TF did not fuse.

These are what a user's PyTorch port cannot be tied to by variables alone (a pool reads none, a
Flatten is a Reshape), so ``rewrite/ties.py`` aligns them with the modules of one forward pass.
Everything here is read from the graph; nothing is a default.

Messages used on top of ``metagraph.py``'s (core/framework/attr_value.proto, tensor.proto,
tensor_shape.proto)::

    AttrValue       type 6 (DataType enum), shape 7 (TensorShapeProto), tensor 8 (TensorProto)
    TensorShapeProto dim 2 {size 1 (int64, -1 = unknown)}, unknown_rank 3
    TensorProto     dtype 1, tensor_shape 2, tensor_content 4 (raw little-endian), float_val 5 (packed)
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ...spec import OpSpec

if TYPE_CHECKING:
    from ..metagraph import NodeIndex

DT_FLOAT = 1
# Ops a tensor passes through keeping its layout and (for the unary ones) its shape: activations,
# bias and residual adds, scalings, casts, pads. A walk from a pool or a MatMul back to the op that
# produced its operand goes through these and stops at anything else.
TRANSPARENT = frozenset({
    "Identity", "IdentityN", "Snapshot", "StopGradient", "Cast", "Relu", "Relu6", "Elu", "Selu", "Sigmoid",
    "Tanh", "Softplus", "Softsign", "LeakyRelu", "Gelu", "Swish", "BiasAdd", "BiasAddV1", "Add", "AddV2",
    "AddN", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Neg", "Square", "Pad", "PadV2", "MirrorPad",
    "Dropout", "Enter",
})
RESHAPES = frozenset({"Reshape"})  # a Flatten in a TF1 graph (tf.layers.flatten, tf.reshape(x, [-1, n]))
_WINDOW = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "MaxPool", "AvgPool",
                     "MaxPool3D", "AvgPool3D", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
_MAX_STEPS = 256  # an operand's producer is a few ops away; the bound keeps forged graphs cheap


def data_inputs(graph: NodeIndex, name: str) -> list[str]:
    from ..metagraph import node_name

    return [node_name(i) for i in graph.node(name).repeated_strings(3) if not i.startswith("^")]


def producers(graph: NodeIndex, name: str, stop: frozenset[str]) -> tuple[tuple[str, ...], bool]:
    """The ops in ``stop`` that feed operand 0 of ``name`` through transparent ops (graph order), and
    whether the walk crossed a Reshape on the way."""
    found: dict[str, None] = {}
    reshaped = False
    inputs = data_inputs(graph, name)
    todo, seen, steps = inputs[:1], set(), 0
    while todo and steps < _MAX_STEPS:
        node = todo.pop()
        steps += 1
        if node in seen or node not in graph.nodes:
            continue
        seen.add(node)
        op = graph.op(node)
        if op in stop:
            found[node] = None
        elif op in RESHAPES:
            reshaped = True
            todo += data_inputs(graph, node)[:1]  # operand 1 is the target shape
        elif op in TRANSPARENT:
            todo += data_inputs(graph, node)[:1] if op.startswith(("Pad", "MirrorPad")) else data_inputs(graph, node)
    order = {n: i for i, n in enumerate(graph.order)}
    return tuple(sorted(found, key=lambda n: order.get(n, 0))), reshaped


def placeholder(graph: NodeIndex, name: str) -> OpSpec:
    """A ``Placeholder``'s dtype and shape (None for an unknown size; no shape at all when unknown rank)."""
    attrs = graph.attrs(name)
    dtype = attrs["dtype"].uint(6) if "dtype" in attrs else 0
    shape: tuple[int | None, ...] | None = None
    if "shape" in attrs:
        proto = attrs["shape"].message(7, "shape")
        if not proto.flag(3):
            shape = tuple(s if s >= 0 else None for s in (d.int64(1) for d in proto.messages(2, "dim")))
    return OpSpec(name=name, op="Placeholder", dtype="float32" if dtype == DT_FLOAT else f"dtype {dtype}",
                  shape=shape)


def _scalar_float(graph: NodeIndex, name: str) -> float | None:
    """The value of a float32 scalar ``Const`` node, else None."""
    if name not in graph.nodes or graph.op(name) != "Const":
        return None
    attrs = graph.attrs(name)
    if "value" not in attrs:
        return None
    tensor = attrs["value"].message(8, "tensor")
    if tensor.uint(1) != DT_FLOAT or tensor.message(2, "tensor_shape").messages(2, "dim"):
        return None
    content = tensor.blob(4)
    if len(content) == 4:
        return struct.unpack("<f", content)[0]
    values = tensor.repeated_floats(5)
    return values[0] if len(values) == 1 else None


def unfused_batch_norms(graph: NodeIndex) -> list[OpSpec]:
    """``tf.nn.batch_normalization`` and unfused ``tf.layers`` batch norms: ``Rsqrt(variance + eps)``.

    TF writes the epsilon as a scalar Const added to the moving variance; that Const is the evidence.
    """
    found = []
    for name in graph.order:
        if graph.op(name) != "Rsqrt":
            continue
        inputs = data_inputs(graph, name)
        add = inputs[0] if inputs else ""
        if add not in graph.nodes or graph.op(add) not in ("Add", "AddV2"):
            continue
        operands = data_inputs(graph, add)
        variables = [v for v in (graph.variable_of(o) for o in operands) if v is not None]
        eps = [e for e in (_scalar_float(graph, o) for o in operands) if e is not None]
        if len(operands) == 2 and len(variables) == 1 and len(eps) == 1:
            found.append(OpSpec(name=add, op="BatchNormalization", epsilon=eps[0], variables=tuple(variables)))
    return found


def flow_fields(graph: NodeIndex, name: str) -> dict:
    """Extra OpSpec fields of a pool (what feeds it) or a MatMul (what feeds it, and whether that is a
    Flatten of a 4-D op's NHWC output)."""
    feeding, reshaped = producers(graph, name, _WINDOW | {"MatMul", "Placeholder"})
    fields: dict = {"upstream": feeding}
    if graph.op(name) == "MatMul":
        attrs = graph.attrs(name)
        if "transpose_a" in attrs and attrs["transpose_a"].flag(5):
            return fields
        sources = [f for f in feeding if graph.op(f) in _WINDOW or _image_placeholder(graph, f)]
        if reshaped and len(sources) == 1 and _nhwc(graph, sources[0]):
            fields["flatten_of"] = sources[0]
    return fields


def _image_placeholder(graph: NodeIndex, name: str) -> bool:
    shape = placeholder(graph, name).shape if graph.op(name) == "Placeholder" else None
    return shape is not None and len(shape) in (4, 5)


def _nhwc(graph: NodeIndex, name: str) -> bool:
    """A flatten of this op's output reads (H, W, C) order: NHWC / NDHWC data format (the default)."""
    attrs = graph.attrs(name)
    return "data_format" not in attrs or attrs["data_format"].string(2) in ("NHWC", "NDHWC")
