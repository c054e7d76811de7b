"""16x8 operators (int16 activations, symmetric: zero point 0; int8 weights; int64 biases): each becomes a
``tf2torch>LiteInt16*`` layer (``layers/lite_int16.py``) running LiteRT's int16 kernel (``runtime/lite_int16.py``)
with the parameters LiteRT's ``Prepare`` computes (``tflite/quant_math.py``, ``quant_math16.py``).

PAD / PADV2 take the int8 converter (padding with the zero point moves values, whatever their width);
RESHAPE, CONCATENATION... take their float converters when their tensors share one scale (``tflite/lower.py``).
The activations and the ends are ``tflite/ops_int16_act.py``'s. Anything else on int16 is refused by name.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Const, Tensor, Value
from .base import LiteCtx, int_op
from .ops_int import (  # the int8 path's window and multiplier rules
    channel_multipliers,
    conv_kernel,
    conv_layer,
    fc_operands,
    pad,
    window_config,
    window_output_shape,
)
from .ops_math import same_rank
from .quant_math import mean_params, quantize_multiplier
from .quant_math16 import activation_range16, add16_params

INT16 = "tf2torch>LiteInt16"

int_op("PAD", "PADV2", dtype="int16")(pad)


def scale16(ctx: LiteCtx, t_index: int) -> float:
    """The scale of a per-tensor int16 tensor, whose zero point LiteRT requires to be 0."""
    t = ctx.tensors[t_index]
    q = t.quantization
    if len(q.scales) != 1 or any(q.zero_points):
        raise ctx.unsupported(f"int16 tensor {t.name!r} with {len(q.scales)} scales and zero points "
                              f"{list(q.zero_points)[:3]} (16x8 tensors have one scale, zero point 0)")
    scale = float(q.scales[0])
    if not 0 < scale < float("inf"):
        raise ctx.unsupported(f"int16 tensor {t.name!r} has scale {scale!r}; the file is corrupt")
    return scale


def range16(ctx: LiteCtx, scale: float) -> dict:
    fused = ctx.option("fused_activation_function", "NONE")
    low, high = activation_range16(fused, scale)
    if low is None:
        raise ctx.unsupported(f"fused activation {fused} on int16")
    return {"output_min": low, "output_max": high}


def _bias64(ctx: LiteCtx) -> list[tuple[str, Const]]:
    bias = ctx.optional(2)
    if bias is None or bias.var.dtype.name != "int64":  # LiteRT's reference kernel runs only with an int64 bias
        found = "no bias" if bias is None else f"a {bias.var.dtype.name} bias"
        raise ctx.unsupported(f"an int16 {ctx.op} with {found}: LiteRT runs its optimized 16x8 kernel then, "
                              "which is not emulated (TF's converter writes int64 biases)")
    return [("bias", bias)]


@int_op("CONV_2D", "DEPTHWISE_CONV_2D", dtype="int16")
def conv(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(0), ctx.const(1, "filter")
    s_in, s_out = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    kernel, out_c, extra = conv_kernel(ctx, x, kernel)
    window = window_config(ctx, kernel.shape[0], kernel.shape[1], dilated=True)
    config = {**window, **extra, **range16(ctx, s_out), **channel_multipliers(ctx, s_in, s_out, 1),
              "depthwise": ctx.op == "DEPTHWISE_CONV_2D"}
    # a dilated conv's space-to-batch paddings are zeros: int16's zero point
    return conv_layer(ctx, INT16 + "Conv2D", x, window, config, [("kernel", kernel), *_bias64(ctx)], out_c)


@int_op("FULLY_CONNECTED", dtype="int16")
def fully_connected(ctx: LiteCtx) -> tuple[Value, ...]:
    s_in, s_out = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    x, kernel, units = fc_operands(ctx, "int16")
    config = {"units": units, **range16(ctx, s_out), **channel_multipliers(ctx, s_in, s_out, 1)}
    weights = [("kernel", kernel), *_bias64(ctx)]
    return (ctx.layer(INT16 + "Dense", config, [x], (*x.shape[:-1], units), weights=weights, name=ctx.name),)


@int_op("ADD", "SUB", "MUL", dtype="int16")
def binary(ctx: LiteCtx) -> tuple[Value, ...]:
    a, b = ctx.value(0), ctx.value(1)
    s1, s2 = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.inputs[1])
    s_out = scale16(ctx, ctx.operator.outputs[0])
    if ctx.op != "MUL" and ctx.option("pot_scale_int16", False):  # no options at all: the general path
        raise ctx.unsupported(f"an int16 {ctx.op} with pot_scale_int16 (LiteRT's power-of-two-scale kernel is "
                              "not emulated; TF's converter writes the general one)")
    if isinstance(a, Const) and isinstance(b, Tensor) and ctx.op != "SUB":  # commutative: the tensor first
        a, b, s1, s2 = b, a, s2, s1
    if not isinstance(a, Tensor):
        raise ctx.unsupported("int16 operands that are not a tensor and a tensor or constant")
    config = range16(ctx, s_out)
    if ctx.op == "MUL":
        config["multiplier"], config["shift"] = quantize_multiplier(s1 * s2 / s_out)
    else:
        config.update(params=[list(p) for p in add16_params(s1, s2, s_out)], sign=-1 if ctx.op == "SUB" else 1)
    kind = "Mul" if ctx.op == "MUL" else "Add"
    if isinstance(b, Const):  # x op c: one int16 number, or one per channel (a folded batch norm)
        c = b
        if c.var.dtype.name != "int16" or (int(np.prod(c.shape)) != 1 and (
                any(d != 1 for d in c.shape[:-1]) or not c.shape or c.shape[-1] != a.shape[-1])):
            raise ctx.unsupported(f"a {c.var.dtype.name} constant operand of shape {list(c.shape)} "
                                  f"(one int16 value, or one per channel, is emulated)")
        c = ctx.reshaped(c, (1,) if int(np.prod(c.shape)) == 1 else (c.shape[-1],))
        return (ctx.layer(INT16 + kind, config, [a], a.shape, weights=[("constant", c)], name=ctx.name),)
    if not isinstance(b, Tensor):
        raise ctx.unsupported("an int16 operand that is neither a tensor nor a constant")
    if len(a.shape) != len(b.shape):
        a, b = same_rank(ctx, a), same_rank(ctx, b)
    shape = tuple(p if q in (1, None) else q for p, q in zip(a.shape, b.shape))
    shape = tuple(q if p == 1 else p for p, q in zip(shape, b.shape))
    return (ctx.layer(INT16 + kind, config, [a, b], shape, name=ctx.name),)


@int_op("MEAN", dtype="int16")
def mean(ctx: LiteCtx) -> tuple[Value, ...]:
    x, axes = ctx.tensor(0), ctx.const(1, "axes")
    s_in, s_out = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    rank = len(x.shape)
    dims = sorted({int(v) % rank for v in np.asarray(axes.array()).reshape(-1)})
    if 0 in dims or any(x.shape[d] is None for d in dims):
        raise ctx.unsupported(f"a mean over axes {dims} of shape {list(x.shape)}")
    count = int(np.prod([x.shape[d] for d in dims]))
    keep = bool(ctx.option("keep_dims", False))
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape) if keep or i not in dims)
    multiplier, shift = mean_params(s_in, s_out, count)  # the reference QuantizedMeanOrSum, as int16 takes
    config = {"axes": dims, "keepdims": keep, "multiplier": multiplier, "shift": shift}
    return (ctx.layer(INT16 + "Mean", config, [x], shape, name=ctx.name),)


@int_op("AVERAGE_POOL_2D", "MAX_POOL_2D", dtype="int16")
def pool(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    s_in, s_out = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    if s_in != s_out:
        raise ctx.unsupported("an int16 pool whose output is quantized unlike its input")
    window = window_config(ctx, ctx.option("filter_height", 1), ctx.option("filter_width", 1), dilated=False)
    config = {**window, **range16(ctx, s_out), "max": ctx.op == "MAX_POOL_2D"}
    return (ctx.layer(INT16 + "Pool2D", config, [x], window_output_shape(x.shape, window, x.shape[-1]), name=ctx.name),)
