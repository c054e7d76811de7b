"""Elementwise TFLite operators: arithmetic with broadcasting and fused activations, activations,
softmaxes, unary math, and DEQUANTIZE of float16 weights.

Arithmetic lowers to TF's ops (AddV2, Sub, Mul, RealDiv...), whose converter keeps a per-channel
constant as a bias or a scale (a batch norm TFLite folded into a MUL and an ADD) and two tensors as the
Keras op layer; the fused activation follows as its own layer.
"""

from __future__ import annotations

import dataclasses

from .. import dtypes
from ..tfgraph.base import Const, Tensor, Value
from .base import LiteCtx, lite_op
from .quant import HINT, dequantized

_BINARY = {"ADD": "AddV2", "SUB": "Sub", "MUL": "Mul", "DIV": "RealDiv", "MAXIMUM": "Maximum", "MINIMUM": "Minimum",
           "SQUARED_DIFFERENCE": "SquaredDifference", "POW": "Pow"}
_UNARY = {"LOGISTIC": "Sigmoid", "TANH": "Tanh", "RELU": "Relu", "RELU6": "Relu6", "EXP": "Exp", "SQRT": "Sqrt",
          "RSQRT": "Rsqrt", "ABS": "Abs", "NEG": "Neg", "SQUARE": "Square", "LOG": "Log", "ELU": "Elu"}
# Activations with no TF op of their own in a graph: a Keras activation computes each exactly
# (HARD_SWISH: x * relu6(x + 3) / 6, as torch's Hardswish; RELU_N1_TO_1: clip to [-1, 1], Hardtanh).
_ACTIVATIONS = {"HARD_SWISH": "hard_swish", "RELU_N1_TO_1": "hard_tanh", "LOG_SOFTMAX": "log_softmax"}


@lite_op(*_BINARY)
def binary(ctx: LiteCtx) -> tuple[Value, ...]:
    a, b = ctx.value(0), ctx.value(1)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and len(a.shape) != len(b.shape):
        a, b = same_rank(ctx, a), same_rank(ctx, b)
    (y,) = ctx.tf(_BINARY[ctx.op], [a, b])
    return (ctx.activation(y) if isinstance(y, Tensor) else y,)


def same_rank(ctx: LiteCtx, x: Tensor) -> Tensor:
    """TFLite broadcasts operands of different ranks numpy-style: the lower one gains leading 1s (after
    its batch axis, which both operands keep first)."""
    rank = max(len(t.shape) for t in ctx.inputs[:2] if isinstance(t, Tensor))
    if len(x.shape) == rank:
        return x
    shape = (x.shape[0], *(1,) * (rank - len(x.shape)), *x.shape[1:])
    return ctx.layer("Reshape", {"target_shape": list(shape[1:])}, [x], shape, name=f"{ctx.name}/broadcast")


@lite_op(*_UNARY)
def unary(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf(_UNARY[ctx.op], [ctx.value(0)])


@lite_op(*_ACTIVATIONS)
def activation(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    return (ctx.layer("Activation", {"activation": _ACTIVATIONS[ctx.op]}, [x], x.shape),)


@lite_op("LEAKY_RELU")
def leaky_relu(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf("LeakyRelu", [ctx.tensor(0)], {"alpha": ctx.option("alpha", 0.2)})


@lite_op("GELU")
def gelu(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    if ctx.option("approximate", False):  # the tanh form: keras.ops.gelu(approximate=True), torch's "tanh"
        return (ctx.layer("keras.src.ops.nn>Gelu", {"approximate": True}, [x], x.shape),)
    return ctx.tf("Gelu", [x])


@lite_op("SOFTMAX")
def softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    beta = ctx.option("beta", 1.0)
    if beta != 1.0:
        raise ctx.unsupported(f"a softmax with beta {beta} (softmax(beta * x))")
    return ctx.tf("Softmax", [ctx.tensor(0)])


@lite_op("DEQUANTIZE")
def dequantize(ctx: LiteCtx) -> tuple[Value, ...]:
    value = ctx.value(0)
    if isinstance(value, Tensor):
        if ctx.dequantize:  # --dequantize: the activation already holds its real value
            return (value,)
        raise ctx.unsupported("dequantizing an integer activation (a full-integer quantized model)", HINT)
    if not isinstance(value, Const):
        raise ctx.unsupported("dequantizing something that is neither a constant nor an activation")
    var = value.var
    if var.dtype.name == "float32":  # --dequantize made the integer constant float already
        return (value,)
    if var.dtype.name != "float16":
        # int8 weights that TF's converter dequantizes for an operator without a hybrid kernel: the
        # float32 values LiteRT's DEQUANTIZE computes, under the file's own name
        t = ctx.input_tensor(0)
        if not t.quantization.quantized:
            raise ctx.unsupported(f"dequantizing a {var.dtype.name} constant without quantization parameters")
        return (Const(dequantized(ctx.where(), t, var), weight=value.weight),)
    # float16 weights: LiteRT computes with their exact float32 values, so the parameter is that float32.
    f32 = dataclasses.replace(var, dtype=dtypes.BY_NAME["float32"], nbytes=var.nbytes * 2,
                              loader=lambda: var.read().astype("<f4"))
    return (Const(f32, weight=value.weight),)


@lite_op("QUANTIZE")
def quantize(ctx: LiteCtx) -> tuple[Value, ...]:
    """float -> int8 at a full-integer model's input, or int8 -> int8 requantization: with --dequantize
    the values stay real, so both are identities (the rounding they stand for is what --dequantize drops)."""
    if not ctx.dequantize:
        raise ctx.unsupported("quantizing activations (a full-integer quantized model)", HINT)
    return (ctx.tensor(0),)


@lite_op("PRELU")
def prelu(ctx: LiteCtx) -> tuple[Value, ...]:
    """max(x, 0) + alpha * min(x, 0) with a constant ``alpha`` broadcast against x's trailing axes (Keras's
    PReLU weight without its batch axis, ones on its shared axes): Keras's PReLU layer."""
    x, alpha = ctx.tensor(0), ctx.const(1, "alpha")
    rank = len(x.shape) - 1  # the weight has no batch axis
    if len(alpha.shape) > rank:
        raise ctx.unsupported(f"alpha of shape {list(alpha.shape)} for an input of shape {list(x.shape)}")
    alpha = ctx.reshaped(alpha, (1,) * (rank - len(alpha.shape)) + tuple(alpha.shape))
    shared = [i + 1 for i, s in enumerate(alpha.shape) if s == 1 and x.shape[i + 1] != 1]
    return (ctx.layer("PReLU", {"shared_axes": shared or None}, [x], x.shape, weights=[("alpha", alpha)]),)
