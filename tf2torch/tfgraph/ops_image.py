"""Image-shaped ops: transposed convolutions (Conv2DBackpropInput), resizes, mirror padding, tiling.

Each maps only where the TF and PyTorch semantics provably agree, and says why otherwise: a transposed
conv whose output size needs output_padding, SYMMETRIC mirror padding. Resizes are emulated on every grid
and size by index tables (runtime/resize.py), as TF's or LiteRT's kernel computes them.
"""

from __future__ import annotations

from . import resize_grid as grid
from .base import NodeCtx, ShapeVec, Value, tf_op
from .ops_nn import nhwc, spatial_dims, tf_padding

TF = "tf2torch>"


@tf_op("Conv2DBackpropInput", arity=3)
def conv_transpose(ctx: NodeCtx) -> tuple[Value, ...]:
    nhwc(ctx)
    sizes_value, kernel, x = ctx.inputs[0], ctx.const(1, "filter"), ctx.tensor(2)
    sizes = list(sizes_value.items) if isinstance(sizes_value, ShapeVec) else \
        [int(v) for v in ctx.const(0, "input_sizes").array().reshape(-1)]
    if len(sizes) != 4 or len(kernel.shape) != 4 or len(x.shape) != 4:
        raise ctx.unsupported("expected 4-D sizes, filter and input")
    kh, kw, out_c, in_c = kernel.shape
    strides, dilations, padding = spatial_dims(ctx, "strides", 4), spatial_dims(ctx, "dilations", 4), tf_padding(ctx)
    if padding == "EXPLICIT" or any(d != 1 for d in dilations):
        raise ctx.unsupported("explicit padding or dilation on a transposed conv")
    for axis, (size, k, s) in enumerate(zip(x.shape[1:3], (kh, kw), strides)):
        keras = None if size is None else size * s if padding == "SAME" else (size - 1) * s + k
        if keras is None or sizes[axis + 1] != keras:
            raise ctx.unsupported(f"output size {sizes[axis + 1]} where a transposed conv gives {keras} "
                                  "(it needs output_padding)")
    config = {"filters": out_c, "kernel_size": [kh, kw], "strides": list(strides), "padding": padding.lower(),
              "use_bias": False, "activation": "linear", "data_format": "channels_last"}
    shape = (x.shape[0], sizes[1], sizes[2], out_c)
    return (ctx.layer("Conv2DTranspose", config, [x], shape, weights=[("kernel", kernel)]),)


@tf_op("ResizeBilinear", "ResizeNearestNeighbor", arity=2)
def resize(ctx: NodeCtx) -> tuple[Value, ...]:
    """Float resizes on any grid and size, emulating the kernel that runs them: TF's (a TF graph) or
    LiteRT's (``_kernel: "litert"``, set by ``tflite/ops_array.py``); tables from ``resize_grid``."""
    x = ctx.tensor(0)
    if len(x.shape) != 4 or x.shape[1] is None or x.shape[2] is None:
        raise ctx.unsupported("resizing an image of unknown size", "convert with a fixed input size")
    out_h, out_w = (int(v) for v in ctx.const(1, "size").array().reshape(-1))
    in_h, in_w = x.shape[1], x.shape[2]
    align, half = bool(ctx.attr("align_corners", False)), bool(ctx.attr("half_pixel_centers", False))
    if align and half:  # both kernels reject the pair
        raise ctx.unsupported("align_corners and half_pixel_centers both set (TF and LiteRT refuse it)")
    if out_h < 1 or out_w < 1:
        raise ctx.unsupported(f"a resize to {out_h}x{out_w}")
    shape = (x.shape[0], out_h, out_w, x.shape[3])
    litert = ctx.attr("_kernel", "tf") == "litert"
    if ctx.op == "ResizeNearestNeighbor":
        rows, cols = (grid.nearest_indices(i, o, align, half) for i, o in ((in_h, out_h), (in_w, out_w)))
        factors = [grid.repeat_factor(rows, in_h), grid.repeat_factor(cols, in_w)]
        if None not in factors:  # each pixel repeated: torch's nearest upsampling is the same gather
            config = {"size": factors, "interpolation": "nearest", "data_format": "channels_last"}
            return (ctx.layer("UpSampling2D", config, [x], shape),)
        return (ctx.layer(TF + "ResizeNearest", {"rows": rows, "cols": cols}, [x], shape),)
    if not litert and (out_h, out_w) == (in_h, in_w) and getattr(ctx.attr("T"), "enum", 1) == 1:
        return (x,)  # TF copies a float32 input (no arithmetic: infinities stay)
    config = grid.bilinear_tables((in_h, in_w), (out_h, out_w), align, half, litert)
    return (ctx.layer(TF + "ResizeBilinear", config, [x], shape),)


@tf_op("MirrorPad", arity=2)
def mirror_pad(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    if ctx.attr("mode", "") != "REFLECT":
        raise ctx.unsupported(f"mirror padding mode {ctx.attr('mode')!r} (only REFLECT = torch's 'reflect')")
    pads = ctx.const(1, "paddings").array().astype(int).tolist()
    if len(pads) != len(x.shape) or any(pads[0]) or any(pads[-1]):
        raise ctx.unsupported(f"paddings {pads}: only the spatial axes are padded")
    shape = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:-1], pads[1:-1])),
             x.shape[-1])
    return (ctx.layer(TF + "Pad", {"mode": "reflect", "padding": pads[1:-1]}, [x], shape),)


@tf_op("Tile", arity=2)
def tile(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    reps = [int(v) for v in ctx.const(1, "multiples").array().reshape(-1)]
    if len(reps) != len(x.shape) or reps[0] != 1 or any(r < 1 for r in reps):
        raise ctx.unsupported(f"multiples {reps}: the batch axis is never tiled")
    shape = tuple(None if s is None else s * r for s, r in zip(x.shape, reps))
    return (ctx.layer(TF + "Tile", {"reps": reps[1:]}, [x], shape),)

