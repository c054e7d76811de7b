"""The full-integer int8 REDUCE_PROD layer (``tflite/ops_int_prod.py`` makes it) as the helper
``TFLiteQuantProd`` of ``runtime/lite_int_prod.py``."""

from __future__ import annotations

from .base import Converted, Ctx, Module, TensorInfo
from .lite_int import INT, call_module, config_int, mean_axes
from .registry import converter


@converter(INT + "Prod", wants="keras")
def prod(ctx: Ctx) -> Converted:
    axes, keep, shape = mean_axes(ctx)
    module = Module("TFLiteQuantProd", (tuple(axes), config_int(ctx, "input_zero_point"), config_int(ctx, "multiplier"),
                                        config_int(ctx, "shift"), config_int(ctx, "output_zero_point")),
                    (("keepdim", True),) if keep else ())
    return call_module(module, TensorInfo(shape, "keras"))
