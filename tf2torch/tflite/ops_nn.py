"""TFLite operators with weights or windows: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED,
the pools.

Each reads its kernel into TF's layout (the layout table's ``tflite_*`` entries: OHWI convolutions,
1HW(C*M) depthwise kernels, [out, in] fully-connected weights) and lowers the TF op it came from, so
SAME padding goes through the one SAME policy as for any TF graph; then the fused bias and the fused
activation.
"""

from __future__ import annotations

import math

from ..map import layouts
from ..tfgraph.base import Const, ShapeVec, Tensor, Value
from ..tfgraph.ops_nn import out_size
from .base import LiteCtx, lite_op
from .ops_int_spatial import hybrid_transpose_conv
from .quant import weight_scales

HYBRID = "tf2torch>LiteHybrid"  # the layers of layers/lite_quant.py


def _int8(kernel: Const) -> bool:
    """int8 weights on a float input: a dynamic-range (hybrid) operator (``tflite/quant.py`` let it through)."""
    return kernel.var.dtype.name == "int8"


def _hybrid_conv(ctx: LiteCtx, kind: str, x: Tensor, kernel: Const, config: dict) -> Tensor:
    """A hybrid CONV_2D / DEPTHWISE_CONV_2D as one layer: the int8 kernel (in TF's layout), its scales,
    the fused bias; then the fused activation, as for the float operator."""
    window = _window(ctx)
    dilations = _dilations(ctx)
    kh, kw = kernel.shape[:2]
    channels = config.get("filters") or x.shape[-1] * config["depth_multiplier"]
    config = {**config, "kernel_size": [kh, kw], "strides": window["strides"][1:3],
              "padding": window["padding"].lower(), "dilation_rate": dilations[1:3], "activation": "linear",
              "data_format": "channels_last", "weight_scale": weight_scales(ctx.input_tensor(1), channels)}
    weights = [("kernel", kernel)]
    bias = ctx.optional(2)
    config["use_bias"] = bias is not None
    if bias is not None:
        weights.append(("bias", bias))
    shape = (x.shape[0], *(out_size(s, k, st, d, window["padding"]) for s, k, st, d in
                           zip(x.shape[1:3], (kh, kw), window["strides"][1:3], dilations[1:3])), channels)
    return ctx.layer(HYBRID + kind, config, [x], shape, weights=weights, name=ctx.name)


def _window(ctx: LiteCtx) -> dict:
    padding = ctx.option("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise ctx.unsupported(f"padding {padding}")
    return {"padding": padding, "strides": [1, ctx.option("stride_h", 1), ctx.option("stride_w", 1), 1],
            "data_format": "NHWC"}


def _dilations(ctx: LiteCtx) -> list[int]:
    return [1, ctx.option("dilation_h_factor", 1), ctx.option("dilation_w_factor", 1), 1]


def _padded(ctx: LiteCtx, x: Tensor) -> Tensor:
    """A dilated conv put back from SPACE_TO_BATCH_ND (``atrous.py``): its paddings, before the conv."""
    pads = ctx.option("atrous_pad")
    if not pads or not any(a or b for a, b in pads):
        return x
    shape = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:3], pads)), x.shape[3])
    return ctx.layer("ZeroPadding2D", {"padding": pads, "data_format": "channels_last"}, [x], shape,
                     name=f"{ctx.name}/pad")


def _cropped(ctx: LiteCtx, y: Tensor) -> Tensor:
    """... and BATCH_TO_SPACE_ND's crops after it (after the bias and activation, which commute with a crop)."""
    crops = ctx.option("atrous_crop")
    if not crops or not any(a or b for a, b in crops):
        return y
    shape = (y.shape[0], *(None if s is None else s - a - b for s, (a, b) in zip(y.shape[1:3], crops)), y.shape[3])
    return ctx.layer("Cropping2D", {"cropping": crops, "data_format": "channels_last"}, [y], shape,
                     name=f"{ctx.name}/crop")


