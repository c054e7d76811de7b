"""Plumbing ops: identities, casts, Reshape / Squeeze / ExpandDims, ConcatV2, Pad.

A reshape's target usually comes from shape arithmetic (``ops_shape.py``): ``Reshape(x, Pack(Shape(x)[0],
-1))`` (``tf.layers.flatten``) is seen to be a Flatten. A reshape that touches the batch axis, or sizes
only known at run time, is refused.
"""

from __future__ import annotations

import math

import numpy as np

from .base import BATCH, BatchTimes, Const, NodeCtx, ShapeVec, Tensor, TFShape, Value, tf_op
from .ops_shape import shape_ints, shape_value

TF = "tf2torch>"
# Ops that hand their (first) input on unchanged at inference.
IDENTITIES = ("Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "PlaceholderWithDefault",
              "ReadVariableOp", "EnsureShape")


@tf_op(*IDENTITIES)
def identity(ctx: NodeCtx) -> tuple[Value, ...]:
    return (ctx.inputs[0],)


@tf_op("IdentityN")
def identity_n(ctx: NodeCtx) -> tuple[Value, ...]:
    return ctx.inputs


@tf_op("Cast")
def cast(ctx: NodeCtx) -> tuple[Value, ...]:
    src, dst = ctx.attr("SrcT"), ctx.attr("DstT")
    value = ctx.inputs[0]
    if isinstance(value, Const):
        from ..dtypes import BY_TF_ENUM

        dtype = BY_TF_ENUM.get(getattr(dst, "enum", 0))
        if dtype is None or dtype.name in ("bfloat16", "string"):
            raise ctx.unsupported(f"a cast of a constant to dtype enum {getattr(dst, 'enum', '?')}")
        return (ctx.folded(value.array().astype(dtype.storage)),)
    if isinstance(value, ShapeVec):
        return (value,)
    if src != dst and not (getattr(src, "is_float", False) and getattr(dst, "is_float", False)):
        raise ctx.unsupported("a cast of a run-time tensor to a non-float dtype")
    if src != dst:
        raise ctx.unsupported("a cast between float dtypes inside the graph (mixed precision)",
                              "export the float32 graph; convert with --dtype for another precision")
    return (value,)


def _target(ctx: NodeCtx, x: Tensor, target: list) -> TFShape | None:
    """The full output shape of reshaping ``x`` to ``target`` (-1 resolved), with the batch kept first;
    None when the reshape mixes the batch axis with others."""
    if not target or target[0] not in (-1, BATCH) and not (x.shape[0] is not None and target[0] == x.shape[0]):
        return None
    rest = [None if t is None else t for t in target[1:]]
    if any(t is None or not isinstance(t, int) for t in rest):
        return None
    known = x.shape[1:]
    if any(s is None for s in known):
        return None if -1 in rest else (x.shape[0], *rest)
    total = math.prod(known)
    if rest.count(-1) > 1:
        return None
    if -1 in rest:
        fixed = math.prod(r for r in rest if r != -1)
        if fixed == 0 or total % fixed:
            return None
        rest[rest.index(-1)] = total // fixed
    if target[0] == -1 and math.prod(rest) != total:
        return None  # -1 in front then absorbs part of the batch
    return (x.shape[0], *rest)


def reshape_to(ctx: NodeCtx, x: Tensor, shape: TFShape) -> Tensor:
    if tuple(shape) == tuple(x.shape):
        return x
    if len(shape) == 2 and len(x.shape) > 2:  # a Flatten (a following Dense permutes its rows, not the data)
        return ctx.layer("Flatten", {"data_format": "channels_last"}, [x], shape)
    target = list(shape[1:])
    if target.count(None) == 1:  # one size open (a squeezed sequence of any length): Keras's -1 infers it
        target[target.index(None)] = -1
    return ctx.layer("Reshape", {"target_shape": target}, [x], shape)


