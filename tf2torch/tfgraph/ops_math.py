"""Elementwise TF ops: activations and arithmetic.

Activations become Keras activation layers. Arithmetic on two run-time tensors of one rank, or on a
tensor and a scalar constant, becomes the Keras op layer that ``x + y`` in a functional model saves as
(``keras.src.ops.numpy>Add``...), whose converter is layout-safe. A per-channel constant added to a
conv or MatMul output it alone reads is that layer's bias. Anything else (a constant tensor broadcast
against an image) is refused with the op's name rather than guessed at.
"""

from __future__ import annotations

import math

import numpy as np

from ..readers.keras_calls import ARGS_KWARG
from .base import Const, NodeCtx, Tensor, TFShape, Value, f32, tf_op

NUMPY = "keras.src.ops.numpy>"
_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Elu": "elu", "Selu": "selu", "Softplus": "softplus",
                "Softsign": "softsign"}
_BINARY = {"Add": "Add", "AddV2": "Add", "Sub": "Subtract", "Mul": "Multiply", "RealDiv": "TrueDivide",
           "Maximum": "Maximum", "Minimum": "Minimum", "Pow": "Power", "SquaredDifference": ""}
_FOLD = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
         "Maximum": np.maximum, "Minimum": np.minimum, "Pow": np.power,
         "SquaredDifference": lambda a, b: np.square(a - b)}
_EXPR = {"Add": "add", "AddV2": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div", "Maximum": "max",
         "Minimum": "min", "Pow": "pow", "SquaredDifference": "squared_difference"}
TF = "tf2torch>"
_UNARY = {"Neg": "Negative", "Abs": "Absolute", "Exp": "Exp", "Sqrt": "Sqrt", "Square": "Square"}
_UNARY_FOLD = {"Neg": np.negative, "Abs": np.abs, "Exp": np.exp, "Sqrt": np.sqrt, "Square": np.square,
               "Rsqrt": lambda a: (1 / np.sqrt(a)).astype(a.dtype), "Log": np.log,
               "Reciprocal": lambda a: (1 / a).astype(a.dtype),
               "Erf": lambda a: np.vectorize(math.erf, otypes=[a.dtype])(a),
               "Erfc": lambda a: np.vectorize(math.erfc, otypes=[a.dtype])(a)}
_TF_UNARY = {"Rsqrt": "rsqrt", "Erf": "erf", "Erfc": "erfc", "Log": "log", "Reciprocal": "reciprocal"}


