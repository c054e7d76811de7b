"""TFLite's dynamic-range BATCH_MATMUL (``tflite/ops_quant_bmm.py`` makes it) as the helper
``TFLiteHybridBatchMatMul`` (``runtime/lite_quant_bmm.py``): the file's int8 right-hand side, kept in TF's
layout (the module takes its input in TF's axis order), and its one scale as a float32 buffer."""

from __future__ import annotations

import numpy as np

from ..map import layouts
from .base import Converted, Ctx, Module, Param, TensorInfo
from .common import apply_module, bind, param
from .registry import converter


@converter("tf2torch>LiteHybridBatchMatMul", wants="keras")
def hybrid_batch_matmul(ctx: Ctx) -> Converted:
    w = bind(ctx, ["kernel"])["kernel"]
    adj_x, adj_y = bool(ctx.config.get("adj_x")), bool(ctx.config.get("adj_y"))
    scales = ctx.config.get("weight_scale")
    if not isinstance(scales, list) or len(scales) != 1 or not isinstance(scales[0], float) or not scales[0] > 0:
        raise ctx.unsupported(f"weight scales {str(scales)[:60]} (one positive scale is emulated)")
    a, b = ctx.x.shape, tuple(w.shape)
    if len(a) < 2 or len(b) < 2:
        raise ctx.unsupported(f"operands of shapes {a} and {b}")
    shape = (*a[:-2], a[-1] if adj_x else a[-2], b[-2] if adj_y else b[-1])
    kwargs = (("adj_x", True),) * adj_x + (("adj_y", True),) * adj_y
    module = Module("TFLiteHybridBatchMatMul", (b,), kwargs)
    params = (param("", "weight", w), Param("", "weight_scale", layouts.IDENTITY,
                                            const=np.asarray(scales, dtype=np.float32)))
    return Converted((apply_module(module),), (TensorInfo(shape, "keras"),), params, helpers=(module.cls,))
