"""Full-integer int8 operators: each becomes a ``tf2torch>LiteInt*`` layer (``layers/lite_int.py``) that
runs LiteRT's integer kernel (``runtime/lite_int.py``), with the fixed-point parameters LiteRT's
``Prepare`` computes, computed here the same way (``tflite/quant_math.py``).

Operators that only move values (RESHAPE, CONCATENATION, SHAPE arithmetic...) keep their float
converters when every integer tensor they touch has one scale and zero point (``MOVES``): an int8 tensor
is then moved, not changed. Anything else is refused by name, all at once (``tflite/lower.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..map import layouts
from ..tfgraph.base import Const, Tensor, Value
from ..tfgraph.ops_nn import out_size
from .base import LiteCtx, int_op
from .ops_math import same_rank
from .quant_math import (
    activation_range,
    add_params,
    mean_hw_params,
    mean_params,
    quantize_multiplier,
)

INT = "tf2torch>LiteInt"
# Value-moving operators converted by their float converters when their integer tensors share one
# (scale, zero point) (TFLite's int8 kernels for them require it, as do their op specs).
MOVES = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "CONCATENATION", "SHAPE", "STRIDED_SLICE",
                   "SLICE", "PACK", "UNPACK", "GATHER", "SPLIT", "SPLIT_V", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH"})


def qparams(ctx: LiteCtx, t_index: int) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor quantized tensor."""
    q = ctx.tensors[t_index].quantization
    if len(q.scales) != 1:
        raise ctx.unsupported(f"tensor {ctx.tensors[t_index].name!r} has {len(q.scales)} scales (expected one)")
    scale, zero = float(q.scales[0]), int(q.zero_points[0] if q.zero_points else 0)
    if not (0 < scale < float("inf")) or not -128 <= zero <= 127:
        raise ctx.unsupported(f"tensor {ctx.tensors[t_index].name!r} has scale {scale!r}, zero point {zero} "
                              "(an int8 tensor needs a positive finite scale, a zero point in [-128, 127]); "
                              "the file is corrupt")
    return scale, zero


def io_params(ctx: LiteCtx) -> tuple[tuple[float, int], tuple[float, int]]:
    return qparams(ctx, ctx.operator.inputs[0]), qparams(ctx, ctx.operator.outputs[0])


def fused_range(ctx: LiteCtx, out: tuple[float, int]) -> dict:
    """The operator's fused activation as the int8 clamp of its output (scale, zero point): the layer config's
    ``output_min`` / ``output_max``; an activation with no integer range is refused."""
    fused = ctx.option("fused_activation_function", "NONE")
    low, high = activation_range(fused, *out)
    if low is None:
        raise ctx.unsupported(f"fused activation {fused} on int8")
    return {"output_min": low, "output_max": high}


