"""TF 1's all-uint8 models (``tf.compat.v1.lite.TFLiteConverter`` with ``inference_type=tf.uint8``): uint8
weights with a zero point and one scale per tensor, uint8 activations, int32 biases. Each operator becomes a
``tf2torch>LiteUint8*`` layer (``layers/lite_uint8.py``) running LiteRT's uint8 kernel
(``runtime/lite_uint8.py``).

CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED have their own parameters (the weight zero point, one
multiplier). ADD, SUB, MUL (a uint8 constant operand too), MEAN, the pools, SOFTMAX and LOGISTIC / TANH reuse the int8 layers' parameters
(``tflite/quant_math.py``) written for q - 128: every zero point and clamp bound lowered by 128, which is
the same arithmetic (``runtime/lite_uint8.py``). RESHAPE, CONCATENATION and the other value movers keep their
float converters (``tflite/ops_int.py``'s ``MOVES``); standalone activations and TANH are
``tflite/ops_uint8_act.py``'s, MAXIMUM / MINIMUM, PAD, HARD_SWISH, LEAKY_RELU and the reductions
``tflite/ops_uint8_more.py``'s; anything else on uint8 is refused by name (``tflite/lower.py``).
"""

from __future__ import annotations

import numpy as np

from ..map import layouts
from ..tfgraph.base import Const, Tensor, Value
from .base import LiteCtx, int_op
from .ops_int import fc_operands, int32_bias, window_config, window_output_shape
from .ops_math import same_rank
from .ops_uint8 import uint8_params
from .quant_math import (
    activation_range,
    add_params,
    lut,
    mean_hw_params,
    mean_params,
    quantize_multiplier,
    softmax_table,
)

UINT8 = "tf2torch>LiteUint8"


def _io(ctx: LiteCtx) -> tuple[tuple[float, int], tuple[float, int]]:
    return uint8_params(ctx, ctx.operator.inputs[0]), uint8_params(ctx, ctx.operator.outputs[0])


def _shifted_range(ctx: LiteCtx, out: tuple[float, int]) -> dict:
    """The fused activation's clamp for q - 128 (``CalculateActivationRangeQuantized`` on uint8, lowered by
    128: the int8 rule with the zero point lowered by 128 gives exactly that)."""
    fused = ctx.option("fused_activation_function", "NONE")
    low, high = activation_range(fused, out[0], out[1] - 128)
    if low is None:
        raise ctx.unsupported(f"fused activation {fused} on uint8")
    return {"output_min": low, "output_max": high}


def uint8_range(ctx: LiteCtx, out: tuple[float, int]) -> dict:
    shifted = _shifted_range(ctx, out)
    return {k: v + 128 for k, v in shifted.items()}


def _weights(ctx: LiteCtx, s_in: float, s_out: float, channels: int) -> dict:
    """One scale and one zero point for the whole uint8 weight tensor (what TF 1's converter writes): the
    multiplier input scale * weight scale / output scale (double), the same for every channel."""
    w = ctx.tensors[ctx.operator.inputs[1]]
    scale, zero = uint8_params(ctx, ctx.operator.inputs[1])
    if len(w.quantization.zero_points) > 1:
        raise ctx.unsupported(f"uint8 weights {w.name!r} with {len(w.quantization.zero_points)} zero points")
    multiplier, shift = quantize_multiplier(s_in * scale / s_out)
    return {"multiplier": [multiplier] * channels, "shift": [shift] * channels, "weight_zero_point": zero}


