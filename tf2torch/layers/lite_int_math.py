"""TFLite's full-integer int8 math layers (``tflite/ops_int_math.py`` makes them) as the helpers of
``runtime/lite_int_math.py``: lookup tables over one or two int8 inputs, MAXIMUM / MINIMUM, reductions,
PRELU, LOG_SOFTMAX and BATCH_MATMUL. Their inputs are taken in TF's axis order (``wants="keras"``), so a
constant operand keeps the file's shape and broadcasts as TFLite broadcasts it.
"""

from __future__ import annotations

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import bind, param
from .lite_int import INT, call_module, config_int, config_ints
from .registry import converter


def _table(ctx: Ctx, size: int) -> Param:
    values = config_ints(ctx, "table")
    if len(values) != size or not all(-128 <= v <= 127 for v in values):
        raise ctx.unsupported(f"a table of {len(values)} entries (expected {size} int8 values)")
    return Param("", "table", layouts.IDENTITY, const=np.asarray(values, dtype=np.int8))


def _two(ctx: Ctx, module: Module, out: TensorInfo, params: tuple[Param, ...] = ()) -> Converted:
    """A module of two operands: two inputs, or one and the layer's int8 weight ``constant``."""
    if ctx.layer.weights:
        constant = bind(ctx, ["constant"])["constant"]
        module = Module(module.cls, module.args, module.kwargs + (
            ("constant_shape", tuple(constant.shape)),
            *((("constant_first", True),) if ctx.config.get("constant_first") else ())))
        return call_module(module, out, (*params, param("", "constant", constant)))
    if len(ctx.inputs) != 2:
        raise ctx.unsupported(f"{len(ctx.inputs)} inputs (expected 2)")
    return Converted((Op(n.call(n.M, n.arg(0), n.arg(1)), module),), (out,), params, helpers=(module.cls,))


def _broadcast(ctx: Ctx) -> TensorInfo:
    if len(ctx.inputs) == 1:
        return TensorInfo(ctx.x.shape, "keras")
    a, b = ctx.inputs[0].shape, ctx.inputs[1].shape
    if len(a) != len(b):
        raise ctx.unsupported(f"int8 operands of shapes {a} and {b}")
    return TensorInfo(tuple(q if p == 1 else p for p, q in zip(a, b)), "keras")


@converter(INT + "DomainLUT", wants="any")
def domain_table(ctx: Ctx) -> Converted:
    what = ctx.config.get("what", "RSQRT")
    if what not in ("RSQRT", "SQRT"):
        raise ctx.unsupported(f"config what={what!r}")
    kwargs = (("what", what),) if what != "RSQRT" else ()
    return call_module(Module("TFLiteQuantDomainLUT", (config_int(ctx, "valid_min"),), kwargs), ctx.x, (_table(ctx, 256),))


@converter(INT + "PairLUT", wants="keras")
def pair_table(ctx: Ctx) -> Converted:
    what = ctx.config.get("what")
    if what not in ("DIV", "SQUARED_DIFFERENCE"):
        raise ctx.unsupported(f"config what={what!r}")
    refused = tuple(config_ints(ctx, "refused")) if "refused" in ctx.config else ()
    module = Module("TFLiteQuantPairLUT", (), ((("refused", refused),) if refused else ()) + (("what", what),))
    return _two(ctx, module, _broadcast(ctx), (_table(ctx, 65536),))


@converter(INT + "MinMax", wants="keras")
def min_max(ctx: Ctx) -> Converted:
    return _two(ctx, Module("TFLiteQuantMinMax", (), (("maximum", bool(ctx.config.get("maximum"))),)), _broadcast(ctx))


@converter(INT + "Reduce", wants="keras")
def reduce(ctx: Ctx) -> Converted:
    axes, keep, kind = config_ints(ctx, "axes"), bool(ctx.config.get("keepdims")), ctx.config.get("kind")
    rank = len(ctx.x.shape) + 1
    if any(not 0 < a < rank for a in axes) or kind not in ("sum", "max", "min"):
        raise ctx.unsupported(f"axes {axes}, kind {kind!r}")
    shape = tuple(1 if i + 1 in axes else s for i, s in enumerate(ctx.x.shape) if keep or i + 1 not in axes)
    kwargs: tuple = (("keepdim", True),) if keep else ()
    if kind == "sum":
        scale, bias = ctx.config.get("scale"), ctx.config.get("bias")
        if not isinstance(scale, float) or not isinstance(bias, float):
            raise ctx.unsupported(f"config scale={scale!r}, bias={bias!r}")
        kwargs += (("scale", scale), ("bias", bias), ("output_zero_point", config_int(ctx, "output_zero_point")))
    return call_module(Module("TFLiteQuantReduce", (tuple(axes), kind), kwargs), TensorInfo(shape, "keras"))


@converter(INT + "Prelu", wants="keras")
def prelu(ctx: Ctx) -> Converted:
    alpha = bind(ctx, ["alpha"])["alpha"]
    params = ctx.config.get("params")
    if not isinstance(params, list) or len(params) != 2:
        raise ctx.unsupported(f"config params={params!r}")
    module = Module("TFLiteQuantPrelu", (config_int(ctx, "input_zero_point"), config_int(ctx, "alpha_zero_point"),
                                         tuple(tuple(p) for p in params), config_int(ctx, "output_zero_point"),
                                         tuple(alpha.shape)))
    return call_module(module, TensorInfo(ctx.x.shape, "keras"), (param("", "alpha", alpha),))


@converter(INT + "LogSoftmax", wants="any")
def log_softmax(ctx: Ctx) -> Converted:
    values, s_in, s_out = ctx.config.get("table"), ctx.config.get("input_scale"), ctx.config.get("output_scale")
    if not isinstance(values, list) or len(values) != 256 or not isinstance(s_in, float) or not isinstance(s_out, float):
        raise ctx.unsupported("a log-softmax table of other than 256 entries")
    dim = 1 if ctx.x.layout == "cf" and len(ctx.x.shape) > 1 else -1  # TF's last axis (channels)
    module = Module("TFLiteQuantLogSoftmax", (s_in, s_out, config_int(ctx, "output_zero_point")),
                    (("dim", dim),) if dim != -1 else ())
    return call_module(module, ctx.x, (Param("", "table", layouts.IDENTITY, const=np.asarray(values, dtype=np.float32)),))


@converter(INT + "BatchMatMul", wants="keras")
def batch_matmul(ctx: Ctx) -> Converted:
    adj_x, adj_y = bool(ctx.config.get("adj_x")), bool(ctx.config.get("adj_y"))
    a = ctx.inputs[0].shape
    if ctx.layer.weights:
        b = tuple(bind(ctx, ["constant"])["constant"].shape)
    elif len(ctx.inputs) == 2:
        b = ctx.inputs[1].shape
    else:
        raise ctx.unsupported(f"{len(ctx.inputs)} inputs (expected 2)")
    if len(a) < 2 or len(b) < 2:
        raise ctx.unsupported(f"operands of shapes {a} and {b}")
    shape = (*a[:-2], a[-1] if adj_x else a[-2], b[-2] if adj_y else b[-1])
    kwargs = (("output_zero_point", config_int(ctx, "output_zero_point")),) + (("adj_x", True),) * adj_x + \
        (("adj_y", True),) * adj_y
    module = Module("TFLiteQuantBatchMatMul", (tuple(config_ints(ctx, "zero_points")), config_int(ctx, "multiplier"),
                                               config_int(ctx, "shift")), kwargs)
    return _two(ctx, module, TensorInfo(shape, "keras"))
