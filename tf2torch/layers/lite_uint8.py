"""TF 1's all-uint8 layers (``tflite/ops_uint8_model.py`` makes them) as the helpers of ``runtime/lite_uint8.py``.

Their configs are the int8 layers' (``layers/lite_int.py``): each converter here is the int8 one with its
module swapped for the uint8 class; the convolutions and the fully-connected layer also pass the weight zero
point (their kernels' filter_offset) and the rounding of the requantization's final shift.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..map import layouts
from . import lite_int, lite_int_math, lite_int_spatial
from .base import Converted, Ctx, Module, Param, TensorInfo
from .common import apply_module
from .lite_int import config_int
from .registry import converter

UINT8 = "tf2torch>LiteUint8"
_CLASSES = {"TFLiteQuantConv2d": "TFLiteUint8Conv2d", "TFLiteQuantLinear": "TFLiteUint8Linear",
            "TFLiteQuantAdd": "TFLiteUint8Add", "TFLiteQuantMul": "TFLiteUint8Mul", "TFLiteQuantMean": "TFLiteUint8Mean",
            "TFLiteQuantAvgPool2d": "TFLiteUint8AvgPool2d", "TFLiteQuantMaxPool2d": "TFLiteUint8MaxPool2d",
            "TFLiteQuantLUT": "TFLiteUint8LUT", "TFLiteQuantSoftmax": "TFLiteUint8Softmax",
            "TFLiteQuantRescale": "TFLiteUint8Rescale", "TFLiteQuantMinMax": "TFLiteUint8MinMax",
            "TFLiteQuantHardSwish": "TFLiteUint8HardSwish", "TFLiteQuantLeakyRelu": "TFLiteUint8LeakyRelu",
            "TFLiteQuantReduce": "TFLiteUint8Reduce", "TFLiteQuantLogSoftmax": "TFLiteUint8LogSoftmax",
            "TFLiteQuantConvTranspose2d": "TFLiteUint8ConvTranspose2d"}
# Whether the requantization's final shift rounds half up (else half away from zero, RoundingDivideByPOT), per
# kernel, as measured against the interpreter (tests/tflite/test_uint8_tf1.py, its "ties" model): the uint8
# CONV_2D and FULLY_CONNECTED go through the gemm path, whose output stage rounds half up; the uint8 depthwise
# kernel's scalar output stage (DepthwiseConvGeneral) is RoundingDivideByPOT, half away from zero.
UPWARD = {"conv": True, "depthwise": False, "dense": True}


def _as_uint8(converted: Converted, extra: tuple[tuple[str, object], ...] = ()) -> Converted:
    """The int8 layer's result with each module swapped for its uint8 class (plus ``extra`` keyword arguments)."""
    ops = []
    for op in converted.ops:
        module = op.module
        if module is not None and module.cls in _CLASSES:
            module = dataclasses.replace(module, cls=_CLASSES[module.cls], kwargs=module.kwargs + extra)
        ops.append(dataclasses.replace(op, module=module))
    helpers = tuple(_CLASSES.get(h, h) for h in converted.helpers)
    return dataclasses.replace(converted, ops=tuple(ops), helpers=helpers)


def _weighted(int8: Callable[[Ctx], Converted]) -> Callable[[Ctx], Converted]:
    def convert(ctx: Ctx) -> Converted:
        kind = "dense" if "units" in ctx.config else "depthwise" if ctx.config.get("depthwise") else "conv"
        return _as_uint8(int8(ctx), (("weight_zero_point", config_int(ctx, "weight_zero_point")),
                                     ("upward", UPWARD[kind])))
    return convert


def _shifted(int8: Callable[[Ctx], Converted]) -> Callable[[Ctx], Converted]:
    def convert(ctx: Ctx) -> Converted:
        # a per-channel constant operand (ADD / SUB / MUL) is the file's uint8 tensor: its buffer stays uint8
        return _as_uint8(int8(ctx), (("uint8_constant", True),) if ctx.layer.weights else ())
    return convert


converter(UINT8 + "Conv2D", wants="cf")(_weighted(lite_int.conv))
converter(UINT8 + "Dense", wants="keras", accepts_flat=True)(_weighted(lite_int.dense))


@converter(UINT8 + "ConvTranspose2D", wants="cf")
def conv_transpose(ctx: Ctx) -> Converted:
    return _as_uint8(lite_int_spatial.conv_transpose(ctx), (("weight_zero_point", config_int(ctx, "weight_zero_point")),))
converter(UINT8 + "Add", UINT8 + "Mul", wants="same")(_shifted(lite_int.binary))
converter(UINT8 + "Mean", wants="keras")(_shifted(lite_int.mean))
converter(UINT8 + "Pool2D", wants="cf")(_shifted(lite_int.pool))
converter(UINT8 + "Softmax", wants="any")(_shifted(lite_int.softmax))
converter(UINT8 + "LUT", wants="any")(_shifted(lite_int.table))
converter(UINT8 + "Rescale", wants="any")(_shifted(lite_int.rescale))
converter(UINT8 + "HardSwish", wants="any")(_shifted(lite_int.hard_swish))
converter(UINT8 + "LeakyRelu", wants="any")(_shifted(lite_int.leaky_relu))
converter(UINT8 + "MinMax", wants="keras")(_shifted(lite_int_math.min_max))
converter(UINT8 + "Reduce", wants="keras")(_shifted(lite_int_math.reduce))
# the int8 layer's config and table, its module swapped for one on the raw uint8 values (runtime/lite_uint8_spatial.py)
converter(UINT8 + "LogSoftmax", wants="any")(_shifted(lite_int_math.log_softmax))


@converter(UINT8 + "ResizeBilinear", wants="cf")
def resize_bilinear(ctx: Ctx) -> Converted:
    """LiteRT's uint8 bilinear resize (float32 weights): index tables and fractions as constant buffers."""
    h, w = lite_int_spatial._spatial(ctx)
    rows, cols = (len((ctx.config.get(k) or [[]])[0]) for k in ("rows", "cols"))
    params = [lite_int_spatial._table(ctx, "rows", 2, rows, h - 1), lite_int_spatial._table(ctx, "cols", 2, cols, w - 1)]
    if int(params[0].const.min()) < 0 or int(params[1].const.min()) < 0:  # type: ignore[union-attr]
        raise ctx.unsupported("a negative source index")
    for key, size in (("row_fractions", rows), ("col_fractions", cols)):
        value = ctx.config.get(key)
        if not isinstance(value, list) or len(value) != size or not all(isinstance(v, float) and -1 <= v <= 1
                                                                         for v in value):
            raise ctx.unsupported(f"config {key}: expected {size} fractions")
        params.append(Param("", key, layouts.IDENTITY, const=np.asarray(value, dtype=np.float32)))
    module = Module("TFLiteUint8ResizeBilinear", (rows, cols))
    return Converted((apply_module(module),), (TensorInfo((rows, cols, ctx.x.shape[-1]), "cf"),), tuple(params),
                     helpers=(module.cls,))


@converter(UINT8 + "Requantize", wants="any")
def requantize(ctx: Ctx) -> Converted:
    scale, bias = ctx.config.get("scale"), ctx.config.get("bias")
    if not isinstance(scale, float) or not isinstance(bias, float):
        raise ctx.unsupported(f"config scale={scale!r}, bias={bias!r}")
    return lite_int.call_module(Module("TFLiteUint8Requantize", (scale, bias, config_int(ctx, "output_zero_point"))),
                                ctx.x)