@int_op("CONV_2D", "DEPTHWISE_CONV_2D", dtype="uint8")
def conv(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(0), ctx.const(1, "filter")
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    if len(kernel.shape) != 4 or kernel.var.dtype.name != "uint8":
        raise ctx.unsupported(f"a {kernel.var.dtype.name} filter of shape {list(kernel.shape)} on uint8")
    if ctx.option("atrous_pad"):
        raise ctx.unsupported("a dilated uint8 convolution inside a space-to-batch")
    depthwise = ctx.op == "DEPTHWISE_CONV_2D"
    channels = x.shape[-1]
    if depthwise:
        if channels is None or kernel.shape[0] != 1 or kernel.shape[3] % channels:
            raise ctx.unsupported(f"a depthwise filter of shape {list(kernel.shape)} on {channels} channels")
        kernel = ctx.relayout(kernel, layouts.tflite_depthwise(channels))
        out_c, extra = kernel.shape[2] * kernel.shape[3], {"depth_multiplier": kernel.shape[3]}
    else:
        kernel = ctx.relayout(kernel, layouts.get("tflite_conv2d"))
        if channels != kernel.shape[2]:
            raise ctx.unsupported(f"a grouped convolution ({kernel.shape[2]} of {channels} channels per group)")
        out_c, extra = kernel.shape[3], {"filters": kernel.shape[3]}
    window = window_config(ctx, kernel.shape[0], kernel.shape[1], dilated=True)
    config = {**window, **extra, **uint8_range(ctx, (s_out, z_out)), **_weights(ctx, s_in, s_out, out_c),
              "input_zero_point": z_in, "output_zero_point": z_out, "depthwise": depthwise}
    weights = [("kernel", kernel), *int32_bias(ctx, 2)]
    shape = window_output_shape(x.shape, window, out_c)
    return (ctx.layer(UINT8 + "Conv2D", config, [x], shape, weights=weights, name=ctx.name),)


@int_op("FULLY_CONNECTED", dtype="uint8")
def fully_connected(ctx: LiteCtx) -> tuple[Value, ...]:
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    x, kernel, units = fc_operands(ctx, "uint8", weights="uint8")
    config = {"units": units, **uint8_range(ctx, (s_out, z_out)), **_weights(ctx, s_in, s_out, 1),
              "input_zero_point": z_in, "output_zero_point": z_out}
    weights = [("kernel", kernel), *int32_bias(ctx, 2)]
    return (ctx.layer(UINT8 + "Dense", config, [x], (*x.shape[:-1], units), weights=weights, name=ctx.name),)


@int_op("ADD", "SUB", "MUL", dtype="uint8")
def binary(ctx: LiteCtx) -> tuple[Value, ...]:
    a, b = ctx.value(0), ctx.value(1)
    (s1, z1), (s2, z2) = uint8_params(ctx, ctx.operator.inputs[0]), uint8_params(ctx, ctx.operator.inputs[1])
    if isinstance(a, Const) and isinstance(b, Tensor) and ctx.op != "SUB":  # commutative: the tensor first
        a, b, (s1, z1), (s2, z2) = b, a, (s2, z2), (s1, z1)
    constant = _uint8_constant(ctx, b, a) if isinstance(b, Const) and isinstance(a, Tensor) else None
    if constant is None and not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise ctx.unsupported("uint8 operands other than two tensors or a tensor and a uint8 constant")
    s_out, z_out = uint8_params(ctx, ctx.operator.outputs[0])
    config = {**_shifted_range(ctx, (s_out, z_out)), "zero_points": [z1 - 128, z2 - 128],
              "output_zero_point": z_out - 128}
    if ctx.op == "MUL":
        config["multiplier"], config["shift"] = quantize_multiplier(s1 * s2 / s_out)
    else:
        config.update(params=[list(p) for p in add_params(s1, s2, s_out)], sign=-1 if ctx.op == "SUB" else 1)
    kind = UINT8 + ("Mul" if ctx.op == "MUL" else "Add")
    if constant is not None and constant.shape == ():  # one uint8 number: the int8 layer's scalar, as q - 128
        config["scalar"] = int(np.asarray(constant.array()).reshape(-1)[0]) - 128
        return (ctx.layer(kind, config, [a], a.shape, name=ctx.name),)
    if constant is not None:  # one uint8 value per channel: the layer's uint8 weight (the module subtracts 128)
        return (ctx.layer(kind, config, [a], a.shape, weights=[("constant", constant)], name=ctx.name),)
    assert isinstance(a, Tensor) and isinstance(b, Tensor)
    if len(a.shape) != len(b.shape):
        a, b = same_rank(ctx, a), same_rank(ctx, b)
    shape = tuple(p if q in (1, None) else q for p, q in zip(a.shape, b.shape))  # broadcast, as the int8 ADD
    shape = tuple(q if p == 1 else p for p, q in zip(shape, b.shape))
    return (ctx.layer(kind, config, [a, b], shape, name=ctx.name),)


def _uint8_constant(ctx: LiteCtx, c: Const, x: Tensor) -> Const:
    """A uint8 constant operand: one number (shape ()) or one value per channel (C,); anything else refused."""
    channels = x.shape[-1]
    if c.var.dtype.name == "uint8" and int(np.prod(c.shape)) == 1:
        return ctx.reshaped(c, ())
    if c.var.dtype.name != "uint8" or any(d != 1 for d in c.shape[:-1]) or not c.shape or c.shape[-1] != channels:
        raise ctx.unsupported(f"a {c.var.dtype.name} constant operand of shape {list(c.shape)} for "
                              f"{channels} channels (one uint8 value per channel is emulated)")
    return ctx.reshaped(c, (channels,))


@int_op("MEAN", dtype="uint8")
def mean(ctx: LiteCtx) -> tuple[Value, ...]:
    x, axes = ctx.tensor(0), ctx.const(1, "axes")
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    rank = len(x.shape)
    dims = sorted({int(a) % rank for a in np.asarray(axes.array()).reshape(-1)})
    keep = bool(ctx.option("keep_dims", False))
    if 0 in dims or any(x.shape[d] is None for d in dims):
        raise ctx.unsupported(f"a uint8 mean over axes {dims} of shape {list(x.shape)} (keep_dims {keep})")
    count = int(np.prod([x.shape[d] for d in dims]))
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape) if keep or i not in dims)
    config = {"axes": dims, "keepdims": keep, "input_zero_point": z_in - 128, "output_zero_point": z_out - 128}
    if keep and rank == 4 and dims == [1, 2]:
        # the builtin kernel's own 4-D path (optimized_ops::Mean, "Mean4D/Uint8"): the int8 path's formula on
        # the raw uint8 sum, so its bias folds in the file's zero points, not lowered ones (runtime/lite_uint8.py)
        config["multiplier"], config["shift"], config["bias"] = mean_hw_params(s_in, z_in, s_out, z_out, count)
    else:
        config["multiplier"], config["shift"] = mean_params(s_in, s_out, count)
    return (ctx.layer(UINT8 + "Mean", config, [x], shape, name=ctx.name),)


