"""TF 1's all-uint8 TRANSPOSE_CONV: uint8 weights with a zero point and one scale, one multiplier for every
channel; a ``tf2torch>LiteUint8ConvTranspose2D`` layer (``layers/lite_uint8.py``) running LiteRT's uint8
``TransposeConvV2`` (``runtime/lite_uint8_spatial.py``). The geometry is the int8 operator's
(``tflite/ops_int_spatial.py``).
"""

from __future__ import annotations

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import int32_bias
from .ops_int_spatial import transposed_conv_operands
from .ops_uint8 import uint8_params
from .ops_uint8_model import UINT8, uint8_range
from .quant_math import quantize_multiplier


@int_op("TRANSPOSE_CONV", dtype="uint8")
def transpose_conv(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(2), ctx.const(1, "filter")  # TRANSPOSE_CONV's data input is its third
    if kernel.var.dtype.name != "uint8":
        raise ctx.unsupported(f"a {kernel.var.dtype.name} filter on a uint8 input")
    (s_in, z_in), (s_w, z_w) = uint8_params(ctx, ctx.operator.inputs[2]), uint8_params(ctx, ctx.operator.inputs[1])
    s_out, z_out = uint8_params(ctx, ctx.operator.outputs[0])
    if len(ctx.tensors[ctx.operator.inputs[1]].quantization.zero_points) > 1:
        raise ctx.unsupported("uint8 transposed-conv weights with more than one zero point")
    config, shape, kernel = transposed_conv_operands(ctx, x, kernel)
    multiplier, shift = quantize_multiplier(s_in * s_w / s_out)  # double, as the kernel's Prepare
    config.update(multiplier=[multiplier] * config["filters"], shift=[shift] * config["filters"],
                  **uint8_range(ctx, (s_out, z_out)), input_zero_point=z_in, output_zero_point=z_out,
                  weight_zero_point=z_w)
    weights = [("kernel", kernel), *int32_bias(ctx, 3)]
    return (ctx.layer(UINT8 + "ConvTranspose2D", config, [x], shape, weights=weights, name=ctx.name),)
