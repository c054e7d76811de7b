"""uint8 tensors in full-integer models: the ends TF 2's converter writes for ``inference_input_type`` /
``inference_output_type`` ``tf.uint8`` (QUANTIZE uint8 -> int8 after the input, int8 -> uint8 before the
output: LiteRT's ``Requantize``), QUANTIZE float -> uint8 and DEQUANTIZE uint8 -> float. TF 1's all-uint8
models (uint8 weights and activations throughout): ``tflite/ops_uint8_model.py``.
"""

from __future__ import annotations

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import INT, qparams
from .ops_int16 import INT16
from .ops_int16_act import requantize


def uint8_params(ctx: LiteCtx, t_index: int) -> tuple[float, int]:
    """(scale, zero point) of a per-tensor uint8 tensor."""
    t = ctx.tensors[t_index]
    q = t.quantization
    if len(q.scales) != 1:
        raise ctx.unsupported(f"tensor {t.name!r} has {len(q.scales)} scales (expected one)")
    scale, zero = float(q.scales[0]), int(q.zero_points[0] if q.zero_points else 0)
    if not (0 < scale < float("inf")) or not 0 <= zero <= 255:
        raise ctx.unsupported(f"tensor {t.name!r} has scale {scale!r}, zero point {zero} (a uint8 tensor needs a "
                              "positive finite scale, a zero point in [0, 255]); the file is corrupt")
    return scale, zero


def _params(ctx: LiteCtx, t_index: int) -> tuple[float, int]:
    return uint8_params(ctx, t_index) if ctx.tensors[t_index].dtype == "uint8" else qparams(ctx, t_index)


@int_op("QUANTIZE", "DEQUANTIZE", dtype="uint8")
def quantize(ctx: LiteCtx) -> tuple[Value, ...]:
    src, dst = ctx.input_tensor(0), ctx.tensors[ctx.operator.outputs[0]]
    i, o = ctx.operator.inputs[0], ctx.operator.outputs[0]
    x = ctx.tensor(0)
    if ctx.op == "QUANTIZE" and {src.dtype, dst.dtype} <= {"uint8", "int8"}:
        return requantize(ctx, _params(ctx, i), _params(ctx, o), dst.dtype)
    if ctx.op == "QUANTIZE" and src.dtype == "float32" and dst.dtype == "uint8":
        scale, zero = uint8_params(ctx, o)
        return (ctx.layer(INT16 + "QuantizeTo", {"scale": scale, "zero_point": zero, "dtype": "uint8"}, [x], x.shape,
                          name=ctx.name),)
    if ctx.op == "DEQUANTIZE" and src.dtype == "uint8" and dst.dtype == "float32":
        scale, zero = uint8_params(ctx, i)  # LiteRT's float32 q * scale + (-zero point * scale), as for int8
        return (ctx.layer(INT + "Quantize", {"scale": scale, "zero_point": zero, "dequantize": True}, [x], x.shape,
                          name=ctx.name),)
    raise ctx.unsupported(f"{ctx.op} {src.dtype} -> {dst.dtype}")