@int_op("AVERAGE_POOL_2D", "MAX_POOL_2D", dtype="uint8")
def pool(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported("a uint8 pool whose output is quantized unlike its input")
    window = window_config(ctx, ctx.option("filter_height", 1), ctx.option("filter_width", 1), dilated=False)
    average = ctx.op == "AVERAGE_POOL_2D"  # the average pool's module takes uint8 as it is (runtime/lite_uint8.py)
    clamp = uint8_range(ctx, (s_out, z_out)) if average else _shifted_range(ctx, (s_out, z_out))
    config = {**window, **clamp, "max": not average}
    return (ctx.layer(UINT8 + "Pool2D", config, [x], window_output_shape(x.shape, window, x.shape[-1]), name=ctx.name),)


@int_op("SOFTMAX", dtype="uint8")
def softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, _), (s_out, z_out) = _io(ctx)
    config = {"table": softmax_table(s_in, float(ctx.option("beta", 1.0))), "output_scale": s_out,
              "output_zero_point": z_out - 128}
    return (ctx.layer(UINT8 + "Softmax", config, [x], x.shape, name=ctx.name),)


@int_op("LOGISTIC", "TANH", dtype="uint8")
def logistic(ctx: LiteCtx) -> tuple[Value, ...]:
    """LiteRT's uint8 LOGISTIC / TANH: the builtin kernel's lookup table, on q - 128."""
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    return (ctx.layer(UINT8 + "LUT", {"table": lut(ctx.op, s_in, z_in - 128, s_out, z_out - 128)}, [x], x.shape,
                      name=ctx.name),)
