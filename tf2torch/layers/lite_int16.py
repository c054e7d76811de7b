"""TFLite's 16x8 layers (``tflite/ops_int16*.py`` makes them) as the helpers of ``runtime/lite_int16*.py``:
convolutions, fully-connected layers, ADD / SUB / MUL, MEAN, pools, SOFTMAX, and the
requantizing and quantizing ends (int16, and uint8's: ``tflite/ops_uint8.py``). Weights are the file's int8
kernels and int64 biases; SAME padding is planned by the int8 layers' rule (``layers/lite_int.py``).
"""

from __future__ import annotations

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import bind, param
from .lite_int import (  # the int8 layers' config readers and SAME rule
    call_module,
    config_int,
    config_ints,
    int32_param,
    int_conv,
    int_dense,
    mean_axes,
    range_kwargs,
    tflite_order,
    window_pads,
)
from .registry import converter

INT16 = "tf2torch>LiteInt16"
_TYPES = ("int8", "uint8", "int16")


def _kernel_bias(ctx: Ctx) -> dict:
    """The kernel and the int64 bias (tflite/ops_int16.py refuses an operator without one), by Keras name."""
    return bind(ctx, ["kernel", "bias"])


def _table(name: str, values: list, dtype: str) -> Param:
    return Param("", name, layouts.IDENTITY, const=np.asarray(values, dtype=dtype))


@converter(INT16 + "Conv2D", wants="cf")
def conv(ctx: Ctx) -> Converted:
    w = _kernel_bias(ctx)
    c = int_conv(ctx)
    module = Module("TFLiteQuant16Conv2d", (c.channels, c.out_c, tuple(config_ints(ctx, "kernel_size"))),
                    (*c.window, *range_kwargs(ctx)))
    params = (param("", "weight", w["kernel"], "depthwise2d" if c.depthwise else "conv2d"), param("", "bias", w["bias"]),
              int32_param("multiplier", c.multiplier), int32_param("shift", c.shift))
    return call_module(module, c.out, params)


@converter(INT16 + "Dense", wants="keras", accepts_flat=True)
def dense(ctx: Ctx) -> Converted:
    w = _kernel_bias(ctx)
    x = ctx.x
    units, kernel, multiplier, shift = int_dense(ctx)
    module = Module("TFLiteQuant16Linear", (x.shape[-1], units),
                    ((("channels", 1),) if len(multiplier) == 1 else ()) + range_kwargs(ctx))
    params = (param("", "weight", w["kernel"], kernel), param("", "bias", w["bias"]), int32_param("multiplier", multiplier),
              int32_param("shift", shift))
    return call_module(module, TensorInfo((*x.shape[:-1], units), "keras"), params)


@converter(INT16 + "Add", INT16 + "Mul", wants="same")
def binary(ctx: Ctx) -> Converted:
    if ctx.layer.class_name.endswith("Mul"):
        module = Module("TFLiteQuant16Mul", (config_int(ctx, "multiplier"), config_int(ctx, "shift")), range_kwargs(ctx))
    else:
        params = ctx.config.get("params")
        if not isinstance(params, list) or len(params) != 3:
            raise ctx.unsupported(f"config params={params!r}")
        sign = (("sign", -1),) if config_int(ctx, "sign") == -1 else ()
        module = Module("TFLiteQuant16Add", (tuple(tuple(p) for p in params),), range_kwargs(ctx) + sign)
    if ctx.layer.weights:  # x op c: c one int16 value (1,) or one per channel: (C,), or (C, 1, 1) channels-first
        constant = bind(ctx, ["constant"])["constant"]
        cf = ctx.x.layout == "cf" and len(ctx.x.shape) == 3 and constant.shape[0] > 1
        module = Module(module.cls, module.args, module.kwargs + (("constant_shape", (constant.shape[0],) + (1, 1) * cf),))
        if ctx.x.layout == "cf" and len(ctx.x.shape) not in (1, 3) and constant.shape[0] > 1:
            raise ctx.unsupported(f"a per-channel constant on a tensor of shape {ctx.x.shape}")
        layout = layouts.get("column2d") if cf else layouts.IDENTITY
        return call_module(module, ctx.x, (param("", "constant", constant, layout),))
    a, b = ctx.inputs[0], ctx.inputs[1]
    if len(a.shape) != len(b.shape) or a.layout != b.layout:
        raise ctx.unsupported(f"int16 operands of shapes {a.shape} and {b.shape}")
    out = TensorInfo(tuple(q if p == 1 else p for p, q in zip(a.shape, b.shape)), a.layout)
    return Converted((Op(n.call(n.M, n.arg(0), n.arg(1)), module),), (out,), helpers=(module.cls,))


@converter(INT16 + "Mean", wants="keras")
def mean(ctx: Ctx) -> Converted:
    axes, keep, shape = mean_axes(ctx)
    module = Module("TFLiteQuant16Mean", (tuple(axes), config_int(ctx, "multiplier"), config_int(ctx, "shift")),
                    (("keepdim", True),) if keep else ())
    return call_module(module, TensorInfo(shape, "keras"))


@converter(INT16 + "Pool2D", wants="cf")
def pool(ctx: Ctx) -> Converted:
    pads, out = window_pads(ctx)
    module = Module("TFLiteQuant16Pool2d", (tuple(config_ints(ctx, "kernel_size")), tuple(config_ints(ctx, "strides"))),
                    (("padding", pads), *range_kwargs(ctx), *((("max", True),) if ctx.config.get("max") else ())))
    return call_module(module, TensorInfo((*out, ctx.x.shape[-1]), "cf"))


def _dtype(ctx: Ctx) -> str:
    dtype = ctx.config.get("dtype")
    if dtype not in _TYPES:
        raise ctx.unsupported(f"config dtype={dtype!r}")
    return str(dtype)


@converter(INT16 + "Requantize", wants="any")
def requantize(ctx: Ctx) -> Converted:
    names = ("input_zero_point", "multiplier", "shift", "output_zero_point", "output_min", "output_max")
    return call_module(Module("TFLiteRequantize", (*(config_int(ctx, k) for k in names), _dtype(ctx))), ctx.x)


@converter(INT16 + "QuantizeTo", wants="any")
def quantize(ctx: Ctx) -> Converted:
    scale = ctx.config.get("scale")
    if not isinstance(scale, float) or scale <= 0:
        raise ctx.unsupported(f"scale {scale!r}")
    return call_module(Module("TFLiteQuantizeTo", (scale, config_int(ctx, "zero_point"), _dtype(ctx)), tflite_order(ctx.x)), ctx.x)


@converter(INT16 + "Softmax", wants="any")
def softmax(ctx: Ctx) -> Converted:
    tables = [config_ints(ctx, k) for k in ("exp_table", "reciprocal_table")]
    if any(len(t) != 513 for t in tables):
        raise ctx.unsupported("softmax tables of other than 513 entries")
    dim = 1 if ctx.x.layout == "cf" and len(ctx.x.shape) > 1 else -1  # TF's last axis (channels)
    module = Module("TFLiteQuant16Softmax", (config_int(ctx, "input_multiplier"), config_int(ctx, "input_shift")),
                    (("dim", dim),) if dim != -1 else ())
    return call_module(module, ctx.x, (_table("exp_table", tables[0], "int16"), _table("reciprocal_table", tables[1], "int16")))
