"""Full-integer int8 math operators: each a ``tf2torch>LiteInt*`` layer (``layers/lite_int_math.py``) running
LiteRT's integer kernel (``runtime/lite_int_math.py``), with the parameters its ``Prepare`` computes.

Elementwise operators of one int8 input (ABS, RSQRT, SQRT, EXP, LOG, GELU) and of two (DIV, SQUARED_DIFFERENCE)
become lookup tables computed here by the kernel's own arithmetic on every input value
(``tflite/quant_tables.py``). MAXIMUM / MINIMUM, REDUCE_MAX / REDUCE_MIN, SUM, PRELU, LOG_SOFTMAX and
BATCH_MATMUL are modules. What TF's converter leaves in float inside an int8 model (ELU, NEG, SQUARE:
DEQUANTIZE, the float operator, QUANTIZE) takes the float converters between the integer ends.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Const, Tensor, Value
from .base import LiteCtx, int_op
from .ops_int import INT, fused_range, io_params, qparams
from .ops_math import same_rank
from .quant_math import quantize_multiplier, softmax_table
from .quant_tables import (
    Undefined,
    abs_table,
    div_table,
    exp_f32,
    function_table,
    gelu_f32,
    log_f32,
    rsqrt_table,
    sqrt_table,
    squared_difference_table,
)


def _lut(ctx: LiteCtx, table: list[int], cls: str = "LUT", extra: dict | None = None) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    return (ctx.layer(INT + cls, {"table": table, **(extra or {})}, [x], x.shape, name=ctx.name),)


@int_op("ABS", "EXP", "GELU", "LOG")
def unary(ctx: LiteCtx) -> tuple[Value, ...]:
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    if ctx.op == "ABS":
        return _lut(ctx, abs_table(s_in, z_in, s_out, z_out))
    fn = {"EXP": exp_f32, "LOG": log_f32(s_out, z_out)}.get(ctx.op) or gelu_f32(bool(ctx.option("approximate", False)))
    return _lut(ctx, function_table(fn, s_in, z_in, s_out, z_out))


@int_op("RSQRT", "SQRT")
def root(ctx: LiteCtx) -> tuple[Value, ...]:
    """Defined from the zero point up (the real 0): LiteRT stops with an error below it, so does the module."""
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    try:
        table = (rsqrt_table if ctx.op == "RSQRT" else sqrt_table)(s_in, z_in, s_out, z_out)
    except Undefined as exc:
        raise ctx.unsupported(f"scales that put LiteRT's kernel outside its defined range ({exc})") from None
    return _lut(ctx, table, "DomainLUT", {"valid_min": z_in, "what": ctx.op})


def _pair(ctx: LiteCtx) -> tuple[list[Tensor], list, dict, tuple]:
    """Two int8 operands: both tensors (ranks aligned as TFLite broadcasts), or a tensor and an int8
    constant of the file (the layer's weight ``constant``, kept in TF's shape; ``constant_first`` when
    it is the first operand). Returns (inputs, weights, config, output shape)."""
    a, b = ctx.value(0), ctx.value(1)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if len(a.shape) != len(b.shape):
            a, b = same_rank(ctx, a), same_rank(ctx, b)
        shape = tuple(p if q in (1, None) else q for p, q in zip(a.shape, b.shape))
        return [a, b], [], {}, tuple(q if p == 1 else p for p, q in zip(shape, b.shape))
    first = isinstance(a, Const)
    x, c = (b, a) if first else (a, b)
    if not isinstance(x, Tensor) or not isinstance(c, Const) or c.var.dtype.name != "int8":
        raise ctx.unsupported("int8 operands that are not two tensors, or a tensor and an int8 constant")
    if len(c.shape) > len(x.shape) or any(d not in (1, s) for d, s in zip(c.shape[::-1], x.shape[::-1])):
        raise ctx.unsupported(f"a constant of shape {list(c.shape)} against a tensor of shape {list(x.shape)}")
    return [x], [("constant", c)], {"constant_first": first}, x.shape


@int_op("DIV", "SQUARED_DIFFERENCE")
def pair_table(ctx: LiteCtx) -> tuple[Value, ...]:
    (s1, z1), (s2, z2) = qparams(ctx, ctx.operator.inputs[0]), qparams(ctx, ctx.operator.inputs[1])
    s_out, z_out = qparams(ctx, ctx.operator.outputs[0])
    inputs, weights, config, shape = _pair(ctx)
    if ctx.op == "DIV":
        bounds = fused_range(ctx, (s_out, z_out))
        low, high = bounds["output_min"], bounds["output_max"]
        try:
            table = div_table(s1, z1, s2, z2, s_out, z_out, low, high)
        except Undefined as exc:
            raise ctx.unsupported(f"the int8 division's scales put LiteRT's kernel outside its defined range ({exc})") from None
        config["refused"] = sorted({0, z2})
    else:
        table = squared_difference_table(s1, z1, s2, z2, s_out, z_out)
    config.update(table=table, what=ctx.op)
    return (ctx.layer(INT + "PairLUT", config, inputs, shape, weights=weights, name=ctx.name),)


@int_op("MAXIMUM", "MINIMUM")
def min_max(ctx: LiteCtx) -> tuple[Value, ...]:
    inputs, weights, config, shape = _pair(ctx)
    config["maximum"] = ctx.op == "MAXIMUM"
    return (ctx.layer(INT + "MinMax", config, inputs, shape, weights=weights, name=ctx.name),)


def reduction_axes(ctx: LiteCtx, x: Tensor) -> tuple[list[int], bool, tuple]:
    axes = ctx.const(1, "axes")
    rank = len(x.shape)
    dims = sorted({int(a) % rank for a in np.asarray(axes.array()).reshape(-1)})
    if 0 in dims or any(x.shape[d] is None for d in dims):
        raise ctx.unsupported(f"a reduction over axes {dims} of shape {list(x.shape)}")
    keep = bool(ctx.option("keep_dims", False))
    shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape) if keep or i not in dims)
    return dims, keep, shape


@int_op("SUM", "REDUCE_MAX", "REDUCE_MIN")
def reduce(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    config, shape = reduce_config(ctx, x, io_params(ctx), "int8")
    return (ctx.layer(INT + "Reduce", config, [x], shape, name=ctx.name),)


def reduce_config(ctx: LiteCtx, x: Tensor, io: tuple[tuple[float, int], tuple[float, int]], kind: str,
                  ) -> tuple[dict, tuple]:
    """SUM / REDUCE_MAX / REDUCE_MIN's layer config and output shape, on int8 or uint8 stored integers: SUM is
    the optimized QuantizedMeanOrSum's float32 scale and bias (on uint8 over the raw codes, as LiteRT's
    uint8 instance); MAX / MIN compare stored integers, so they need one scale in and out."""
    (s_in, z_in), (s_out, z_out) = io
    dims, keep, shape = reduction_axes(ctx, x)
    if not dims:
        raise ctx.unsupported(f"a {kind} reduction over no axis")
    config: dict = {"axes": dims, "keepdims": keep, "kind": {"SUM": "sum", "REDUCE_MAX": "max"}.get(ctx.op, "min")}
    if ctx.op == "SUM":
        f32 = np.float32
        count = int(np.prod([x.shape[d] for d in dims]))
        scale = f32(s_in) / f32(s_out)
        config.update(scale=float(scale), bias=float(f32(-z_in) * scale * f32(count)), output_zero_point=z_out)
    elif (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported(f"a {kind} {ctx.op} whose output is quantized unlike its input")
    return config, shape


@int_op("PRELU")
def prelu(ctx: LiteCtx) -> tuple[Value, ...]:
    x, alpha = ctx.tensor(0), ctx.const(1, "alpha")
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    s_a, z_a = qparams(ctx, ctx.operator.inputs[1])
    if alpha.var.dtype.name != "int8" or len(alpha.shape) > len(x.shape) - 1 or \
            any(d not in (1, s) for d, s in zip(alpha.shape[::-1], x.shape[::-1])):
        raise ctx.unsupported(f"a {alpha.var.dtype.name} alpha of shape {list(alpha.shape)} for an input of "
                              f"shape {list(x.shape)}")
    f32 = np.float32
    params = [list(quantize_multiplier(float(f32(s_in)) / float(f32(s_out)))),
              list(quantize_multiplier(float(f32(s_in)) * float(f32(s_a)) / float(f32(s_out))))]
    config = {"input_zero_point": z_in, "alpha_zero_point": z_a, "params": params, "output_zero_point": z_out}
    return (ctx.layer(INT + "Prelu", config, [x], x.shape, weights=[("alpha", alpha)], name=ctx.name),)


@int_op("LOG_SOFTMAX")
def log_softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, _), (s_out, z_out) = io_params(ctx)
    if float(np.float32(s_out)) != 16.0 / 256 or z_out != 127:  # LiteRT's Prepare requires both
        raise ctx.unsupported(f"an output scale {s_out!r} and zero point {z_out} (LiteRT requires 1/16 and 127)")
    config = {"table": softmax_table(s_in, 1.0), "input_scale": s_in, "output_scale": s_out,
              "output_zero_point": z_out}
    return (ctx.layer(INT + "LogSoftmax", config, [x], x.shape, name=ctx.name),)


@int_op("BATCH_MATMUL")
def batch_matmul(ctx: LiteCtx) -> tuple[Value, ...]:
    (s1, z1), (s2, z2) = qparams(ctx, ctx.operator.inputs[0]), qparams(ctx, ctx.operator.inputs[1])
    s_out, z_out = qparams(ctx, ctx.operator.outputs[0])
    adj_x, adj_y = bool(ctx.option("adj_x", False)), bool(ctx.option("adj_y", False))
    a, b = ctx.value(0), ctx.value(1)
    weights: list = []
    config: dict = {"zero_points": [z1, z2], "output_zero_point": z_out, "adj_x": adj_x, "adj_y": adj_y}
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        inputs = [a, b]
    elif isinstance(a, Tensor) and isinstance(b, Const) and b.var.dtype.name == "int8":
        inputs, weights = [a], [("constant", b)]
    else:
        raise ctx.unsupported("int8 operands that are not two tensors, or a tensor and an int8 right-hand constant")
    if ctx.tensors[ctx.operator.outputs[0]].dtype != "int8":
        raise ctx.unsupported(f"a {ctx.tensors[ctx.operator.outputs[0]].dtype} output (int8 is emulated)")
    f32 = np.float32  # GetQuantizedConvolutionMultipler: the float scales' product in double
    config["multiplier"], config["shift"] = quantize_multiplier(float(f32(s1)) * float(f32(s2)) / float(f32(s_out)))
    a_shape = inputs[0].shape
    b_shape = inputs[1].shape if len(inputs) == 2 else b.shape
    rows = a_shape[-1] if adj_x else a_shape[-2]
    cols = b_shape[-2] if adj_y else b_shape[-1]
    shape = (*a_shape[:-2], rows, cols)
    return (ctx.layer(INT + "BatchMatMul", config, inputs, shape, weights=weights, name=ctx.name),)
