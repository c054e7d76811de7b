"""Full-integer int8 operators that move pixels: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, MIRROR_PAD, TILE,
and TRANSPOSE_CONV (int8 and its dynamic-range form): each as LiteRT's builtin kernel computes it, the index
tables and padding computed here (``tflite/int_spatial_math.py``), the kernels in
``runtime/lite_int_spatial.py`` (layers: ``layers/lite_int_spatial.py``).

LiteRT's int8 resize, mirror-pad and tile kernels move values without requantizing (MIRROR_PAD's
``Prepare`` requires one scale and zero point; TF's converter gives the resizes and TILE one too): an
operator whose output is quantized unlike its input is refused by name.
"""

from __future__ import annotations

import numpy as np

from ..map import layouts
from ..tfgraph.base import Const, ShapeVec, Tensor, Value
from .base import LiteCtx, int_op, lookup_lite
from .int_spatial_math import bilinear_tables, mirror_indices, nearest_indices, transpose_padding
from .ops_int import INT, channel_multipliers, fused_range, int32_bias, io_params, qparams
from .quant import weight_scales

HYBRID = "tf2torch>LiteHybrid"


def _one_scale(ctx: LiteCtx, what: str) -> None:
    (s_in, z_in), (s_out, z_out) = io_params(ctx)
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported(f"{what} whose int8 output is quantized unlike its input (scale {s_in!r} zero point "
                              f"{z_in} -> {s_out!r}, {z_out}): LiteRT's kernel copies the values as they are")


def _image(ctx: LiteCtx) -> Tensor:
    x = ctx.tensor(0)
    if len(x.shape) != 4 or x.shape[1] is None or x.shape[2] is None:
        raise ctx.unsupported(f"an int8 input of shape {list(x.shape)} (expected (N, H, W, C) of known H, W)",
                              "convert with --input-shape")
    return x


def resize_grid(ctx: LiteCtx, x: Tensor) -> tuple[tuple, list[tuple[int, int]], bool, bool]:
    """A quantized RESIZE_*'s output shape, (input, output) size per spatial axis, align_corners and
    half_pixel_centers (int8 and uint8 read them alike)."""
    size = [int(v) for v in np.asarray(ctx.const(1, "size").array()).reshape(-1)]
    align, half = bool(ctx.option("align_corners", False)), bool(ctx.option("half_pixel_centers", False))
    if len(size) != 2 or min(size) < 1 or (align and half):
        raise ctx.unsupported(f"a resize to {size} with align_corners={align}, half_pixel_centers={half} "
                              "(LiteRT refuses both at once)")
    return (x.shape[0], size[0], size[1], x.shape[3]), list(zip(x.shape[1:3], size)), align, half


