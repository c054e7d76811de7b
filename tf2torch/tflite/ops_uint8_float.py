"""TF 1's all-uint8 models: the uint8 kernels LiteRT computes in float32 on the raw uint8 values —
LOG_SOFTMAX (the optimized kernel's table of expf) and a CONCATENATION whose inputs are quantized unlike its
output (``ConcatenationWithScaling``: each such input requantized, then the values moved). The raw values
matter (float32 rounds otherwise on q - 128), so the modules take uint8 as it is (``runtime/lite_uint8_spatial.py``,
``runtime/lite_uint8.py``); measured equal to LiteRT in tests/tflite/test_uint8_tf1.py.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Tensor, Value
from .base import LiteCtx, int_op
from .ops_uint8 import uint8_params
from .quant_math import softmax_table

UINT8 = "tf2torch>LiteUint8"


@int_op("LOG_SOFTMAX", dtype="uint8")
def log_softmax(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, _), (s_out, z_out) = (uint8_params(ctx, i) for i in (ctx.operator.inputs[0], ctx.operator.outputs[0]))
    if float(np.float32(s_out)) != 16.0 / 256 or z_out != 255:  # LiteRT's Prepare requires both on uint8
        raise ctx.unsupported(f"an output scale {s_out!r} and zero point {z_out} (LiteRT requires 1/16 and 255)")
    config = {"table": softmax_table(s_in, 1.0), "input_scale": s_in, "output_scale": s_out, "output_zero_point": z_out}
    return (ctx.layer(UINT8 + "LogSoftmax", config, [x], x.shape, name=ctx.name),)


@int_op("CONCATENATION", dtype="uint8")
def concatenation(ctx: LiteCtx) -> tuple[Value, ...]:
    """Inputs quantized as the output are moved as they are; the others first become round(q * scale + bias)
    + output zero point, clamped (float32: scale = input scale * (1 / output scale), bias = -input zero point *
    scale; LiteRT's ``ConcatenationWithScaling``)."""
    if ctx.option("fused_activation_function", "NONE") != "NONE":
        raise ctx.unsupported(f"a fused activation {ctx.option('fused_activation_function')} on a uint8 concatenation")
    s_out, z_out = uint8_params(ctx, ctx.operator.outputs[0])
    f32 = np.float32
    inputs: list[Value] = []
    for k, (i, value) in enumerate(zip(ctx.operator.inputs, ctx.inputs)):
        s_in, z_in = uint8_params(ctx, i)
        if (s_in, z_in) != (s_out, z_out):
            if not isinstance(value, Tensor):
                raise ctx.unsupported(f"a constant input {k} quantized unlike the uint8 concatenation's output")
            scale = f32(s_in) * (f32(1) / f32(s_out))
            config = {"scale": float(scale), "bias": float(f32(-z_in) * scale), "output_zero_point": z_out}
            value = ctx.layer(UINT8 + "Requantize", config, [value], value.shape, name=f"{ctx.name}/requantize_{k}")
        inputs.append(value)
    (y,) = ctx.tf("ConcatV2", [*inputs, ctx.folded(np.int32(ctx.option("axis", 0)))])
    return (y,)
