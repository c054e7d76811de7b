"""Splitting and slicing run-time tensors: Split / SplitV / Unpack / Slice / StridedSlice / Transpose.

The sizes and bounds must be constants (they are in every exported model); the batch axis is never
split, sliced or moved. Slices of shape vectors are folded in ``ops_array.py`` instead.
"""

from __future__ import annotations

from .base import NodeCtx, Tensor, Value, tf_op

TF = "tf2torch>"


def _axis(ctx: NodeCtx, axis: int, rank: int) -> int:
    axis %= rank
    if axis == 0:
        raise ctx.unsupported("an op along the batch axis")
    return axis


@tf_op("Split", arity=2)
def split(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(1)  # Split(axis, value)
    axis = _axis(ctx, int(ctx.const(0, "axis").array()), len(x.shape))
    count = int(ctx.attr("num_split", 1))
    size = x.shape[axis]
    if size is None or size % count:
        raise ctx.unsupported(f"splitting an axis of size {size} into {count}")
    return _split(ctx, x, axis, [size // count] * count)


@tf_op("SplitV", arity=3)
def split_v(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)  # SplitV(value, size_splits, axis)
    axis = _axis(ctx, int(ctx.const(2, "axis").array()), len(x.shape))
    sizes = [int(s) for s in ctx.const(1, "sizes").array().reshape(-1)]
    size = x.shape[axis]
    if sizes.count(-1) == 1 and size is not None:
        sizes[sizes.index(-1)] = size - sum(s for s in sizes if s != -1)
    if size is None or sum(sizes) != size or any(s < 0 for s in sizes):
        raise ctx.unsupported(f"sizes {sizes} for an axis of size {size}")
    return _split(ctx, x, axis, sizes)


def _split(ctx: NodeCtx, x: Tensor, axis: int, sizes: list[int]) -> tuple[Value, ...]:
    shapes = [tuple(s if i == axis else d for i, d in enumerate(x.shape)) for s in sizes]
    first = ctx.layer(TF + "Split", {"axis": axis, "sizes": sizes}, [x], shapes[0])
    return tuple(Tensor(first.ref.__class__(first.ref.layer, 0, i), shape, first.node) for i, shape in enumerate(shapes))


@tf_op("Unpack")
def unpack(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    axis = _axis(ctx, int(ctx.attr("axis", 0)), len(x.shape))
    count = x.shape[axis]
    if count is None or count != int(ctx.attr("num", count)):
        raise ctx.unsupported(f"unstacking an axis of size {count}")
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    first = ctx.layer(TF + "Unstack", {"axis": axis}, [x], shape)
    return tuple(Tensor(first.ref.__class__(first.ref.layer, 0, i), shape, first.node) for i in range(count))


@tf_op("Transpose", arity=2)
def transpose(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    perm = [int(p) for p in ctx.const(1, "permutation").array().reshape(-1)]
    if perm == list(range(len(x.shape))):
        return (x,)  # the identity (tf.tensordot transposes its free axes first, already in order)
    if sorted(perm) != list(range(len(x.shape))) or perm[0] != 0:
        raise ctx.unsupported(f"permutation {perm}: the batch axis must stay first")
    return (ctx.layer("Permute", {"dims": perm[1:]}, [x], tuple(x.shape[p] for p in perm)),)


def _ranges(ctx: NodeCtx, x: Tensor, begin: list[int], end: list[int | None], step: list[int]) -> list:
    out = []
    for i in range(1, len(x.shape)):
        out.append([begin[i], end[i], step[i]] if i < len(begin) else [None, None, None])
    if begin and (begin[0] not in (0, None) or end[0] is not None or step[0] != 1):
        raise ctx.unsupported("slicing the batch axis")
    return out


def _slice_layer(ctx: NodeCtx, x: Tensor, ranges: list) -> Tensor:
    shape = [x.shape[0]]
    for (b, e, s), size in zip(ranges, x.shape[1:]):
        shape.append(None if size is None else len(range(*slice(b, e, s).indices(size))))
    return ctx.layer(TF + "Slice", {"ranges": ranges}, [x], tuple(shape))


@tf_op("Slice", arity=3)
def slice_(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    begin = [int(v) for v in ctx.const(1, "begin").array().reshape(-1)]
    size = [int(v) for v in ctx.const(2, "size").array().reshape(-1)]
    if len(begin) != len(x.shape) or len(size) != len(x.shape):
        raise ctx.unsupported("begin / size of another rank than the input")
    end = [None if s == -1 else b + s for b, s in zip(begin, size)]
    begin[0], end[0] = None, None  # checked below: the whole batch
    if size[0] != -1 or ctx.const(1, "begin").array().reshape(-1)[0] != 0:
        raise ctx.unsupported("slicing the batch axis")
    return (_slice_layer(ctx, x, _ranges(ctx, x, begin, end, [1] * len(begin))),)


def strided_slice_tensor(ctx: NodeCtx) -> tuple[Value, ...]:
    """StridedSlice of a run-time tensor: masks on, at most, begin / end / shrink (ellipsis and new axes
    are refused); called by ``ops_array.strided_slice`` for tensors."""
    x = ctx.tensor(0)
    begin, end, step = ([int(v) for v in ctx.const(i, what).array().reshape(-1)]
                        for i, what in ((1, "begin"), (2, "end"), (3, "strides")))
    masks = {k: int(ctx.attr(k, 0) or 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                                  "shrink_axis_mask")}
    if masks["ellipsis_mask"] or masks["new_axis_mask"] or len(begin) > len(x.shape):
        raise ctx.unsupported("a strided slice with an ellipsis or new axes")
    b: list = [None if masks["begin_mask"] >> i & 1 else v for i, v in enumerate(begin)]
    e: list = [None if masks["end_mask"] >> i & 1 else v for i, v in enumerate(end)]
    shrink = [i for i in range(len(begin)) if masks["shrink_axis_mask"] >> i & 1]
    for i in shrink:
        e[i] = None if b[i] == -1 else b[i] + 1
    if begin and (b[0] is not None and b[0] != 0 or e[0] is not None or step[0] != 1):
        raise ctx.unsupported("slicing the batch axis")
    b[0:1], e[0:1] = [None], [None]
    sliced = _slice_layer(ctx, x, _ranges(ctx, x, b, e, step))
    if not shrink:
        return (sliced,)
    from .ops_array import reshape_to

    shape = tuple(s for i, s in enumerate(sliced.shape) if i not in shrink)
    return (reshape_to(ctx, sliced, shape),)

