"""MediaPipe's custom operators whose semantics a test pins down, registered as ``CUSTOM(name)``.

``Convolution2DTransposeBias`` (mediapipe/util/tflite/operations/transpose_conv_bias.cc): a transposed
convolution with a bias, inputs (input NHWC, weights OHWI, bias O) and options stored raw as
TFLite's C struct ``TfLiteTransposeConvParams``: int32 padding (1 SAME, 2 VALID), stride_width,
stride_height (little-endian; newer TFLite versions append fields, which the op does not read). Its
output size is its own: VALID ``s·(in−1)+k``; SAME ``s·(in−1)+k−p`` with ``p = max(0, k−(in−1) mod s−1)``
cropped ``p // 2`` before and the rest after (not Keras's ``in·s`` when ``in mod s ≠ 0``). So it lowers
to the VALID transposed conv (every output pixel) with its bias, then a Cropping2D.

``MaxPoolingWithArgmax2D`` and ``MaxUnpooling2D`` (max_pool_argmax.cc, max_unpooling.cc: segmentation
models pool with one and scatter back with the other) become the helpers of ``runtime/mediapipe_pool.py``,
whose docstring states their index convention, padding and sizes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from ..map import layouts
from ..spec import TensorRef
from ..tfgraph.base import Tensor, Value
from .base import LiteCtx, lite_op

_PARAMS = struct.Struct("<iii")  # TfLiteTransposeConvParams' first fields: padding, stride_width, stride_height
_PADDINGS = {1: "SAME", 2: "VALID"}  # TfLitePadding (0 is kTfLitePaddingUnknown)
TF = "tf2torch>"  # the layers the pooling operators become (layers/lite_mediapipe.py)


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


# MaxPoolingWithArgmax2D / MaxUnpooling2D (mediapipe/util/tflite/operations/max_pool_argmax.cc,
# max_unpooling.cc): options are TFLite's C struct TfLitePoolParams, raw (the operator's
# custom_options_format says FLEXBUFFERS, its only value, but no flexbuffer is there): int32 padding,
# stride_width, stride_height, filter_width, filter_height, activation, then the `computed` padding the
# kernels never read (2 or 4 more int32, by TFLite version: MediaPipe's hair segmentation has 32 bytes).
_POOL = struct.Struct("<6i")
# TfLiteFusedActivation -> the (low, high) CalculateActivationRange gives a float kernel (None: unbounded).
# Only the ReLUs clamp: for none, tanh, sign bit and sigmoid the kernel applies no function at all.
_CLAMPS: dict[int, tuple[float | None, float | None]] = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0),
                                                          3: (0.0, 6.0), 4: (None, None), 5: (None, None),
                                                          6: (None, None)}


def _pool_params(ctx: LiteCtx, pooling: bool = True) -> tuple[str, tuple[int, int], tuple[int, int],
                                                               tuple[float | None, float | None]]:
    """(SAME / VALID, (stride_h, stride_w), (filter_h, filter_w), the activation's clamp), checked; with
    ``pooling`` False (the unpooling, which reads only strides and filter) padding and activation are not."""
    raw = ctx.operator.custom_options
    if len(raw) < _POOL.size:
        raise ctx.unsupported(f"custom options of {len(raw)} bytes, expected at least {_POOL.size} (TfLitePoolParams: "
                              "padding, stride_width, stride_height, filter_width, filter_height, activation)")
    padding, stride_w, stride_h, filter_w, filter_h, activation = _POOL.unpack_from(raw)
    sizes = (stride_w, stride_h, filter_w, filter_h)
    if pooling and (padding not in _PADDINGS or activation not in _CLAMPS) or not all(1 <= s <= 1 << 16 for s in sizes):
        raise ctx.unsupported(f"padding {padding}, strides ({stride_h}, {stride_w}), filter ({filter_h}, {filter_w}), "
                              f"activation {activation}: expected padding 1 (SAME) or 2 (VALID), positive sizes "
                              "and a TfLiteFusedActivation (0-6)")
    return _PADDINGS.get(padding, ""), (stride_h, stride_w), (filter_h, filter_w), _CLAMPS.get(activation, (None, None))


def _float_nhwc(ctx: LiteCtx, tensors: Sequence[int], what: str) -> None:
    """The kernels take float32 NHWC tensors only (their Prepare refuses anything else)."""
    for i in (i for i in tensors if i >= 0):  # an omitted input (-1) is refused when it is read
        t = ctx.tensors[i]
        if t.dtype != "float32" or len(t.dims) != 4:
            raise ctx.unsupported(f"{what} {t.name!r} is {t.dtype} of rank {len(t.dims)}: the kernel takes float32 NHWC")


@lite_op("CUSTOM(MaxPoolingWithArgmax2D)")
def max_pool_argmax(ctx: LiteCtx) -> tuple[Value, ...]:
    mode, strides, kernel, (low, high) = _pool_params(ctx)
    if len(ctx.operator.inputs) != 1 or len(ctx.operator.outputs) != 2:
        raise ctx.unsupported(f"{len(ctx.operator.inputs)} inputs and {len(ctx.operator.outputs)} outputs, "
                              "expected 1 and 2 (values, indices)")
    _float_nhwc(ctx, (*ctx.operator.inputs, *ctx.operator.outputs), "tensor")
    x = ctx.tensor(0)
    sizes = []
    for size, k, s in zip(x.shape[1:3], kernel, strides):
        out = None if size is None else (size + s - 1) // s if mode == "SAME" else (size - k + s) // s
        if out is not None and out < 1:
            raise ctx.unsupported(f"a {mode} {kernel} window on an input of {list(x.shape)}: no output")
        sizes.append(out)
    shape = (x.shape[0], *sizes, x.shape[3])
    config = {"kernel": list(kernel), "strides": list(strides), "same": mode == "SAME", "low": low, "high": high}
    values = ctx.layer(TF + "MediaPipeMaxPoolArgmax", config, [x], shape, name=ctx.name)
    indices = Tensor(TensorRef(values.ref.layer, 0, 1), shape, values.node)  # the layer's second output
    return values, indices


@lite_op("CUSTOM(MaxUnpooling2D)")
def max_unpooling(ctx: LiteCtx) -> tuple[Value, ...]:
    # its padding and activation fields: the kernel computes its own padding and applies no activation
    _, strides, kernel, _ = _pool_params(ctx, pooling=False)
    if len(ctx.operator.inputs) != 2 or len(ctx.operator.outputs) != 1:
        raise ctx.unsupported(f"{len(ctx.operator.inputs)} inputs and {len(ctx.operator.outputs)} outputs, "
                              "expected 2 (values, indices) and 1")
    _float_nhwc(ctx, (*ctx.operator.inputs, *ctx.operator.outputs), "tensor")
    values, indices = ctx.tensor(0), ctx.tensor(1)
    if values.shape != indices.shape or None in values.shape[1:]:
        # the kernel reads the indices at the values' offsets: a smaller indices tensor is read past its end
        raise ctx.unsupported(f"values of shape {list(values.shape)} and indices {list(indices.shape)}: expected "
                              "the same known sizes")
    shape = (values.shape[0], values.shape[1] * kernel[0], values.shape[2] * kernel[1], values.shape[3])
    config = {"kernel": list(kernel), "strides": list(strides)}
    return (ctx.layer(TF + "MediaPipeMaxUnpool", config, [values, indices], shape, name=ctx.name),)
