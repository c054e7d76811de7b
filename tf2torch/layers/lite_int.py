"""TFLite's full-integer int8 layers (``tflite/ops_int.py`` makes them) as the helpers of
``runtime/lite_int.py``: convolutions, fully-connected layers, ADD / SUB / MUL, MEAN, pools, PAD,
QUANTIZE / DEQUANTIZE and lookup tables, each holding the file's int8 weights and int32 biases (read into
torch's layout by the layout table's permutations) and the fixed-point multipliers LiteRT computes.
TF's SAME padding is planned here, by the one SAME rule (``rewrite/same.py``), as explicit
(left, right, top, bottom) pads the integer modules apply to ``x - zero point``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from ..rewrite.same import same_padding
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import apply_module, bind, param
from .registry import converter

INT = "tf2torch>LiteInt"


def config_ints(ctx: Ctx, key: str) -> list[int]:
    """Config ``key``: a list of ints (no bools), as tflite/ops_int*.py wrote it; else refused."""
    value = ctx.config.get(key)
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ctx.unsupported(f"config {key}={str(value)[:60]}")
    return value


def config_int(ctx: Ctx, key: str) -> int:
    """Config ``key``: an int (no bool, no default: every integer layer's parameter is written); else refused."""
    value = ctx.config.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ctx.unsupported(f"config {key}={value!r}")
    return value


def int32_param(name: str, values: list[int]) -> Param:
    """A constant int32 buffer computed at conversion (multipliers, shifts) under ``name``."""
    return Param("", name, layouts.IDENTITY, const=np.asarray(values, dtype=np.int32))


def window_pads(ctx: Ctx) -> tuple[tuple[int, int, int, int], tuple[int | None, int | None]]:
    """TF's padding of the layer's window as (left, right, top, bottom), and the output's spatial size."""
    kernel, strides = config_ints(ctx, "kernel_size"), config_ints(ctx, "strides")
    dilation = ctx.config.get("dilation_rate") or [1, 1]
    sizes = ctx.x.shape[:2]
    if any(s is None for s in sizes):
        raise ctx.unsupported("an int8 window on an input of unknown spatial size", "convert with --input-shape")
    explicit = ctx.config.get("explicit_padding")  # a dilated conv's space-to-batch paddings
    if explicit:
        (top, bottom), (left, right) = explicit
    elif ctx.config.get("padding") == "same":
        (top, bottom), (left, right) = (same_padding(s, k, st, d) for s, k, st, d in
                                        zip(sizes, kernel, strides, dilation))  # type: ignore[arg-type]
    else:
        top = bottom = left = right = 0
    out = tuple((s + a + b - (k - 1) * d - 1) // st + 1 for s, a, b, k, st, d in
                zip(sizes, (top, left), (bottom, right), kernel, strides, dilation))  # type: ignore[operator]
    return (left, right, top, bottom), out  # type: ignore[return-value]


def range_kwargs(ctx: Ctx) -> tuple[tuple[str, Any], ...]:
    """The output clamp (``output_min``, ``output_max``) as module keyword arguments."""
    return (("output_min", config_int(ctx, "output_min")), ("output_max", config_int(ctx, "output_max")))


def call_module(module: Module, out: TensorInfo, params: tuple[Param, ...] = (), helper: str = "") -> Converted:
    """One runtime module applied to the layer's input: its output ``out``, its ``params``, its class (or
    ``helper``) copied into model.py from the runtime library."""
    return Converted((apply_module(module),), (out,), params, helpers=(helper or module.cls,))


@dataclass(frozen=True)
class IntConv:
    """What an integer conv layer's config fixes (shared by the int8 and int16 conv converters)."""

    channels: int
    out_c: int
    depthwise: bool
    out: TensorInfo  # channels-first output
    multiplier: list[int]
    shift: list[int]
    window: tuple[tuple[str, Any], ...]  # stride, padding, dilation, groups: the module's keyword arguments


def int_conv(ctx: Ctx) -> IntConv:
    """An integer Conv2D layer's geometry and per-channel requantization, checked against each other."""
    channels = ctx.x.shape[-1]
    depthwise = bool(ctx.config.get("depthwise"))
    out_c = channels * config_int(ctx, "depth_multiplier") if depthwise else config_int(ctx, "filters")  # type: ignore[operator]
    pads, out = window_pads(ctx)
    multiplier, shift = config_ints(ctx, "multiplier"), config_ints(ctx, "shift")
    if len(multiplier) != out_c or len(shift) != out_c:
        raise ctx.unsupported(f"{len(multiplier)} multipliers for {out_c} output channels")
    window = (("stride", tuple(config_ints(ctx, "strides"))), ("padding", pads),
              ("dilation", tuple(ctx.config.get("dilation_rate") or (1, 1))), ("groups", channels if depthwise else 1))
    return IntConv(channels, out_c, depthwise, TensorInfo((*out, out_c), "cf"), multiplier, shift, window)


@converter(INT + "Conv2D", wants="cf")
def conv(ctx: Ctx) -> Converted:
    names = ["kernel", "bias"] if len(ctx.layer.weights) == 2 else ["kernel"]
    w = bind(ctx, names)
    c = int_conv(ctx)
    module = Module("TFLiteQuantConv2d", (c.channels, c.out_c, tuple(config_ints(ctx, "kernel_size"))), (
        *c.window,
        ("input_zero_point", config_int(ctx, "input_zero_point")), ("output_zero_point", config_int(ctx, "output_zero_point")),
        *range_kwargs(ctx)))
    params = [param("", "weight", w["kernel"], "depthwise2d" if c.depthwise else "conv2d"),
              int32_param("multiplier", c.multiplier), int32_param("shift", c.shift)]
    params.append(param("", "bias", w["bias"]) if "bias" in w else int32_param("bias", [0] * c.out_c))
    return call_module(module, c.out, tuple(params))


def int_dense(ctx: Ctx) -> tuple[int, layouts.Layout, list[int], list[int]]:
    """An integer Dense layer's units, its kernel's layout (rows reordered after a channels-first Flatten, as
    for Dense) and its requantization (one multiplier, or one per unit), for the int8 and int16 converters."""
    units = config_int(ctx, "units")
    kernel = layouts.get("dense")
    if ctx.x.layout == "cf_flat":
        *spatial, channels = ctx.x.flat_from
        kernel = layouts.dense_after_flatten(tuple(spatial), channels)
    multiplier, shift = config_ints(ctx, "multiplier"), config_ints(ctx, "shift")
    if len(multiplier) not in (1, units):
        raise ctx.unsupported(f"{len(multiplier)} multipliers for {units} outputs")
    return units, kernel, multiplier, shift


@converter(INT + "Dense", wants="keras", accepts_flat=True)
def dense(ctx: Ctx) -> Converted:
    names = ["kernel", "bias"] if len(ctx.layer.weights) == 2 else ["kernel"]
    w = bind(ctx, names)
    x = ctx.x
    units, kernel, multiplier, shift = int_dense(ctx)
    module = Module("TFLiteQuantLinear", (x.shape[-1], units), (
        *((("channels", 1),) if len(multiplier) == 1 else ()),
        ("input_zero_point", config_int(ctx, "input_zero_point")), ("output_zero_point", config_int(ctx, "output_zero_point")),
        *range_kwargs(ctx)))
    params = [param("", "weight", w["kernel"], kernel), int32_param("multiplier", multiplier), int32_param("shift", shift)]
    params.append(param("", "bias", w["bias"]) if "bias" in w else int32_param("bias", [0] * units))
    return call_module(module, TensorInfo((*x.shape[:-1], units), "keras"), tuple(params))


def _broadcast(ctx: Ctx) -> TensorInfo:
    a, b = ctx.inputs[0], ctx.inputs[1]
    if len(a.shape) != len(b.shape) or a.layout != b.layout:
        raise ctx.unsupported(f"int8 operands of shapes {a.shape} and {b.shape}")
    shape = tuple(q if p == 1 else p for p, q in zip(a.shape, b.shape))
    return TensorInfo(shape, a.layout)


@converter(INT + "Add", INT + "Mul", wants="same")
def binary(ctx: Ctx) -> Converted:
    constant = bind(ctx, ["constant"])["constant"] if ctx.layer.weights else None
    scalar = ctx.config.get("scalar")
    out = _broadcast(ctx) if constant is None and scalar is None else ctx.x
    zero_points = tuple(config_ints(ctx, "zero_points"))
    common = (("output_zero_point", config_int(ctx, "output_zero_point")), *range_kwargs(ctx))
    if ctx.layer.class_name.endswith("Mul"):
        module = Module("TFLiteQuantMul", (zero_points, config_int(ctx, "multiplier"), config_int(ctx, "shift")), common)
    else:
        params = ctx.config.get("params")
        if not isinstance(params, list) or len(params) != 3:
            raise ctx.unsupported(f"config params={params!r}")
        sign = config_int(ctx, "sign")
        module = Module("TFLiteQuantAdd", (zero_points, tuple(tuple(p) for p in params)),
                        common + ((("sign", -1),) if sign == -1 else ()))
    if scalar is not None:  # x op c, c one int8 number: a (1,) buffer broadcasts over any layout
        module = Module(module.cls, module.args, module.kwargs + (("constant_shape", (1,)),))
        const = Param("", "constant", layouts.IDENTITY, const=np.asarray([config_int(ctx, "scalar")], dtype=np.int8))
        return Converted((apply_module(module),), (out,), (const,), helpers=(module.cls,))
    if constant is not None:  # x op c, c one int8 value per channel: (C,) for (N, C), (C, 1, 1) for (N, C, H, W)
        cf = ctx.x.layout == "cf" and len(ctx.x.shape) > 1
        shape = (constant.shape[0],) + (1,) * (len(ctx.x.shape) - 1 if cf else 0)
        module = Module(module.cls, module.args, module.kwargs + (("constant_shape", shape),))
        layout = layouts.get("column2d") if cf and len(ctx.x.shape) == 3 else layouts.IDENTITY
        if cf and len(ctx.x.shape) not in (1, 3):
            raise ctx.unsupported(f"a per-channel constant on a tensor of shape {ctx.x.shape}")
        return Converted((apply_module(module),), (out,), (param("", "constant", constant, layout),),
                         helpers=(module.cls,))
    op = Op(n.call(n.M, n.arg(0), n.arg(1)), module)
    return Converted((op,), (out,), helpers=(module.cls,))


def mean_axes(ctx: Ctx) -> tuple[list[int], bool, tuple]:
    """An integer MEAN layer's axes (of the batched input; never the batch), keepdims and output shape."""
    axes, keep = config_ints(ctx, "axes"), bool(ctx.config.get("keepdims"))
    rank = len(ctx.x.shape) + 1
    if any(not 0 < a < rank for a in axes):
        raise ctx.unsupported(f"axes {axes}")
    return axes, keep, tuple(1 if i + 1 in axes else s for i, s in enumerate(ctx.x.shape) if keep or i + 1 not in axes)


@converter(INT + "Mean", wants="keras")
def mean(ctx: Ctx) -> Converted:
    axes, keep, shape = mean_axes(ctx)
    bias = (("bias", config_int(ctx, "bias")),) if "bias" in ctx.config else ()
    module = Module("TFLiteQuantMean", (tuple(axes), config_int(ctx, "input_zero_point"), config_int(ctx, "multiplier"),
                                        config_int(ctx, "shift"), config_int(ctx, "output_zero_point")),
                    ((("keepdim", True),) if keep else ()) + bias)
    return call_module(module, TensorInfo(shape, "keras"))


@converter(INT + "Pool2D", wants="cf")
def pool(ctx: Ctx) -> Converted:
    pads, out = window_pads(ctx)
    cls = "TFLiteQuantMaxPool2d" if ctx.config.get("max") else "TFLiteQuantAvgPool2d"
    module = Module(cls, (tuple(config_ints(ctx, "kernel_size")), tuple(config_ints(ctx, "strides"))),
                    (("padding", pads), *range_kwargs(ctx)))
    return call_module(module, TensorInfo((*out, ctx.x.shape[-1]), "cf"))


@converter(INT + "Pad", wants="cf")
def pad(ctx: Ctx) -> Converted:
    (top, bottom), (left, right), (front, back) = ctx.config.get("paddings") or ((0, 0),) * 3
    value = config_int(ctx, "value")
    shape = tuple(None if s is None else s + a + b for s, (a, b) in
                  zip(ctx.x.shape, ((top, bottom), (left, right), (front, back))))
    # an int8 tensor padded with its zero point (the real 0): torch pads (N, C, H, W) last axis first
    op = Op(n.call("F.pad", n.X, (left, right, top, bottom, front, back), value=value))
    return Converted((op,), (TensorInfo(shape, "cf"),))


@converter(INT + "Quantize", wants="any")
def quantize(ctx: Ctx) -> Converted:
    scale, zero = ctx.config.get("scale"), config_int(ctx, "zero_point")
    if not isinstance(scale, float) or scale <= 0:
        raise ctx.unsupported(f"scale {scale!r}")
    if ctx.config.get("dequantize"):
        return call_module(Module("TFLiteDequantize", (scale, zero)), ctx.x)
    return call_module(Module("TFLiteQuantize", (scale, zero), tflite_order(ctx.x)), ctx.x)


def tflite_order(x: TensorInfo) -> tuple[tuple[str, Any], ...]:
    """How a tensor's element order differs from TFLite's (channels last), for kernels whose rounding depends on
    the position (QUANTIZE's vector loop and scalar tail: runtime/lite_quantize.py)."""
    if x.layout == "cf_flat":
        return (("flat_from", tuple(x.flat_from)),)
    return (("channels_first", True),) if x.layout == "cf" and len(x.shape) >= 3 else ()


@converter(INT + "LUT", wants="any")
def table(ctx: Ctx) -> Converted:
    values = config_ints(ctx, "table")
    if len(values) != 256:
        raise ctx.unsupported(f"a table of {len(values)} entries")
    return call_module(Module("TFLiteQuantLUT"), ctx.x, (Param("", "table", layouts.IDENTITY,
                                                          const=np.asarray(values, dtype=np.int8)),))


@converter(INT + "Rescale", wants="any")
def rescale(ctx: Ctx) -> Converted:
    module = Module("TFLiteQuantRescale", (config_int(ctx, "input_zero_point"), config_int(ctx, "multiplier"), config_int(ctx, "shift"),
                                           config_int(ctx, "output_zero_point")), range_kwargs(ctx))
    return call_module(module, ctx.x)


@converter(INT + "Softmax", wants="any")
def softmax(ctx: Ctx) -> Converted:
    values, scale = ctx.config.get("table"), ctx.config.get("output_scale")
    if not isinstance(values, list) or len(values) != 256 or not isinstance(scale, float):
        raise ctx.unsupported("a softmax table of other than 256 entries")
    dim = 1 if ctx.x.layout == "cf" and len(ctx.x.shape) > 1 else -1  # TF's last axis (channels)
    module = Module("TFLiteQuantSoftmax", (scale, config_int(ctx, "output_zero_point")), (("dim", dim),) if dim != -1 else ())
    return call_module(module, ctx.x, (Param("", "table", layouts.IDENTITY, const=np.asarray(values, dtype=np.float32)),))


@converter(INT + "HardSwish", wants="any")
def hard_swish(ctx: Ctx) -> Converted:
    names = ("input_zero_point", "output_zero_point", "output_multiplier", "output_exponent", "reluish_multiplier",
             "reluish_exponent")
    return call_module(Module("TFLiteQuantHardSwish", tuple(config_int(ctx, k) for k in names)), ctx.x)


@converter(INT + "LeakyRelu", wants="any")
def leaky_relu(ctx: Ctx) -> Converted:
    params = ctx.config.get("params")
    if not isinstance(params, list) or len(params) != 2:
        raise ctx.unsupported(f"config params={params!r}")
    module = Module("TFLiteQuantLeakyRelu", (config_int(ctx, "input_zero_point"), tuple(tuple(p) for p in params),
                                             config_int(ctx, "output_zero_point")))
    return call_module(module, ctx.x)
