"""AutoContrast: the per-image, per-channel contrast stretch Keras applies at inference too.

``keras/src/layers/preprocessing/image_preprocessing/auto_contrast.py``: the image mapped from
``value_range`` to [0, 255] (skipped when it is [0, 255]), each channel's min and max over the image's
height and width, ``x * (255 / (max - min)) - min * scale`` clipped to [0, 255], mapped back, and a NaN
result (a constant channel gives 0 * inf, a NaN pixel NaN bounds) replaced by the input; float32 out.
The arithmetic is ``runtime/preprocessing.KerasAutoContrast``'s, step for step.
"""

from __future__ import annotations

import numpy as np

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import channels_last, torch_axis
from .preprocessing import float32_policy
from .registry import converter


@converter("AutoContrast", wants="any")
def auto_contrast(ctx: Ctx) -> Converted:
    channels_last(ctx)  # Keras takes min and max over axes (1, 2) whatever the data_format
    float32_policy(ctx)
    if ctx.x.rank != 4 or ctx.x.layout == "cf_flat":
        raise ctx.unsupported(f"a rank-{ctx.x.rank} input (images are (N, H, W, C))")
    value = ctx.config.get("value_range", [0, 255])
    if not isinstance(value, list) or len(value) != 2 or \
            any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
        raise ctx.unsupported(f"value_range should be two numbers, found {value!r}")
    low, high = sorted(value)  # Keras sorts it
    rescale = not (low == 0 and high == 255)  # Keras compares the range with (0, 255) before any cast
    with np.errstate(over="ignore", invalid="ignore"):
        f_low, f_high = np.float32(low), np.float32(high)
        span = float(f_high - f_low)  # Keras: cast(high) - cast(low), in float32
    if rescale and not (np.isfinite(span) and span > 0):
        raise ctx.unsupported(f"value_range {value!r}: an empty or infinite range")
    dims = (torch_axis(1, ctx.x), torch_axis(2, ctx.x))
    op = Op(n.call(n.M, n.X), Module("KerasAutoContrast", (float(f_low), span, dims, rescale)))
    return Converted((op,), (TensorInfo(ctx.x.shape, ctx.x.layout),), helpers=("KerasAutoContrast",))