def _reshaped_const(ctx: NodeCtx, value: Const, shape: list[int]) -> Const:
    size = math.prod(value.shape)
    if shape.count(-1) == 1:
        known = math.prod(s for s in shape if s != -1)
        shape = [size // known if s == -1 else s for s in shape] if known else shape
    if math.prod(shape) != size:
        raise ctx.unsupported(f"reshaping a constant of shape {list(value.shape)} to {shape}")
    return ctx.reshaped(value, tuple(shape))


def _merge(ctx: NodeCtx, x: Tensor, target: list) -> Tensor | None:
    """(N, T.., C) -> (N*T.., C) (tf.tensordot), and back: the tensor keeps its own shape (Tensor.merged)."""
    if x.merged is not None:
        back = [None if t == BATCH or t == -1 and i == 0 else t for i, t in enumerate(target)]
        return Tensor(x.ref, x.merged, x.node) if back == [None, *x.merged[1:]] else None
    if len(target) == 2 and isinstance(target[0], BatchTimes) and len(x.shape) >= 3 and target[1] == x.shape[-1]:
        middle = x.shape[1:-1]
        if all(isinstance(s, int) for s in middle) and math.prod(middle) == target[0].n:  # type: ignore[arg-type]
            return Tensor(x.ref, (None, x.shape[-1]), x.node, merged=x.shape)
    return None


@tf_op("Reshape", arity=2)
def reshape(ctx: NodeCtx) -> tuple[Value, ...]:
    if isinstance(ctx.inputs[0], Const):
        return (_reshaped_const(ctx, ctx.inputs[0], shape_ints(ctx, 1)),)
    x = ctx.tensor(0)
    target = shape_ints(ctx, 1)
    merged = _merge(ctx, x, target)
    if merged is not None:
        return (merged,)
    if x.merged is not None:
        raise ctx.unsupported("a reshape of a flattened (tensordot) tensor to another shape than its own")
    shape = _target(ctx, x, target)
    if shape is None:
        raise ctx.unsupported(f"a reshape of {list(x.shape)} to {target}: it changes the batch axis or needs sizes "
                              "known only at run time", "convert with --input-shape (e.g. 1,3,224,224) to fix the "
                              "input's size")
    return (reshape_to(ctx, x, shape),)


@tf_op("Squeeze")
def squeeze(ctx: NodeCtx) -> tuple[Value, ...]:
    value = ctx.inputs[0]
    if isinstance(value, Const):
        dims = {int(d) % max(len(value.shape), 1) for d in (ctx.attr("squeeze_dims") or ())}
        shape = [s for i, s in enumerate(value.shape) if not (s == 1 and (not dims or i in dims))]
        return (_reshaped_const(ctx, value, shape),)
    x = ctx.tensor(0)
    dims = {int(d) % len(x.shape) for d in (ctx.attr("squeeze_dims") or ())}
    if not dims:
        dims = {i for i, s in enumerate(x.shape) if s == 1}
    if 0 in dims or any(x.shape[d] != 1 for d in dims):
        raise ctx.unsupported(f"squeezing axes {sorted(dims)} of {list(x.shape)}")
    return (reshape_to(ctx, x, tuple(s for i, s in enumerate(x.shape) if i not in dims)),)


@tf_op("ExpandDims", arity=2)
def expand_dims(ctx: NodeCtx) -> tuple[Value, ...]:
    (axis,) = shape_ints(ctx, 1) or [None]
    value = ctx.inputs[0]
    if isinstance(value, Const) and isinstance(axis, int):
        shape = list(value.shape)
        shape.insert(axis % (len(shape) + 1), 1)
        return (_reshaped_const(ctx, value, shape),)
    x = ctx.tensor(0)
    rank = len(x.shape) + 1
    axis = axis % rank if isinstance(axis, int) else None
    if not axis:
        raise ctx.unsupported("expanding the batch axis")
    shape = (*x.shape[:axis], 1, *x.shape[axis:])
    return (ctx.layer("Reshape", {"target_shape": list(shape[1:])}, [x], shape),)


@tf_op("ConcatV2", arity=2)
def concat(ctx: NodeCtx) -> tuple[Value, ...]:
    parts, axis_value = ctx.inputs[:-1], ctx.const(len(ctx.inputs) - 1, "axis")
    axis = int(axis_value.array())
    if all(isinstance(p, Const) for p in parts):
        return (ctx.folded(np.concatenate([p.array() for p in parts], axis=axis)),)  # type: ignore[union-attr]
    if all(isinstance(p, (Const, ShapeVec)) for p in parts):
        return (shape_value(ctx, [i for k in range(len(parts)) for i in shape_ints(ctx, k)]),)
    tensors = [ctx.tensor(i) for i in range(len(parts))]
    rank = len(tensors[0].shape)
    axis %= rank
    if axis == 0:
        raise ctx.unsupported("a concatenation along the batch axis")
    total = sum(t.shape[axis] or 0 for t in tensors) if all(t.shape[axis] is not None for t in tensors) else None
    shape = (*tensors[0].shape[:axis], total, *tensors[0].shape[axis + 1:])
    return (ctx.layer("Concatenate", {"axis": axis}, tensors, shape),)


@tf_op("Pad", "PadV2", arity=2)
def pad(ctx: NodeCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    pads = ctx.const(1, "paddings").array().astype(np.int64).tolist()
    rank = len(x.shape)
    if ctx.op == "PadV2" and _nonzero(ctx.const(2, "constant value")):
        value = ctx.const(2, "constant value").array()
        if value.size != 1 or len(pads) != rank or any(pads[0]):
            raise ctx.unsupported(f"padding {pads} with the value {value.tolist()}: one value, the batch axis unpadded")
        shape = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:], pads[1:])))
        config = {"mode": "constant", "value": float(value.reshape(-1)[0]), "padding": pads[1:]}
        return (ctx.layer(TF + "Pad", config, [x], shape),)
    if len(pads) != rank or rank not in (3, 4, 5) or any(pads[0]) or any(pads[-1]):
        raise ctx.unsupported(f"paddings {pads}: only the spatial axes of a channels-last tensor are padded")
    spatial = pads[1:-1]
    cls = {3: "ZeroPadding1D", 4: "ZeroPadding2D", 5: "ZeroPadding3D"}[rank]
    shape = (x.shape[0], *(None if s is None else s + a + b for s, (a, b) in zip(x.shape[1:-1], spatial)),
             x.shape[-1])
    padding = spatial[0] if rank == 3 else spatial
    return (ctx.layer(cls, {"padding": padding, "data_format": "channels_last"}, [x], shape),)


def _nonzero(value: Const) -> bool:
    return bool(np.any(value.array() != 0))
