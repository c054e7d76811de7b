"""A dynamic-range (hybrid) BATCH_MATMUL: a float left-hand side times an int8 constant with one scale, as
the ``tf2torch>LiteHybridBatchMatMul`` layer (``layers/lite_quant_bmm.py``), emulating LiteRT's on-the-fly
quantization of each row (``runtime/lite_quant_bmm.py``). ``tflite/quant.py`` lets only that form through."""

from __future__ import annotations

from ..tfgraph.base import Const, Value
from .base import LiteCtx
from .quant import HINT, weight_scales


def is_hybrid(ctx: LiteCtx) -> bool:
    """An int8 constant right-hand side (not with --dequantize, where it arrives as float32)."""
    value = ctx.value(1)
    return not ctx.dequantize and isinstance(value, Const) and value.var.dtype.name == "int8"


def hybrid_batch_matmul(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(0), ctx.const(1, "weights")
    adj_x, adj_y = bool(ctx.option("adj_x", False)), bool(ctx.option("adj_y", False))
    scales = weight_scales(ctx.input_tensor(1), 1)
    if len(kernel.shape) < 2 or len(kernel.shape) > len(x.shape):
        raise ctx.unsupported(f"int8 weights of shape {list(kernel.shape)} for an input of shape {list(x.shape)}")
    if adj_x:  # measured (tests/tflite/test_hybrid_math.py): 0.5-1.0 relative from the product, XNNPACK 1e-2
        raise ctx.unsupported("a hybrid BATCH_MATMUL with adj_x: LiteRT's builtin kernel does not compute the "
                              "product there (measured), so there is nothing to match", HINT)
    if not ctx.option("asymmetric_quantize_inputs", False):  # what TF's converter writes; the other: not measured
        raise ctx.unsupported("a hybrid BATCH_MATMUL with symmetric input quantization (not emulated)", HINT)
    config = {"adj_x": adj_x, "adj_y": adj_y, "weight_scale": scales}
    rows = x.shape[-1] if adj_x else x.shape[-2]
    cols = kernel.shape[-2] if adj_y else kernel.shape[-1]
    shape = (*x.shape[:-2], rows, cols)
    return (ctx.layer("tf2torch>LiteHybridBatchMatMul", config, [x], shape, weights=[("kernel", kernel)],
                      name=ctx.name),)