def window_config(ctx: LiteCtx, kh: int, kw: int, dilated: bool) -> dict:
    """A conv's or pool's window from its options, as the Keras-like config the integer layers read
    (``kernel_size``, ``strides``, ``padding``, ``dilation_rate``); shared by the int8 and int16 operators."""
    padding = ctx.option("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise ctx.unsupported(f"padding {padding}")
    dil = [ctx.option("dilation_h_factor", 1), ctx.option("dilation_w_factor", 1)] if dilated else [1, 1]
    return {"kernel_size": [kh, kw], "strides": [ctx.option("stride_h", 1), ctx.option("stride_w", 1)],
            "padding": padding.lower(), "dilation_rate": dil}


def window_output_shape(shape: tuple, window: dict, channels: int) -> tuple:
    """The NHWC output shape of ``window_config``'s window over ``shape``, with ``channels`` channels."""
    mode = window["padding"].upper()
    return (shape[0], *(out_size(s, k, st, d, mode) for s, k, st, d in
                        zip(shape[1:3], window["kernel_size"], window["strides"], window["dilation_rate"])), channels)


def channel_multipliers(ctx: LiteCtx, in_scale: float, out_scale: float, weight_index: int) -> dict:
    """Per output channel: input scale * weight scale / output scale (in double) as a fixed-point
    multiplier and shift (LiteRT's ``PopulateConvolutionQuantizationParams``)."""
    w = ctx.tensors[ctx.operator.inputs[weight_index]].quantization
    if any(z != 0 for z in w.zero_points):
        raise ctx.unsupported("int8 weights with a zero point")
    if not w.scales or not all(0 < s < float("inf") for s in w.scales):
        raise ctx.unsupported("int8 weights without positive finite scales; the file is corrupt")
    pairs = [quantize_multiplier(in_scale * float(s) / out_scale) for s in w.scales]
    return {"multiplier": [m for m, _ in pairs], "shift": [s for _, s in pairs]}


def int32_bias(ctx: LiteCtx, i: int) -> list[tuple[str, Const]]:
    """The operator's optional int32 bias (input ``i``) as a layer weight; another type is refused."""
    bias = ctx.optional(i)
    if bias is None:
        return []
    if bias.var.dtype.name != "int32":
        raise ctx.unsupported(f"a {bias.var.dtype.name} bias (expected int32)")
    return [("bias", bias)]


@int_op("CONV_2D", "DEPTHWISE_CONV_2D")
def conv(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(0), ctx.const(1, "filter")
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    kernel, out_c, extra = conv_kernel(ctx, x, kernel)
    window = window_config(ctx, kernel.shape[0], kernel.shape[1], dilated=True)
    config = {**window, **extra, **fused_range(ctx, (s_out, z_out)), **channel_multipliers(ctx, s_in, s_out, 1),
              "input_zero_point": z_in, "output_zero_point": z_out, "depthwise": ctx.op == "DEPTHWISE_CONV_2D"}
    # a dilated conv's space-to-batch paddings are the zero point's (tflite/atrous.py)
    return conv_layer(ctx, INT + "Conv2D", x, window, config, [("kernel", kernel), *int32_bias(ctx, 2)], out_c)


def conv_kernel(ctx: LiteCtx, x: Value, kernel: Value) -> tuple[Value, int, dict[str, Any]]:
    """An integer CONV_2D / DEPTHWISE_CONV_2D's int8 filter in Keras's layout, its output channels and the
    config entries that size it (shared by the int8 and int16 converters)."""
    if len(kernel.shape) != 4 or kernel.var.dtype.name != "int8":
        raise ctx.unsupported(f"a {kernel.var.dtype.name} filter of shape {list(kernel.shape)}")
    channels = x.shape[-1]
    if ctx.op == "DEPTHWISE_CONV_2D":
        if channels is None or kernel.shape[0] != 1 or kernel.shape[3] % channels:
            raise ctx.unsupported(f"a depthwise filter of shape {list(kernel.shape)} on {channels} channels")
        kernel = ctx.relayout(kernel, layouts.tflite_depthwise(channels))
        return kernel, kernel.shape[2] * kernel.shape[3], {"depth_multiplier": kernel.shape[3]}
    kernel = ctx.relayout(kernel, layouts.get("tflite_conv2d"))
    if channels != kernel.shape[2]:
        raise ctx.unsupported(f"a grouped convolution ({kernel.shape[2]} of {channels} channels per group)")
    return kernel, kernel.shape[3], {"filters": kernel.shape[3]}


def conv_layer(ctx: LiteCtx, layer: str, x: Value, window: dict[str, Any], config: dict[str, Any],
               weights: list[tuple[str, Value]], out_c: int) -> tuple[Value, ...]:
    """The integer conv ``layer`` on ``x``, with a dilated conv's space-to-batch paddings and crops put back
    (tflite/atrous.py): the paddings become the conv's explicit padding, the crops a Cropping2D."""
    pads, crops = ctx.option("atrous_pad"), ctx.option("atrous_crop")
    shape_in = x.shape
    if pads:
        if window["padding"] != "valid":
            raise ctx.unsupported("a dilated integer convolution with SAME padding inside its space-to-batch")
        config["explicit_padding"] = [list(p) for p in pads]
        shape_in = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:3], pads)),
                    x.shape[3])
    shape = window_output_shape(shape_in, window, out_c)
    y = ctx.layer(layer, config, [x], shape, weights=weights, name=ctx.name)
    if crops and any(a or b for a, b in crops):  # BATCH_TO_SPACE_ND's crops: slicing moves integers as they are
        shape = (y.shape[0], *(None if s is None else s - a - b for s, (a, b) in zip(y.shape[1:3], crops)), y.shape[3])
        y = ctx.layer("Cropping2D", {"cropping": crops, "data_format": "channels_last"}, [y], shape,
                      name=f"{ctx.name}/crop")
    return (y,)


