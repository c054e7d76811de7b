"""Shape arithmetic folded before run time: Shape, StridedSlice, Pack, Prod, GatherV2.

``Shape(x)`` is the tensor's static shape with its batch size symbolic (``ShapeVec``: ints, ``BATCH``,
``BatchTimes(n)`` for the batch times other sizes), so the shape computations exporters emit
(``tf.layers.flatten``, ``tf.tensordot``) fold to constants or symbolic shapes. The same ops on run-time
tensors (a strided slice of an activation, a stack of tensors, a gather with constant indices) become
layers here too.
"""

from __future__ import annotations

import math

import numpy as np

from .base import BATCH, BatchTimes, Const, NodeCtx, ShapeVec, Tensor, Value, tf_op

TF = "tf2torch>"


@tf_op("Shape")
def shape(ctx: NodeCtx) -> tuple[Value, ...]:
    value = ctx.inputs[0]
    if isinstance(value, Const):
        return (ctx.folded(np.array(value.shape, dtype=np.int32)),)
    x = ctx.tensor(0)
    return (ShapeVec(tuple(BATCH if i == 0 else s for i, s in enumerate(x.shape))),)


def shape_ints(ctx: NodeCtx, i: int) -> list:
    """A 1-D shape-like operand: a Const's ints, or a ShapeVec's items (BATCH / None for unknown)."""
    value = ctx.inputs[i]
    if isinstance(value, ShapeVec):
        return list(value.items)
    if isinstance(value, Const):
        return [int(v) for v in value.array().reshape(-1)]
    raise ctx.unsupported(f"input {i} is a run-time tensor where a shape was expected")


@tf_op("StridedSlice", arity=4)
def strided_slice(ctx: NodeCtx) -> tuple[Value, ...]:
    value = ctx.inputs[0]
    if isinstance(value, Tensor):
        from .ops_slice import strided_slice_tensor

        return strided_slice_tensor(ctx)
    if not isinstance(value, (ShapeVec, Const)) or (isinstance(value, Const) and len(value.shape) != 1):
        raise ctx.unsupported("slicing a constant of rank other than 1")
    items = shape_ints(ctx, 0)
    begin, end, step = (shape_ints(ctx, i) for i in (1, 2, 3))
    masks = {k: int(ctx.attr(k, 0) or 0) for k in ("begin_mask", "end_mask", "shrink_axis_mask", "ellipsis_mask",
                                                  "new_axis_mask")}
    if len(begin) != 1 or masks["ellipsis_mask"] or masks["new_axis_mask"]:
        raise ctx.unsupported("a multi-axis slice of a shape")
    start = None if masks["begin_mask"] & 1 else begin[0]
    stop = None if masks["end_mask"] & 1 else end[0]
    picked = items[slice(start, stop, step[0])] if not masks["shrink_axis_mask"] & 1 else [items[begin[0]]]
    if masks["shrink_axis_mask"] & 1:
        item = picked[0]
        return (ShapeVec((item,)) if not isinstance(item, int) else ctx.folded(np.int32(item)),) \
            if isinstance(value, ShapeVec) else (ctx.folded(np.int32(item)),)
    return (shape_value(ctx, picked),)


def shape_value(ctx: NodeCtx, items: list) -> Value:
    return ShapeVec(tuple(items)) if any(not isinstance(i, int) for i in items) else ctx.folded(
        np.array(items, dtype=np.int32))


@tf_op("Pack")
def pack(ctx: NodeCtx) -> tuple[Value, ...]:
    if any(isinstance(v, Tensor) for v in ctx.inputs):  # tf.stack of run-time tensors
        tensors = [ctx.tensor(i) for i in range(len(ctx.inputs))]
        rank = len(tensors[0].shape) + 1
        axis = int(ctx.attr("axis", 0) or 0) % rank
        if axis == 0 or any(t.shape != tensors[0].shape for t in tensors):
            raise ctx.unsupported("stacking along the batch axis, or tensors of different shapes")
        shape = (*tensors[0].shape[:axis], len(tensors), *tensors[0].shape[axis:])
        return (ctx.layer(TF + "Stack", {"axis": axis}, tensors, shape),)
    if int(ctx.attr("axis", 0) or 0) != 0:
        raise ctx.unsupported("a Pack along an axis other than 0")
    items: list = []
    for i, value in enumerate(ctx.inputs):
        if isinstance(value, ShapeVec) and len(value.items) == 1:
            items.append(value.items[0])  # a shape item: an int, the batch, or the batch times n
        elif isinstance(value, Const) and value.shape == ():
            items.append(value.array().item())
        elif isinstance(value, Const) and all(isinstance(v, Const) for v in ctx.inputs):
            return (ctx.folded(np.stack([v.array() for v in ctx.inputs])),)
        else:
            raise ctx.unsupported(f"input {i}: only scalars and shape items are packed before run time")
    return (shape_value(ctx, items),)


@tf_op("Prod", arity=2)
def prod(ctx: NodeCtx) -> tuple[Value, ...]:
    items = shape_ints(ctx, 0)
    known = [i for i in items if isinstance(i, int)]
    batch = [i for i in items if not isinstance(i, int)]
    if not batch:
        return (ctx.folded(np.int32(math.prod(known))),)
    if batch == [BATCH] or (len(batch) == 1 and isinstance(batch[0], BatchTimes)):
        n = math.prod(known) * (batch[0].n if isinstance(batch[0], BatchTimes) else 1)
        return (ShapeVec((BatchTimes(n),)),)  # the batch times the other sizes (tensordot's flattening)
    raise ctx.unsupported("a product of sizes only known at run time")


@tf_op("GatherV2", arity=3)
def gather(ctx: NodeCtx) -> tuple[Value, ...]:
    value = ctx.inputs[0]
    axis = int(ctx.const(2, "axis").array())
    if isinstance(value, Const) and value.weight and isinstance(ctx.inputs[1], Tensor):
        if axis != 0 or len(value.shape) != 2 or int(ctx.attr("batch_dims", 0) or 0):
            raise ctx.unsupported("a gather from a weight other than rows of a 2-D table")
        ids = ctx.tensor(1)  # token ids: an embedding lookup
        config = {"input_dim": value.shape[0], "output_dim": value.shape[1]}
        return (ctx.layer("Embedding", config, [ids], (*ids.shape, value.shape[1]), weights=[("embeddings", value)]),)
    indices = ctx.const(1, "indices").array()
    if isinstance(value, Tensor):
        rank = len(value.shape)
        axis %= rank
        if axis == 0 or indices.ndim != 1:
            raise ctx.unsupported("a gather along the batch axis, or with indices that are not a vector")
        shape = tuple(len(indices) if i == axis else d for i, d in enumerate(value.shape))
        return (ctx.layer(TF + "Gather", {"axis": axis, "indices": [int(i) for i in indices]}, [ctx.tensor(0)],
                          shape),)
    if isinstance(value, ShapeVec) and axis == 0 and indices.ndim <= 1:
        items = [value.items[int(i)] for i in indices.reshape(-1)]
        return (ShapeVec(tuple(items)) if indices.ndim == 1 else ShapeVec((items[0],)),)
    if isinstance(value, Const) and not value.weight:
        return (ctx.folded(np.take(value.array(), indices, axis=axis)),)
    raise ctx.unsupported("a gather from a run-time tensor or a weight (an embedding lookup)")
