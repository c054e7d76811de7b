"""TF 1's all-uint8 models: the standalone activations TF 1's converter leaves unfused (a RELU after a
CONCATENATION or a MEAN; TANH shares LOGISTIC's table converter) and SUB of two uint8 tensors. Like ``tflite/ops_uint8_model.py``, each reuses
an int8 layer's parameters written for q - 128 (every zero point and clamp bound lowered by 128: the int8
kernel's arithmetic on uint8, ``runtime/lite_uint8.py``), measured equal to LiteRT's uint8 kernels in
tests/tflite/test_uint8_tf1.py.
"""

from __future__ import annotations

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int_act import RELU_ACTIVATIONS
from .ops_uint8 import uint8_params
from .quant_math import activation_range, quantize_multiplier, relu_quotient

UINT8 = "tf2torch>LiteUint8"


@int_op("RELU", "RELU6", "RELU_N1_TO_1", dtype="uint8")
def relu(ctx: LiteCtx) -> tuple[Value, ...]:
    """LiteRT's uint8 ``QuantizedReluX``: (q - input zero point) rescaled by input / output scale, plus the
    output zero point, clamped to the activation's bounds (the int8 rule with zero points lowered by 128)."""
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = uint8_params(ctx, ctx.operator.inputs[0]), uint8_params(ctx, ctx.operator.outputs[0])
    low, high = activation_range(RELU_ACTIVATIONS[ctx.op], s_out, z_out - 128)
    multiplier, shift = quantize_multiplier(relu_quotient(s_in, s_out))  # (a float32 division, as ReluPrepare's)
    config = {"input_zero_point": z_in - 128, "multiplier": multiplier, "shift": shift,
              "output_zero_point": z_out - 128, "output_min": low, "output_max": high}
    return (ctx.layer(UINT8 + "Rescale", config, [x], x.shape, name=ctx.name),)