@lite_op("CONV_2D")
def conv_2d(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = _padded(ctx, ctx.tensor(0)), ctx.const(1, "filter")
    if len(kernel.shape) != 4:
        raise ctx.unsupported(f"a filter of shape {list(kernel.shape)} (expected (O, H, W, I))")
    hybrid = _int8(kernel)
    kernel = ctx.relayout(kernel, layouts.get("tflite_conv2d"))
    if hybrid:
        if x.shape[-1] != kernel.shape[2]:
            raise ctx.unsupported(f"a grouped hybrid convolution ({kernel.shape[2]} of {x.shape[-1]} channels per group)")
        y = _hybrid_conv(ctx, "Conv2D", x, kernel, {"filters": kernel.shape[3], "groups": 1})
        return (_cropped(ctx, ctx.activation(y)),)
    (y,) = ctx.tf("Conv2D", [x, kernel], {**_window(ctx), "dilations": _dilations(ctx)})
    return (_cropped(ctx, ctx.activation(ctx.bias(y, 2))),)  # type: ignore[arg-type]


@lite_op("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = _padded(ctx, ctx.tensor(0)), ctx.const(1, "filter")
    channels = x.shape[-1]
    # TFLite's kernel is (1, H, W, C*M): the multiplier is read from the sizes (the option may be stale).
    if channels is None or len(kernel.shape) != 4 or kernel.shape[0] != 1 or kernel.shape[3] % channels:
        raise ctx.unsupported(f"a depthwise filter of shape {list(kernel.shape)} on a {channels}-channel input")
    hybrid = _int8(kernel)
    kernel = ctx.relayout(kernel, layouts.tflite_depthwise(channels))
    if hybrid:
        y = _hybrid_conv(ctx, "DepthwiseConv2D", x, kernel, {"depth_multiplier": kernel.shape[3]})
        return (_cropped(ctx, ctx.activation(y)),)
    (y,) = ctx.tf("DepthwiseConv2dNative", [x, kernel], {**_window(ctx), "dilations": _dilations(ctx)})
    return (_cropped(ctx, ctx.activation(ctx.bias(y, 2))),)  # type: ignore[arg-type]


@lite_op("TRANSPOSE_CONV")
def transpose_conv(ctx: LiteCtx) -> tuple[Value, ...]:
    # Inputs: output_shape (an int32 vector: a constant, or computed from the input's shape when the batch
    # is dynamic), weights (O, H, W, I), the input, an optional bias.
    sizes, kernel, x = ctx.value(0), ctx.const(1, "filter"), ctx.tensor(2)
    if not isinstance(sizes, (Const, ShapeVec)):
        raise ctx.unsupported("an output shape computed at run time from something other than the input's shape")
    if len(kernel.shape) != 4:
        raise ctx.unsupported(f"a filter of shape {list(kernel.shape)} (expected (O, H, W, I))")
    if _int8(kernel):  # dynamic-range: LiteRT's HybridTransposeConv (tflite/ops_int_spatial.py)
        return (ctx.activation(hybrid_transpose_conv(ctx, x, kernel)),)
    kernel = ctx.relayout(kernel, layouts.get("tflite_conv2d_transpose"))
    (y,) = ctx.tf("Conv2DBackpropInput", [sizes, kernel, x], _window(ctx))
    return (ctx.activation(ctx.bias(y, 3)),)  # type: ignore[arg-type]


@lite_op("FULLY_CONNECTED")
def fully_connected(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    if ctx.option("weights_format", 0) != 0:
        raise ctx.unsupported("shuffled int8 weights (weights_format SHUFFLED4x16INT8)")
    kernel = ctx.const(1, "weights")
    if len(kernel.shape) != 2:
        raise ctx.unsupported(f"weights of shape {list(kernel.shape)} (expected (out, in))")
    units, width = kernel.shape
    if len(x.shape) > 2 and not ctx.option("keep_num_dims", False):
        # Without keep_num_dims TFLite flattens the input to (-1, in): one row per batch item only when
        # the non-batch sizes multiply to ``in`` (a Flatten); otherwise rows of several items mix.
        rest = x.shape[1:]
        if any(s is None for s in rest) or math.prod(rest) != width:  # type: ignore[arg-type]
            raise ctx.unsupported(f"an input of shape {list(x.shape)} flattened to rows of {width}",
                                  "convert with keep_num_dims (TF's converter keeps them for a Dense on a sequence)")
        x = ctx.layer("Flatten", {"data_format": "channels_last"}, [x], (x.shape[0], width), name=f"{ctx.name}/flatten")
    hybrid = _int8(kernel)
    kernel = ctx.relayout(kernel, layouts.get("tflite_fully_connected"))
    if hybrid:
        bias = ctx.optional(2)
        config = {"units": units, "use_bias": bias is not None, "activation": "linear",
                  "asymmetric": bool(ctx.option("asymmetric_quantize_inputs", False)),
                  "weight_scale": weight_scales(ctx.input_tensor(1), units)}
        weights = [("kernel", kernel)] + ([("bias", bias)] if bias is not None else [])
        y = ctx.layer(HYBRID + "Dense", config, [x], (*x.shape[:-1], units), weights=weights, name=ctx.name)
        return (ctx.activation(y),)
    (y,) = ctx.tf("BatchMatMulV2", [x, kernel])  # (..., in) @ (in, out): a Dense over the last axis
    assert isinstance(y, Tensor)
    return (ctx.activation(ctx.bias(y, 2)),)


@lite_op("AVERAGE_POOL_2D", "MAX_POOL_2D")
def pool_2d(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    attrs = {**_window(ctx), "ksize": [1, ctx.option("filter_height", 1), ctx.option("filter_width", 1), 1]}
    # TFLite's average pool counts only the pixels inside the image, as TF's AvgPool does.
    (y,) = ctx.tf("AvgPool" if ctx.op == "AVERAGE_POOL_2D" else "MaxPool", [x], attrs)
    return (ctx.activation(y),)  # type: ignore[arg-type]