@int_op("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(ctx: LiteCtx) -> tuple[Value, ...]:
    x = _image(ctx)
    _one_scale(ctx, "a resize")
    shape, sizes, align, half = resize_grid(ctx, x)
    if ctx.op == "RESIZE_NEAREST_NEIGHBOR":
        rows, cols = (nearest_indices(a, b, align, half) for a, b in sizes)
        return (ctx.layer(INT + "Gather", {"rows": rows, "cols": cols}, [x], shape, name=ctx.name),)
    (r0, r1, rw0, rw1), (c0, c1, cw0, cw1) = (bilinear_tables(a, b, align, half) for a, b in sizes)
    config = {"rows": [r0, r1], "row_weights": [rw0, rw1], "cols": [c0, c1], "col_weights": [cw0, cw1]}
    return (ctx.layer(INT + "ResizeBilinear", config, [x], shape, name=ctx.name),)


@int_op("MIRROR_PAD")
def mirror_pad(ctx: LiteCtx) -> tuple[Value, ...]:
    x = _image(ctx)
    _one_scale(ctx, "a mirror pad")
    mode = ctx.option("mode", "REFLECT")
    p = np.asarray(ctx.const(1, "paddings").array(), dtype=np.int64).reshape(-1)
    if mode not in ("REFLECT", "SYMMETRIC") or p.size != 8 or p[[0, 1, 6, 7]].any() or (p < 0).any():
        raise ctx.unsupported(f"a {mode} mirror pad by {p.tolist()} of an int8 image (its height and width are "
                              "emulated)")
    symmetric = mode == "SYMMETRIC"
    (top, bottom), (left, right) = p[2:4].tolist(), p[4:6].tolist()
    limit = 0 if symmetric else 1  # LiteRT: at most the size (SYMMETRIC), the size - 1 (REFLECT)
    if max(top, bottom) > x.shape[1] - limit or max(left, right) > x.shape[2] - limit:  # type: ignore[operator]
        raise ctx.unsupported(f"a {mode} pad by {p.tolist()} wider than the image {list(x.shape)}")
    rows = mirror_indices(x.shape[1], top, bottom, symmetric)  # type: ignore[arg-type]
    cols = mirror_indices(x.shape[2], left, right, symmetric)  # type: ignore[arg-type]
    shape = (x.shape[0], len(rows), len(cols), x.shape[3])
    return (ctx.layer(INT + "Gather", {"rows": rows, "cols": cols}, [x], shape, name=ctx.name),)


@int_op("TILE")
def tile(ctx: LiteCtx) -> tuple[Value, ...]:
    """Repeats int8 values as they are: the float operator's converter (a ``tile`` of any dtype)."""
    _one_scale(ctx, "a tile")
    converter = lookup_lite("TILE")
    assert converter is not None
    return converter(ctx)


def _sizes(ctx: LiteCtx) -> list:
    sizes = ctx.value(0)
    if isinstance(sizes, ShapeVec):
        return list(sizes.items)
    if isinstance(sizes, Const):
        return [int(v) for v in np.asarray(sizes.array()).reshape(-1)]
    raise ctx.unsupported("an output shape computed at run time from something other than the input's shape")


def transposed_conv_operands(ctx: LiteCtx, x: Tensor, kernel: Const) -> tuple[dict, tuple, Const]:
    """What both forms share: the window, TFLite's padding, the output shape; the kernel in TF's layout
    (H, W, O, I)."""
    sizes = _sizes(ctx)
    if len(kernel.shape) != 4 or len(sizes) != 4 or len(x.shape) != 4 or \
            not all(isinstance(s, int) for s in sizes[1:]) or x.shape[3] != kernel.shape[3]:
        raise ctx.unsupported(f"a filter of shape {list(kernel.shape)} from {list(x.shape)} to {sizes}")
    padding = ctx.option("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        raise ctx.unsupported(f"padding {padding}")
    strides = [int(ctx.option("stride_h", 1)), int(ctx.option("stride_w", 1))]
    out_c, kh, kw, _ = kernel.shape
    pads = [transpose_padding(o, k, s, padding == "SAME") for o, k, s in zip(sizes[1:3], (kh, kw), strides)]
    config = {"kernel_size": [kh, kw], "strides": strides, "padding": pads, "output_size": list(sizes[1:3]),
              "filters": out_c}
    return config, (x.shape[0], sizes[1], sizes[2], out_c), ctx.relayout(kernel, layouts.get("tflite_conv2d_transpose"))


@int_op("TRANSPOSE_CONV")
def transpose_conv(ctx: LiteCtx) -> tuple[Value, ...]:
    x, kernel = ctx.tensor(2), ctx.const(1, "filter")
    if kernel.var.dtype.name != "int8":
        raise ctx.unsupported(f"a {kernel.var.dtype.name} filter on an int8 input")
    s_in, z_in = qparams(ctx, ctx.operator.inputs[2])  # TRANSPOSE_CONV's data input is its third
    s_out, z_out = qparams(ctx, ctx.operator.outputs[0])
    config, shape, kernel = transposed_conv_operands(ctx, x, kernel)
    multipliers = channel_multipliers(ctx, s_in, s_out, 1)
    if len(multipliers["multiplier"]) == 1:  # one weight scale: LiteRT uses it for every channel
        multipliers = {k: v * config["filters"] for k, v in multipliers.items()}
    if len(multipliers["multiplier"]) != config["filters"]:
        raise ctx.unsupported(f"{len(multipliers['multiplier'])} weight scales for {config['filters']} channels")
    config.update(multipliers, **fused_range(ctx, (s_out, z_out)), input_zero_point=z_in, output_zero_point=z_out)
    weights = [("kernel", kernel), *int32_bias(ctx, 3)]
    return (ctx.layer(INT + "ConvTranspose2D", config, [x], shape, weights=weights, name=ctx.name),)


def hybrid_transpose_conv(ctx: LiteCtx, x: Tensor, kernel: Const) -> Tensor:
    """A dynamic-range TRANSPOSE_CONV (int8 weights, float input and output) as one layer; the fused
    activation follows as its own layer (``tflite/ops_nn.py``)."""
    config, shape, kernel = transposed_conv_operands(ctx, x, kernel)
    config["weight_scale"] = weight_scales(ctx.input_tensor(1), config["filters"])
    bias = ctx.optional(3)
    config["use_bias"] = bias is not None
    weights = [("kernel", kernel)] + ([("bias", bias)] if bias is not None else [])
    return ctx.layer(HYBRID + "ConvTranspose2D", config, [x], shape, weights=weights, name=ctx.name)
