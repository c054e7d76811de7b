"""Image preprocessing layers users keep inside models: Resizing and CenterCrop (inference behaviour).

Resizing runs ``tf.image.resize`` on TF's half-pixel grid without antialiasing: torch's bilinear with
align_corners=False, and for nearest its "nearest-exact" mode (both sample at pixel centres; plain
"nearest" floors i * scale and differs at non-integer factors). Cropping or padding to the aspect
ratio, antialiasing and other interpolations are refused.
"""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Op, TensorInfo
from .common import cfg_int, channels_last, spatial
from .registry import converter


@converter("Resizing", wants="cf")
def resizing(ctx: Ctx) -> Converted:
    channels_last(ctx)
    if ctx.x.rank != 4:
        raise ctx.unsupported(f"resizing a rank-{ctx.x.rank} tensor (images are (N, H, W, C))")
    height, width = cfg_int(ctx, "height"), cfg_int(ctx, "width")
    mode = ctx.config.get("interpolation", "bilinear")
    for key in ("crop_to_aspect_ratio", "pad_to_aspect_ratio", "antialias"):
        if ctx.config.get(key):
            raise ctx.unsupported(f"{key}=True is not converted")
    torch_mode = {"bilinear": {"mode": "bilinear", "align_corners": False}, "nearest": {"mode": "nearest-exact"}}.get(mode)
    if torch_mode is None:
        raise ctx.unsupported(f"interpolation {mode!r} (bilinear and nearest are converted)")
    op = Op(n.call("F.interpolate", n.X, size=(height, width), **torch_mode))
    return Converted((op,), (TensorInfo((height, width, ctx.x.shape[-1]), "cf"),))


@converter("CenterCrop", wants="cf")
def center_crop(ctx: Ctx) -> Converted:
    channels_last(ctx)
    height, width = cfg_int(ctx, "height"), cfg_int(ctx, "width")
    h, w = spatial(ctx.x)
    if h is None or w is None or h < height or w < width:
        raise ctx.unsupported(f"center-cropping {h}x{w} to {height}x{width}: the input must be at least as large "
                              "(a smaller input is resized by Keras, which is not converted)")
    top, left = (h - height) // 2, (w - width) // 2
    op = Op(n.X[:, :, top:top + height, left:left + width])
    return Converted((op,), (TensorInfo((height, width, ctx.x.shape[-1]), "cf"),))