def fc_operands(ctx: LiteCtx, kind: str, weights: str = "int8") -> tuple[Value, Value, int]:
    """An integer FULLY_CONNECTED's input as rows (a Flatten for a wider input), its ``weights``-typed kernel in
    Keras's layout and its units (shared by the int8, int16 and uint8 converters; ``kind`` names the input)."""
    x, kernel = ctx.tensor(0), ctx.const(1, "weights")
    if len(kernel.shape) != 2 or kernel.var.dtype.name != weights or ctx.option("weights_format", 0) != 0:
        raise ctx.unsupported(f"{kernel.var.dtype.name} weights of shape {list(kernel.shape)}")
    units, width = kernel.shape
    if len(x.shape) > 2:
        if ctx.option("keep_num_dims", False) or any(s is None for s in x.shape[1:]) or \
                int(np.prod(x.shape[1:])) != width:
            raise ctx.unsupported(f"an {kind} input of shape {list(x.shape)} (expected rows of {width})")
        x = ctx.layer("Flatten", {"data_format": "channels_last"}, [x], (x.shape[0], width), name=f"{ctx.name}/flatten")
    return x, ctx.relayout(kernel, layouts.get("tflite_fully_connected")), units


@int_op("FULLY_CONNECTED")
def fully_connected(ctx: LiteCtx) -> tuple[Value, ...]:
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    x, kernel, units = fc_operands(ctx, "int8")
    config = {"units": units, **fused_range(ctx, (s_out, z_out)), **channel_multipliers(ctx, s_in, s_out, 1),
              "input_zero_point": z_in, "output_zero_point": z_out}
    weights = [("kernel", kernel), *int32_bias(ctx, 2)]
    return (ctx.layer(INT + "Dense", config, [x], (*x.shape[:-1], units), weights=weights, name=ctx.name),)


@int_op("ADD", "SUB", "MUL")
def binary(ctx: LiteCtx) -> tuple[Value, ...]:
    a, b = ctx.value(0), ctx.value(1)
    (s1, z1), (s2, z2) = qparams(ctx, ctx.operator.inputs[0]), qparams(ctx, ctx.operator.inputs[1])
    constant = None
    if isinstance(a, Const) and isinstance(b, Tensor) and ctx.op != "SUB":  # commutative: the tensor first
        a, b, (s1, z1), (s2, z2) = b, a, (s2, z2), (s1, z1)
    if isinstance(b, Const) and isinstance(a, Tensor):
        constant = _channel_constant(ctx, b, a)
    elif not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise ctx.unsupported("int8 operands that are not two tensors, or a tensor and a per-channel constant")
    elif len(a.shape) != len(b.shape):
        a, b = same_rank(ctx, a), same_rank(ctx, b)
    s_out, z_out = qparams(ctx, ctx.operator.outputs[0])
    config = {**fused_range(ctx, (s_out, z_out)), "zero_points": [z1, z2], "output_zero_point": z_out}
    if ctx.op == "MUL":
        config["multiplier"], config["shift"] = quantize_multiplier(s1 * s2 / s_out)
    else:
        config.update(params=[list(p) for p in add_params(s1, s2, s_out)], sign=-1 if ctx.op == "SUB" else 1)
    kind = "Mul" if ctx.op == "MUL" else "Add"
    if constant is not None and constant.shape == ():  # x op c, c one int8 number (hard sigmoid's 1/6, +3)
        config["scalar"] = int(np.asarray(constant.array()).reshape(-1)[0])
        return (ctx.layer(INT + kind, config, [a], a.shape, name=ctx.name),)
    if constant is not None:  # x op c: c is the layer's int8 weight, one value per channel
        return (ctx.layer(INT + kind, config, [a], a.shape, weights=[("constant", constant)], name=ctx.name),)
    assert isinstance(a, Tensor) and isinstance(b, Tensor)
    shape = tuple(p if q in (1, None) else q for p, q in zip(a.shape, b.shape))
    shape = tuple(q if p == 1 else p for p, q in zip(shape, b.shape))
    return (ctx.layer(INT + kind, config, [a, b], shape, name=ctx.name),)


