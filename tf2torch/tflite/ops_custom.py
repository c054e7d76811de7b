"""MediaPipe's custom operators whose semantics a test pins down, registered as ``CUSTOM(name)``.

``Convolution2DTransposeBias`` (mediapipe/util/tflite/operations/transpose_conv_bias.cc): a transposed
convolution with a bias, inputs (input NHWC, weights OHWI, bias O) and options stored raw as
TFLite's C struct ``TfLiteTransposeConvParams``: int32 padding (1 SAME, 2 VALID), stride_width,
stride_height (little-endian; newer TFLite versions append fields, which the op does not read). Its
output size is its own: VALID ``s·(in−1)+k``; SAME ``s·(in−1)+k−p`` with ``p = max(0, k−(in−1) mod s−1)``
cropped ``p // 2`` before and the rest after (not Keras's ``in·s`` when ``in mod s ≠ 0``). So it lowers
to the VALID transposed conv (every output pixel) with its bias, then a Cropping2D.
"""

from __future__ import annotations

import struct

import numpy as np

from ..map import layouts
from ..tfgraph.base import Value
from .base import LiteCtx, lite_op

_PARAMS = struct.Struct("<iii")  # TfLiteTransposeConvParams' first fields: padding, stride_width, stride_height
_PADDINGS = {1: "SAME", 2: "VALID"}  # TfLitePadding (0 is kTfLitePaddingUnknown)


@lite_op("CUSTOM(Convolution2DTransposeBias)")
def conv2d_transpose_bias(ctx: LiteCtx) -> tuple[Value, ...]:
    raw = ctx.operator.custom_options
    if len(raw) < _PARAMS.size:
        raise ctx.unsupported(f"custom options of {len(raw)} bytes, expected at least {_PARAMS.size} "
                              "(padding, stride_width, stride_height)")
    padding, stride_w, stride_h = _PARAMS.unpack_from(raw)
    if padding not in _PADDINGS or not 1 <= stride_w <= 1 << 16 or not 1 <= stride_h <= 1 << 16:
        raise ctx.unsupported(f"padding {padding}, strides ({stride_h}, {stride_w}): expected padding 1 (SAME) or "
                              "2 (VALID) and positive strides")
    x, kernel = ctx.tensor(0), ctx.const(1, "weights")
    if len(x.shape) != 4 or x.shape[1] is None or x.shape[2] is None or len(kernel.shape) != 4:
        raise ctx.unsupported(f"an input of shape {list(x.shape)} and weights {list(kernel.shape)}: expected NHWC "
                              "with known sizes and (O, H, W, I) weights")
    full, crops = [], []
    for size, k, s in ((x.shape[1], kernel.shape[1], stride_h), (x.shape[2], kernel.shape[2], stride_w)):
        crop = max(0, k - (size - 1) % s - 1) if _PADDINGS[padding] == "SAME" else 0
        full.append(s * (size - 1) + k)
        crops.append([crop // 2, crop - crop // 2])  # the kernel's pad_height = crop / 2 before, the rest after
    shape = ctx.folded(np.array([x.shape[0] or 1, *full, kernel.shape[0]], dtype=np.int32))
    kernel = ctx.relayout(kernel, layouts.get("tflite_conv2d_transpose"))
    attrs = {"padding": "VALID", "strides": [1, stride_h, stride_w, 1], "data_format": "NHWC"}
    (y,) = ctx.tf("Conv2DBackpropInput", [shape, kernel, x], attrs)  # every output pixel, then the crop
    y = ctx.bias(y, 2)  # type: ignore[arg-type]  (per channel: the same before or after the crop)
    if not any(a or b for a, b in crops):
        return (y,)
    out = (y.shape[0], *(f - a - b for f, (a, b) in zip(full, crops)), y.shape[3])
    return (ctx.layer("Cropping2D", {"cropping": crops, "data_format": "channels_last"}, [y], out,
                      name=f"{ctx.name}/crop"),)
