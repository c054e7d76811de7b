"""Full-integer int8 activations and the ends of an integer model: RELU*, HARD_SWISH, LEAKY_RELU, SOFTMAX,
LOGISTIC / TANH (LiteRT's lookup tables), QUANTIZE / DEQUANTIZE; each a ``tf2torch>LiteInt*`` layer running the
kernel in ``runtime/lite_int_act.py`` with the parameters LiteRT's ``Prepare`` computes (``tflite/quant_math.py``).
The shared helpers and the arithmetic operators are ``tflite/ops_int.py``'s.
"""

from __future__ import annotations

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import INT, io_params, qparams
from .quant_math import (
    activation_range,
    hard_swish_params,
    leaky_relu_params,
    lut,
    quantize_multiplier,
    relu_quotient,
    softmax_table,
)

RELU_ACTIVATIONS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1", "QUANTIZE": "NONE"}


def _rescale(ctx: LiteCtx, activation: str) -> tuple[Value, ...]:
    """An int8 tensor onto its output's scale and zero point, clamped to ``activation``'s range
    (LiteRT's ``QuantizedReluX`` / ``Requantize``: multiplier input scale / output scale, divided in float32
    by ReluPrepare and in double by QUANTIZE's Prepare: ``relu_quotient``)."""
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    low, high = activation_range(activation, s_out, z_out)
    multiplier, shift = quantize_multiplier(s_in / s_out if ctx.op == "QUANTIZE" else relu_quotient(s_in, s_out))
    config = {"input_zero_point": z_in, "multiplier": multiplier, "shift": shift, "output_zero_point": z_out,
              "output_min": low, "output_max": high}
    return (ctx.layer(INT + "Rescale", config, [x], x.shape, name=ctx.name),)


@int_op("RELU", "RELU6", "RELU_N1_TO_1")
def relu(ctx: LiteCtx) -> tuple[Value, ...]:
    return _rescale(ctx, RELU_ACTIVATIONS[ctx.op])


@int_op("HARD_SWISH")
def hard_swish(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    out_m, out_e, rel_m, rel_e = hard_swish_params(s_in, s_out)
    if out_e > 0:  # LiteRT's Prepare requires a right shift on the output
        raise ctx.unsupported(f"an output multiplier exponent {out_e} (LiteRT refuses it too)")
    config = {"input_zero_point": z_in, "output_zero_point": z_out, "output_multiplier": out_m,
              "output_exponent": out_e, "reluish_multiplier": rel_m, "reluish_exponent": rel_e}
    return (ctx.layer(INT + "HardSwish", config, [x], x.shape, name=ctx.name),)


@int_op("LEAKY_RELU")
def leaky_relu(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    identity, alpha = leaky_relu_params(s_in, s_out, float(ctx.option("alpha", 0.2)))
    config = {"input_zero_point": z_in, "params": [list(identity), list(alpha)], "output_zero_point": z_out}
    return (ctx.layer(INT + "LeakyRelu", config, [x], x.shape, name=ctx.name),)


@int_op("SOFTMAX")
def softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, _), (s_out, z_out) = io_params(ctx)
    beta = float(ctx.option("beta", 1.0))
    config = {"table": softmax_table(s_in, beta), "output_scale": s_out, "output_zero_point": z_out}
    return (ctx.layer(INT + "Softmax", config, [x], x.shape, name=ctx.name),)


@int_op("QUANTIZE", "DEQUANTIZE")
def quantize(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    src, dst = ctx.input_tensor(0), ctx.tensors[ctx.operator.outputs[0]]
    if ctx.op == "QUANTIZE" and src.dtype == "int8" and dst.dtype == "int8":
        return _rescale(ctx, "NONE")
    if ctx.op == "DEQUANTIZE":
        if src.dtype != "int8" or dst.dtype != "float32":
            raise ctx.unsupported(f"DEQUANTIZE {src.dtype} -> {dst.dtype}")
        scale, zero = qparams(ctx, ctx.operator.inputs[0])
    else:
        if src.dtype != "float32" or dst.dtype != "int8":
            raise ctx.unsupported(f"QUANTIZE {src.dtype} -> {dst.dtype} (a requantization)")
        scale, zero = qparams(ctx, ctx.operator.outputs[0])
    config = {"scale": scale, "zero_point": zero, "dequantize": ctx.op == "DEQUANTIZE"}
    return (ctx.layer(INT + "Quantize", config, [x], x.shape, name=ctx.name),)


@int_op("LOGISTIC", "TANH")
def table(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    config = {"table": lut(ctx.op, s_in, z_in, s_out, z_out)}
    return (ctx.layer(INT + "LUT", config, [x], x.shape, name=ctx.name),)