def _channel_constant(ctx: LiteCtx, c: Const, x: Tensor) -> Const:
    """An int8 constant operand holding one value per channel (a folded batch norm's scale or shift), as
    a (C,) vector, or one value for all (shape ()); anything else is refused."""
    channels = x.shape[-1]
    if c.var.dtype.name == "int8" and int(np.prod(c.shape)) == 1:
        return ctx.reshaped(c, ())
    if c.var.dtype.name != "int8" or any(d != 1 for d in c.shape[:-1]) or not c.shape or c.shape[-1] != channels:
        raise ctx.unsupported(f"a {c.var.dtype.name} constant operand of shape {list(c.shape)} for "
                              f"{channels} channels (one int8 value per channel is emulated)")
    return ctx.reshaped(c, (channels,))


@int_op("MEAN")
def mean(ctx: LiteCtx) -> tuple[Value, ...]:
    x, axes = ctx.tensor(0), ctx.const(1, "axes")
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    rank = len(x.shape)
    dims = sorted({int(a) % rank for a in np.asarray(axes.array()).reshape(-1)})
    if 0 in dims or any(x.shape[d] is None for d in dims):
        raise ctx.unsupported(f"a mean over axes {dims} of shape {list(x.shape)}")
    count = int(np.prod([x.shape[d] for d in dims]))
    keep = bool(ctx.option("keep_dims", False))
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape) if keep or i not in dims)
    config = {"axes": dims, "keepdims": keep, "input_zero_point": z_in, "output_zero_point": z_out}
    if keep and rank == 4 and dims == [1, 2]:  # the builtin kernel's own 4-D path: another formula
        config["multiplier"], config["shift"], config["bias"] = mean_hw_params(s_in, z_in, s_out, z_out, count)
    else:
        config["multiplier"], config["shift"] = mean_params(s_in, s_out, count)
    return (ctx.layer(INT + "Mean", config, [x], shape, name=ctx.name),)


@int_op("AVERAGE_POOL_2D", "MAX_POOL_2D")
def pool(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported("a pool whose output is quantized unlike its input")
    window = window_config(ctx, ctx.option("filter_height", 1), ctx.option("filter_width", 1), dilated=False)
    config = {**window, **fused_range(ctx, (s_out, z_out)), "max": ctx.op == "MAX_POOL_2D"}
    return (ctx.layer(INT + "Pool2D", config, [x], window_output_shape(x.shape, window, x.shape[-1]), name=ctx.name),)


@int_op("PAD", "PADV2")
def pad(ctx: LiteCtx) -> tuple[Value, ...]:
    return int_pad(ctx, io_params(ctx), "int8")


def int_pad(ctx: LiteCtx, io: tuple[tuple[float, int], tuple[float, int]], kind: str) -> tuple[Value, ...]:
    """Padding an int8 (or a uint8: its raw codes, the same ``F.pad``) tensor with the zero point (the real 0),
    or PADV2's own constant; ``io``: the input's and output's (scale, zero point)."""
    x, pads = ctx.tensor(0), ctx.const(1, "paddings")
    (s_in, z_in), (s_out, z_out) = io
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported(f"a {kind} pad whose output is quantized unlike its input")
    value = z_in
    if ctx.op == "PADV2":
        v = np.asarray(ctx.const(2, "constant value").array()).reshape(-1)
        if v.size != 1:
            raise ctx.unsupported("a padding value that is not a scalar")
        value = int(v[0])
    p = np.asarray(pads.array(), dtype=np.int64).reshape(len(x.shape), 2)
    if p[0].any() or len(x.shape) != 4:
        raise ctx.unsupported(f"paddings {p.tolist()} of a rank-{len(x.shape)} {kind} tensor")
    shape = tuple(None if s is None else s + int(a + b) for s, (a, b) in zip(x.shape, p))
    config = {"paddings": p[1:3].tolist() + [p[3].tolist()], "value": value}
    return (ctx.layer(INT + "Pad", config, [x], shape, name=ctx.name),)
