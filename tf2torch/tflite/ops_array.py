"""TFLite operators that move data: RESHAPE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, PAD,
MIRROR_PAD, the reductions, slices, GATHER, SPLIT, PACK / UNPACK, RESIZE_*, BATCH_MATMUL, SHAPE.

Each is TF's op of the same meaning with TFLite's input order; the TF-graph converters do the rest.
A reshape takes its target from the output tensor's declared shape (TFLite writes the batch as 1
in the shape input and -1 only in the output's shape_signature).
"""

from __future__ import annotations

import math

import numpy as np

from ..tfgraph.base import BATCH, BatchTimes, Const, ShapeVec, Tensor, Value
from . import ops_quant_bmm
from .base import LiteCtx, lite_op

_REDUCE = {"MEAN": "Mean", "SUM": "Sum", "REDUCE_MAX": "Max", "REDUCE_MIN": "Min", "REDUCE_PROD": "Prod"}
_SAME_INPUTS = {"TRANSPOSE": "Transpose", "EXPAND_DIMS": "ExpandDims", "PAD": "Pad", "PADV2": "PadV2",
                "SLICE": "Slice", "SHAPE": "Shape", "TILE": "Tile"}


@lite_op("RESHAPE")
def reshape(ctx: LiteCtx) -> tuple[Value, ...]:
    value = ctx.value(0)
    dims = ctx.out_dims()
    if isinstance(value, Const):
        return (ctx.reshaped(value, tuple(int(d or 1) for d in dims)),)
    x = ctx.tensor(0)
    if x.merged is not None and dims and all(d is not None for d in dims[1:]) and dims[1:] != x.merged[1:]:
        # A tensordot's (N*T, C) result reshaped to another shape than the one it was flattened from
        # (a Keras Reshape TFLite fused into the tensordot's reshape): unflatten first, then reshape.
        (back,) = ctx.tf("Reshape", [x, ShapeVec((BATCH, *x.merged[1:]))])
        assert isinstance(back, Tensor)
        x = back
    if any(d is None for d in dims[1:]) or not dims:
        # Sizes computed at run time from the batch (tf.tensordot's (N*T, C)): the shape input itself,
        # folded by the TF-graph converters (SHAPE, GATHER, REDUCE_PROD, PACK) into a symbolic shape.
        if len(ctx.inputs) < 2:
            raise ctx.unsupported(f"a reshape to {list(dims)}, sizes known only at run time")
        return ctx.tf("Reshape", [x, ctx.value(1)])
    size, target = _size(x.shape[1:]), math.prod(dims[1:])  # type: ignore[arg-type]
    if x.merged is None and size is not None and size != target and target and size % target == 0:
        # The batch merges with the next axes ((N, T, C) -> (N*T, C), tf.tensordot's reshape): said so,
        # so the Dense after it applies to (N, T, C) and the reshape back vanishes (tfgraph/ops_linalg).
        return ctx.tf("Reshape", [x, ShapeVec((BatchTimes(size // target), *dims[1:]))])
    # The batch stays the batch: a dynamic one (-1 in the signature) or the input's own fixed size.
    items = (BATCH if dims[0] is None or x.shape[0] is None else dims[0], *dims[1:])
    return ctx.tf("Reshape", [x, ShapeVec(tuple(items))])


def _size(shape: tuple[int | None, ...]) -> int | None:
    return None if any(s is None for s in shape) else math.prod(shape)  # type: ignore[arg-type]


@lite_op(*_SAME_INPUTS)
def same_inputs(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf(_SAME_INPUTS[ctx.op], list(ctx.inputs))


@lite_op("CONCATENATION")
def concatenation(ctx: LiteCtx) -> tuple[Value, ...]:
    (y,) = ctx.tf("ConcatV2", [*ctx.inputs, ctx.folded(np.int32(ctx.option("axis", 0)))])
    return (ctx.activation(y) if isinstance(y, Tensor) else y,)


@lite_op("MIRROR_PAD")
def mirror_pad(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf("MirrorPad", list(ctx.inputs), {"mode": ctx.option("mode", "REFLECT")})


@lite_op(*_REDUCE)
def reduce(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf(_REDUCE[ctx.op], list(ctx.inputs), {"keep_dims": bool(ctx.option("keep_dims", False))})


@lite_op("STRIDED_SLICE")
def strided_slice(ctx: LiteCtx) -> tuple[Value, ...]:
    if ctx.option("offset", False):
        raise ctx.unsupported("a strided slice whose end is an offset from its begin (offset=true)")
    masks = {k: ctx.option(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                            "shrink_axis_mask")}
    return ctx.tf("StridedSlice", list(ctx.inputs), masks)


@lite_op("GATHER")
def gather(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf("GatherV2", [ctx.value(0), ctx.value(1), ctx.folded(np.int32(ctx.option("axis", 0)))],
                  {"batch_dims": ctx.option("batch_dims", 0)})


@lite_op("SPLIT")
def split(ctx: LiteCtx) -> tuple[Value, ...]:
    # TFLite's SPLIT takes (axis, input), as TF's Split does.
    return ctx.tf("Split", list(ctx.inputs), {"num_split": ctx.option("num_splits", 1)})


@lite_op("SPLIT_V")
def split_v(ctx: LiteCtx) -> tuple[Value, ...]:
    # (input, size_splits, axis), as TF's SplitV.
    return ctx.tf("SplitV", list(ctx.inputs), {"num_split": ctx.option("num_splits", 1)})


@lite_op("PACK")
def pack(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf("Pack", list(ctx.inputs), {"axis": ctx.option("axis", 0), "N": len(ctx.inputs)})


@lite_op("UNPACK")
def unpack(ctx: LiteCtx) -> tuple[Value, ...]:
    return ctx.tf("Unpack", list(ctx.inputs), {"axis": ctx.option("axis", 0), "num": ctx.option("num", 0)})


@lite_op("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
def resize(ctx: LiteCtx) -> tuple[Value, ...]:
    op = "ResizeBilinear" if ctx.op == "RESIZE_BILINEAR" else "ResizeNearestNeighbor"
    return ctx.tf(op, list(ctx.inputs), {"align_corners": bool(ctx.option("align_corners", False)),
                                        "half_pixel_centers": bool(ctx.option("half_pixel_centers", False)),
                                        "_kernel": "litert"})  # LiteRT's float kernels, not TF's


@lite_op("BATCH_MATMUL")
def batch_matmul(ctx: LiteCtx) -> tuple[Value, ...]:
    if ops_quant_bmm.is_hybrid(ctx):  # int8 weights on a float input (dynamic-range quantization)
        return ops_quant_bmm.hybrid_batch_matmul(ctx)
    return ctx.tf("BatchMatMulV2", list(ctx.inputs), {"adj_x": bool(ctx.option("adj_x", False)),
                                                     "adj_y": bool(ctx.option("adj_y", False))})


@lite_op("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def depth_to_space(ctx: LiteCtx) -> tuple[Value, ...]:
    """Pure data movement, as TF defines it on NHWC: DEPTH_TO_SPACE reads channel (i * bs + j) * C + c
    into pixel (h * bs + i, w * bs + j): a reshape to (H, W, bs, bs, C), the block axes moved beside
    theirs, a reshape back; SPACE_TO_DEPTH the inverse."""
    x, bs = ctx.tensor(0), int(ctx.option("block_size", 0))
    if len(x.shape) != 4 or bs < 1 or any(s is None for s in x.shape[1:]):
        raise ctx.unsupported(f"a block size {bs} on an input of shape {list(x.shape)}")
    _, h, w, c = x.shape
    if ctx.op == "DEPTH_TO_SPACE":
        if c % (bs * bs):  # type: ignore[operator]
            raise ctx.unsupported(f"{c} channels for blocks of {bs}x{bs}")
        split, perm = (BATCH, h, w, bs, bs, c // (bs * bs)), [0, 1, 3, 2, 4, 5]  # type: ignore[operator]
        out = (BATCH, h * bs, w * bs, c // (bs * bs))  # type: ignore[operator]
    else:
        if h % bs or w % bs:  # type: ignore[operator]
            raise ctx.unsupported(f"a {h}x{w} image in blocks of {bs}x{bs}")
        split, perm = (BATCH, h // bs, bs, w // bs, bs, c), [0, 1, 3, 2, 4, 5]  # type: ignore[operator]
        out = (BATCH, h // bs, w // bs, bs * bs * c)  # type: ignore[operator]
    (y,) = ctx.tf("Reshape", [x, ShapeVec(split)])
    (y,) = ctx.tf("Transpose", [y, ctx.folded(np.array(perm, dtype=np.int32))])
    return ctx.tf("Reshape", [y, ShapeVec(out)])


@lite_op("SQUEEZE")
def squeeze(ctx: LiteCtx) -> tuple[Value, ...]:
    # TFLite keeps TF's squeeze_dims in the options (empty: every axis of size 1)
    return ctx.tf("Squeeze", [ctx.value(0)], {"squeeze_dims": list(ctx.option("squeeze_dims", ()))})
