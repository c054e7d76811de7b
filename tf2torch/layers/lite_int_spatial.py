"""TFLite's int8 pixel-moving layers (``tflite/ops_int_spatial.py`` makes them) as the helpers of
``runtime/lite_int_spatial.py``: index gathers (nearest-neighbour resizes, mirror padding), the bilinear
resize's fixed-point interpolation, and TRANSPOSE_CONV in int8 and in its dynamic-range (hybrid) form, each
holding the index tables, weights and multipliers computed at conversion as constant buffers.
"""

from __future__ import annotations

import numpy as np

from ..map import layouts
from .base import Converted, Ctx, Module, Param, TensorInfo
from .common import apply_module, bind, cfg_bool, param
from .lite_int import INT, config_int, config_ints, range_kwargs
from .registry import converter

HYBRID = "tf2torch>LiteHybrid"


def _table(ctx: Ctx, key: str, rows: int, size: int, bound: int) -> Param:
    """A config list of ``rows`` lists of ``size`` ints (one if ``rows`` is 0) in [-bound, bound], as an
    int64 buffer."""
    value = ctx.config.get(key)
    array = np.asarray(value if isinstance(value, list) else [], dtype=object)
    want = (rows, size) if rows else (size,)
    if array.shape != want or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= bound
                                      for v in array.reshape(-1)):
        raise ctx.unsupported(f"config {key}: expected {want} integers")
    return Param("", key, layouts.IDENTITY, const=array.astype(np.int64))


def _spatial(ctx: Ctx) -> tuple[int, int]:
    h, w = ctx.x.shape[:2]
    if h is None or w is None:
        raise ctx.unsupported("an int8 image of unknown size", "convert with --input-shape")
    return h, w


@converter(INT + "Gather", wants="cf")
def gather(ctx: Ctx) -> Converted:
    h, w = _spatial(ctx)
    rows, cols = len(ctx.config.get("rows") or ()), len(ctx.config.get("cols") or ())
    params = (_table(ctx, "rows", 0, rows, h - 1), _table(ctx, "cols", 0, cols, w - 1))
    if any(int(p.const.min()) < 0 for p in params):  # type: ignore[union-attr]
        raise ctx.unsupported("a negative source index")
    out = TensorInfo((rows, cols, ctx.x.shape[-1]), "cf")
    return Converted((apply_module(Module("TFLitePixelGather", (rows, cols))),), (out,), params,
                     helpers=("TFLitePixelGather",))


@converter(INT + "ResizeBilinear", wants="cf")
def resize_bilinear(ctx: Ctx) -> Converted:
    h, w = _spatial(ctx)
    rows, cols = (len((ctx.config.get(k) or [[]])[0]) for k in ("rows", "cols"))
    params = (_table(ctx, "rows", 2, rows, h - 1), _table(ctx, "row_weights", 2, rows, 1 << 11),
              _table(ctx, "cols", 2, cols, w - 1), _table(ctx, "col_weights", 2, cols, 1 << 11))
    if int(params[0].const.min()) < 0 or int(params[2].const.min()) < 0:  # type: ignore[union-attr]
        raise ctx.unsupported("a negative source index")
    out = TensorInfo((rows, cols, ctx.x.shape[-1]), "cf")
    module = Module("TFLiteQuantResizeBilinear", (rows, cols))
    return Converted((apply_module(module),), (out,), params, helpers=(module.cls,))


def _transposed(ctx: Ctx) -> tuple[tuple, TensorInfo]:
    """The geometry both transposed convolutions share: module arguments, the output."""
    kernel, strides, pads, size = (tuple(config_ints(ctx, k)) for k in ("kernel_size", "strides", "padding", "output_size"))
    if not (len(kernel) == len(strides) == len(pads) == len(size) == 2) or min(*kernel, *strides, *size) < 1 or \
            min(pads) < 0:
        raise ctx.unsupported(f"a transposed conv of kernel {kernel}, strides {strides}, padding {pads} to {size}")
    filters = config_int(ctx, "filters")
    return (ctx.x.shape[-1], filters, kernel, strides, pads, size), TensorInfo((*size, filters), "cf")


@converter(INT + "ConvTranspose2D", wants="cf")
def conv_transpose(ctx: Ctx) -> Converted:
    names = ["kernel", "bias"] if len(ctx.layer.weights) == 2 else ["kernel"]
    w = bind(ctx, names)
    args, out = _transposed(ctx)
    multiplier, shift = config_ints(ctx, "multiplier"), config_ints(ctx, "shift")
    if len(multiplier) != args[1] or len(shift) != args[1]:
        raise ctx.unsupported(f"{len(multiplier)} multipliers for {args[1]} output channels")
    module = Module("TFLiteQuantConvTranspose2d", args, (
        ("input_zero_point", config_int(ctx, "input_zero_point")), ("output_zero_point", config_int(ctx, "output_zero_point")),
        *range_kwargs(ctx)))
    consts = [Param("", k, layouts.IDENTITY, const=np.asarray(v, dtype=np.int32))
              for k, v in (("multiplier", multiplier), ("shift", shift))]
    params = [param("", "weight", w["kernel"], "conv2d_transpose"), *consts]
    params.append(param("", "bias", w["bias"]) if "bias" in w else
                  Param("", "bias", layouts.IDENTITY, const=np.zeros(args[1], dtype=np.int32)))
    return Converted((apply_module(module),), (out,), tuple(params), helpers=(module.cls,))


@converter(HYBRID + "ConvTranspose2D", wants="cf")
def hybrid_conv_transpose(ctx: Ctx) -> Converted:
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    args, out = _transposed(ctx)
    scales = ctx.config.get("weight_scale")
    if not isinstance(scales, list) or len(scales) not in (1, args[1]) or \
            not all(isinstance(s, float) and s > 0 for s in scales):
        raise ctx.unsupported(f"weight scales {str(scales)[:60]} for {args[1]} output channels")
    scale = np.asarray(scales * (args[1] if len(scales) == 1 else 1), dtype=np.float32)  # LiteRT repeats one
    module = Module("TFLiteHybridConvTranspose2d", args, () if use_bias else (("bias", False),))
    params = [param("", "weight", w["kernel"], "conv2d_transpose"),
              Param("", "weight_scale", layouts.IDENTITY, const=scale)]
    if use_bias:
        params.append(param("", "bias", w["bias"]))
    return Converted((apply_module(module),), (out,), tuple(params), helpers=(module.cls,))