@tf_op("Relu", "Relu6", *_ACTIVATIONS)
def activation(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    if ctx.op == "Relu":
        return (ctx.layer("ReLU", {}, [x], x.shape),)
    if ctx.op == "Relu6":
        return (ctx.layer("ReLU", {"max_value": 6.0}, [x], x.shape),)
    return (ctx.layer("Activation", {"activation": _ACTIVATIONS[ctx.op]}, [x], x.shape),)


@tf_op("LeakyRelu")
def leaky_relu(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    alpha = ctx.attr("alpha")
    if alpha is None:  # stripped default attr: LeakyRelu's registered default
        alpha = 0.2
    return (ctx.layer("LeakyReLU", {"negative_slope": f32(alpha)}, [x], x.shape),)


@tf_op("Gelu")
def gelu(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    if ctx.attr("approximate", False):
        raise ctx.unsupported("the tanh approximation of GELU")
    return (ctx.layer("Activation", {"activation": "gelu"}, [x], x.shape),)


@tf_op(*_UNARY_FOLD)
def unary(ctx: NodeCtx) -> tuple[Value, ...]:
    value = ctx.inputs[0]
    if isinstance(value, Const):
        return (ctx.derived(ctx.op.lower(), [value], _UNARY_FOLD[ctx.op]),)
    x = ctx.tensor(0)
    if ctx.op in _TF_UNARY:
        return (ctx.layer(TF + "Unary", {"fn": _TF_UNARY[ctx.op]}, [x], x.shape),)
    return (ctx.layer(NUMPY + _UNARY[ctx.op], {}, [x], x.shape),)


def _broadcast(ctx: NodeCtx, a: TFShape, b: TFShape) -> TFShape:
    if len(a) != len(b):
        raise ctx.unsupported(f"operands of different ranks ({len(a)} and {len(b)})",
                              "tf2torch converts arithmetic between tensors of one rank")
    out = []
    for x, y in zip(a, b):
        if x == 1 or x is None and y not in (1, None):
            out.append(y)
        else:
            out.append(x)
    return tuple(out)


def _scalar(value: Const) -> float | None:
    if value.shape and int(np.prod(value.shape)) != 1:
        return None
    array = value.array().reshape(-1)
    item = array[0].item()
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        return None
    return f32(item) if array.dtype == np.float32 else float(item)  # 1e-3, not 0.0010000000474974513


@tf_op(*_BINARY, arity=2)
def binary(ctx: NodeCtx) -> tuple[Value, ...]:
    a, b = ctx.inputs[0], ctx.inputs[1]
    if isinstance(a, Const) and isinstance(b, Const):
        return (ctx.derived(_EXPR[ctx.op], [a, b], _FOLD[ctx.op]),)
    cls = NUMPY + _BINARY[ctx.op]
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        ctx.tensor(0), ctx.tensor(1)  # (checks neither is a flattened tensordot operand)
        shape = _broadcast(ctx, a.shape, b.shape)
        if ctx.op == "SquaredDifference":
            return (ctx.layer(TF + "Binary", {"op": "squared_difference"}, [a, b], shape),)
        return (ctx.layer(cls, {}, [a, b], shape),)
    tensor, const = (a, b) if isinstance(a, Tensor) else (b, a)
    if not isinstance(tensor, Tensor) or not isinstance(const, Const):
        raise ctx.unsupported("operands that are neither tensors nor constants")
    if ctx.op in ("Add", "AddV2") and const.weight and ctx.fuse_bias(tensor, const):
        return (tensor,)  # tf.matmul(x, w) + b: the Dense's bias
    if ctx.op in ("Add", "AddV2"):
        done = ctx.complete_batch_norm(tensor, const)  # x * scale + shift of an unfused batch norm
        if done is not None:
            return (done,)
    tensor = ctx.tensor(0 if tensor is a else 1)
    number = _scalar(const)
    if number is None and ctx.op == "Mul" and len(const.shape) == 1 and const.shape[0] == tensor.shape[-1]:
        return (ctx.scale_layer(tensor, const),)  # completed into a batch norm by the add that follows
    while number is None and len(const.shape) >= len(tensor.shape) and const.shape and const.shape[0] == 1:
        const = ctx.reshaped(const, const.shape[1:])  # (1, 1, C): its leading 1 only broadcasts over the batch
    if number is None:
        if len(const.shape) >= len(tensor.shape):
            raise ctx.unsupported(f"a constant operand of shape {list(const.shape)} as large as the tensor "
                                  f"{list(tensor.shape)} (it would broadcast over the batch)")
        if const.expr:
            raise ctx.unsupported(f"a constant of shape {list(const.shape)} computed from weights (not a batch norm)")
        config = {"op": _EXPR[ctx.op], "shape": list(const.shape), "reverse": tensor is b}
        return (ctx.layer(TF + "ConstantOperand", config, [tensor], _broadcast_const(tensor.shape, const.shape),
                          weights=[("value", const)]),)
    if ctx.op == "SquaredDifference":
        raise ctx.unsupported("a squared difference with a scalar")
    args = [tensor.ref, number] if tensor is a else [number, tensor.ref]
    return (ctx.layer(cls, {}, [tensor], tensor.shape, kwargs={ARGS_KWARG: args}),)


def _broadcast_const(shape: TFShape, const: tuple[int, ...]) -> TFShape:
    padded = (1,) * (len(shape) - len(const)) + tuple(const)
    return tuple(s if c == 1 else c if s in (None, 1) else s for s, c in zip(shape, padded))


@tf_op("AddN")
def add_n(ctx: NodeCtx) -> tuple[Value, ...]:
    tensors = [ctx.tensor(i) for i in range(len(ctx.inputs))]
    if len(tensors) == 1:
        return (tensors[0],)
    shape = tensors[0].shape
    for t in tensors[1:]:
        if len(t.shape) != len(shape):
            raise ctx.unsupported("operands of different ranks")
    return (ctx.layer("Add", {}, tensors, shape),)
