"""16x8 activations and the ends of a 16x8 model: RELU / RELU6 / RELU_N1_TO_1, SOFTMAX,
QUANTIZE (float -> int16, int16 -> int16 / int8) and DEQUANTIZE (int16 -> float), each a
``tf2torch>LiteInt16*`` layer (``layers/lite_int16.py``) running LiteRT's kernel (``runtime/lite_int16*.py``).

LOGISTIC and TANH on int16 are refused (no converter: ``tflite/lower.py`` names them): LiteRT interpolates a
fixed 256-entry table of sigmoid(k / 24) whose entries are not the rounded values (35493 where 65536 *
sigmoid(4 / 24) is 35492.36); tf2torch computes its tables rather than copying LiteRT's, and this one could
not be computed.
"""

from __future__ import annotations

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import INT, qparams
from .ops_int16 import INT16, scale16
from .quant_math import activation_range, quantize_multiplier, relu_quotient
from .quant_math16 import activation_range16, softmax16_params

_RELUS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1"}


def requantize(ctx: LiteCtx, src: tuple[float, int], dst: tuple[float, int], dtype: str, activation: str = "NONE"
               ) -> tuple[Value, ...]:
    """An integer tensor onto ``dst``'s scale and zero point, as ``dtype`` (LiteRT's ``Requantize`` /
    ``ReluX``: multiplier input scale / output scale, clamped to ``activation``'s range)."""
    x = ctx.tensor(0)
    if dtype == "int16":
        low, high = activation_range16(activation, dst[0])
    elif dtype == "int8":
        low, high = activation_range(activation, *dst)
    else:  # uint8 (no activation here: QUANTIZE only)
        low, high = 0, 255
    # ReluPrepare divides the scales in float32, QUANTIZE's Prepare in double (quant_math.relu_quotient)
    multiplier, shift = quantize_multiplier(src[0] / dst[0] if ctx.op == "QUANTIZE" else relu_quotient(src[0], dst[0]))
    config = {"input_zero_point": src[1], "multiplier": multiplier, "shift": shift, "output_zero_point": dst[1],
              "output_min": low, "output_max": high, "dtype": dtype}
    return (ctx.layer(INT16 + "Requantize", config, [x], x.shape, name=ctx.name),)


@int_op("RELU", "RELU6", "RELU_N1_TO_1", dtype="int16")
def relu(ctx: LiteCtx) -> tuple[Value, ...]:
    src, dst = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    return requantize(ctx, (src, 0), (dst, 0), "int16", _RELUS[ctx.op])


@int_op("QUANTIZE", "DEQUANTIZE", dtype="int16")
def quantize(ctx: LiteCtx) -> tuple[Value, ...]:
    src, dst = ctx.input_tensor(0), ctx.tensors[ctx.operator.outputs[0]]
    x = ctx.tensor(0)
    if ctx.op == "QUANTIZE" and src.dtype == "int16" and dst.dtype in ("int16", "int8"):
        s_in = scale16(ctx, ctx.operator.inputs[0])
        out = (scale16(ctx, ctx.operator.outputs[0]), 0) if dst.dtype == "int16" else qparams(ctx, ctx.operator.outputs[0])
        return requantize(ctx, (s_in, 0), out, dst.dtype)
    if ctx.op == "QUANTIZE" and src.dtype == "float32" and dst.dtype == "int16":
        config = {"scale": scale16(ctx, ctx.operator.outputs[0]), "zero_point": 0, "dtype": "int16"}
        return (ctx.layer(INT16 + "QuantizeTo", config, [x], x.shape, name=ctx.name),)
    if ctx.op == "DEQUANTIZE" and src.dtype == "int16" and dst.dtype == "float32":
        # LiteRT's DEQUANTIZE: q * scale + (-zero point * scale) in float32, whatever q's width (int8's layer)
        config = {"scale": scale16(ctx, ctx.operator.inputs[0]), "zero_point": 0, "dequantize": True}
        return (ctx.layer(INT + "Quantize", config, [x], x.shape, name=ctx.name),)
    raise ctx.unsupported(f"{ctx.op} {src.dtype} -> {dst.dtype}")


@int_op("SOFTMAX", dtype="int16")
def softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    s_in, s_out = scale16(ctx, ctx.operator.inputs[0]), scale16(ctx, ctx.operator.outputs[0])
    if s_out != 2.0 ** -15:  # the kernel's outputs are Q0.15 whatever the scale says; TF's converter writes 2**-15
        raise ctx.unsupported(f"an int16 SOFTMAX with output scale {s_out!r} (2**-15 is emulated)")
    multiplier, shift, exp_table, reciprocal_table = softmax16_params(s_in, float(ctx.option("beta", 1.0)))
    config = {"input_multiplier": multiplier, "input_shift": shift, "exp_table": exp_table,
              "reciprocal_table": reciprocal_table}
    return (ctx.layer(INT16 + "Softmax", config, [x], x.shape, name=ctx.name),)
