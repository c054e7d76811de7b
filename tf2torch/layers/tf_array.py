"""TF graph ops Keras has no layer for: split, unstack, strided slice, reductions, einsum, matmul of two
tensors, elementwise ops with a constant tensor or between two tensors.

The TF-graph lowering (``tfgraph/ops_array.py``) emits them as layers of these classes, with axes
counted as in the graph (batch first, channels last); each converter maps its axis through the
tensor's layout, so a split of an NHWC channel axis is a split of dim 1 of the channels-first tensor.
"""

from __future__ import annotations

import operator
import re

from ..codegen import nodes as n
from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .registry import converter

TF = "tf2torch>"
_EINSUM = re.compile(r"^[A-Za-z.]+(,[A-Za-z.]+)*->[A-Za-z.]*$")  # letters only (a literal node anyway)


def _axis(ctx: Ctx) -> int:
    axis = ctx.config.get("axis")
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 < axis < ctx.x.rank:
        raise ctx.unsupported(f"config 'axis' should be a non-batch axis, found {axis!r}")
    return axis


@converter(TF + "Split", wants="any")
def split(ctx: Ctx) -> Converted:
    axis, sizes = _axis(ctx), ctx.config.get("sizes")
    if not isinstance(sizes, list) or not sizes or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                                                         for s in sizes):
        raise ctx.unsupported(f"config 'sizes' should be a list of sizes, found {sizes!r}")
    dim = torch_axis(axis, ctx.x)
    outs = tuple(TensorInfo(tuple(s if i == axis - 1 else d for i, d in enumerate(ctx.x.shape)), ctx.x.layout)
                 for s in sizes)
    return Converted((Op(n.call("torch.split", n.X, sizes, dim=dim)),), outs)


@converter(TF + "Unstack", wants="any")
def unstack(ctx: Ctx) -> Converted:
    axis = _axis(ctx)
    count = ctx.x.shape[axis - 1]
    if count is None:
        raise ctx.unsupported("unstacking an axis of unknown size")
    shape = tuple(d for i, d in enumerate(ctx.x.shape) if i != axis - 1)
    layout = ctx.x.layout if axis != ctx.x.rank - 1 else "keras"  # no channel axis left to move
    dim = torch_axis(axis, ctx.x)
    return Converted((Op(n.call("torch.unbind", n.X, dim=dim)),), tuple(TensorInfo(shape, layout) for _ in range(count)))


@converter(TF + "Slice", wants="keras")
def strided_slice(ctx: Ctx) -> Converted:
    """``x[:, b0:e0:s0, b1:e1:s1, ...]`` over the non-batch axes (each a [begin, end, step], None for open)."""
    ranges = ctx.config.get("ranges")
    if not isinstance(ranges, list) or len(ranges) != ctx.x.rank - 1:
        raise ctx.unsupported(f"config 'ranges' should give one [begin, end, step] per non-batch axis, found {ranges!r}")
    parts, shape = [slice(None)], []
    for (begin, end, step), size in zip(ranges, ctx.x.shape):
        for v in (begin, end, step):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ctx.unsupported(f"slice bound {v!r} is not an integer")
        if step is not None and step <= 0:
            raise ctx.unsupported("a slice with a non-positive step")
        parts.append(slice(begin, end, step))
        shape.append(None if size is None else len(range(*slice(begin, end, step).indices(size))))
    return Converted((Op(n.X[tuple(parts)]),), (TensorInfo(tuple(shape), "keras"),))


_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
           "max": lambda a, b: n.call("torch.maximum", a, b), "min": lambda a, b: n.call("torch.minimum", a, b),
           "pow": operator.pow, "squared_difference": lambda a, b: (a - b) ** 2}


@converter(TF + "ConstantOperand", wants="keras")
def constant_operand(ctx: Ctx) -> Converted:
    """``x op c`` (or ``c op x`` with ``reverse``) for a constant tensor ``c`` held as a buffer; in TF's
    layout (axes as in the graph), so broadcasting is the graph's own."""
    from ..map import layouts
    from .base import Module, Param

    op, shape = ctx.config.get("op"), ctx.config.get("shape")
    if op not in _BINARY or not isinstance(shape, list) or len(shape) > ctx.x.rank:
        raise ctx.unsupported(f"config op {op!r} / shape {shape!r}")
    (value,) = ctx.layer.weights
    a, b = (n.Attr(n.M, "value"), n.X) if ctx.config.get("reverse") else (n.X, n.Attr(n.M, "value"))
    module = Module("TFConstant", (tuple(shape),))
    out = tuple(max(x, c) if x is not None else None for x, c in zip(ctx.x.shape, [1] * (ctx.x.rank - 1 - len(shape))
                                                                     + list(shape)))
    return Converted((Op(_BINARY[op](a, b), module),), (TensorInfo(out, "keras"),), (Param("", "value", layouts.IDENTITY, var=value),), helpers=("TFConstant",))


@converter(TF + "Binary", wants="keras")
def binary(ctx: Ctx) -> Converted:
    """Two run-time tensors of one rank, broadcast as TF does (both in TF's layout)."""
    op = ctx.config.get("op")
    if op not in _BINARY or len(ctx.inputs) != 2:
        raise ctx.unsupported(f"config op {op!r} with {len(ctx.inputs)} inputs")
    shape = tuple(b if a == 1 else a for a, b in zip(ctx.inputs[0].shape, ctx.inputs[1].shape))
    return Converted((Op(_BINARY[op](n.arg(0), n.arg(1))),), (TensorInfo(shape, "keras"),))


_UNARY = {fn: n.call(f"torch.{fn}", n.X) for fn in ("rsqrt", "erf", "erfc", "log", "reciprocal")}


@converter(TF + "Unary", wants="any")
def unary(ctx: Ctx) -> Converted:
    fn = ctx.config.get("fn")
    if fn not in _UNARY:
        raise ctx.unsupported(f"config fn {fn!r}")
    return Converted((Op(_UNARY[fn]),), (ctx.x,))


@converter(TF + "Reduce", wants="keras")
def reduce(ctx: Ctx) -> Converted:
    """mean / max / min / sum over non-batch axes (TF's axes, batch counted), keeping them or not."""
    op, axes, keep = ctx.config.get("op"), ctx.config.get("axes"), bool(ctx.config.get("keepdims"))
    if op not in ("mean", "max", "min", "sum") or not isinstance(axes, list) or not axes or any(
            isinstance(a, bool) or not isinstance(a, int) or not 0 < a < ctx.x.rank for a in axes):
        raise ctx.unsupported(f"config op {op!r} over axes {axes!r}")
    dims = tuple(sorted(axes))
    fn = {"mean": "mean", "sum": "sum", "max": "amax", "min": "amin"}[op]
    shape = tuple(1 if i + 1 in dims else s for i, s in enumerate(ctx.x.shape)) if keep else \
        tuple(s for i, s in enumerate(ctx.x.shape) if i + 1 not in dims)
    return Converted((Op(n.X.m(fn, dim=dims, keepdim=keep)),), (TensorInfo(shape, "keras"),))


@converter(TF + "Einsum", wants="keras")
def einsum(ctx: Ctx) -> Converted:
    equation = ctx.config.get("equation")
    if not isinstance(equation, str) or not _EINSUM.match(equation):
        raise ctx.unsupported(f"einsum equation {equation!r}")
    shape = ctx.config.get("shape")
    if not isinstance(shape, list):
        raise ctx.unsupported("config 'shape' missing")
    args = [n.arg(i) for i in range(len(ctx.inputs))]
    return Converted((Op(n.call("torch.einsum", equation, *args)),), (TensorInfo(tuple(shape), "keras"),))


@converter(TF + "MatMul", wants="keras")
def matmul(ctx: Ctx) -> Converted:
    """``a @ b`` of two run-time tensors (batch dims broadcast), optionally adjoint (transposed) operands."""
    a, b = (n.arg(0).m("transpose", -1, -2) if ctx.config.get("adj_x") else n.arg(0),
            n.arg(1).m("transpose", -1, -2) if ctx.config.get("adj_y") else n.arg(1))
    shape = ctx.config.get("shape")
    if not isinstance(shape, list):
        raise ctx.unsupported("config 'shape' missing")
    return Converted((Op(n.call("torch.matmul", a, b)),), (TensorInfo(tuple(shape), "keras"),))


@converter(TF + "Pad", wants="keras")
def pad(ctx: Ctx) -> Converted:
    """Reflect padding of the spatial axes (TF's MirrorPad REFLECT), or ``mode="constant"``: every axis but the
    batch padded with ``value`` (TF's PadV2), in TF's layout."""
    padding, mode = ctx.config.get("padding"), ctx.config.get("mode")
    if mode == "constant":
        return _constant_pad(ctx, padding, ctx.config.get("value"))
    if mode != "reflect" or not isinstance(padding, list) or len(padding) != ctx.x.rank - 2:
        raise ctx.unsupported(f"config mode {mode!r} / padding {padding!r}")
    flat = []  # F.pad lists the last axes first; channels (last) are not padded
    for pair in [[0, 0], *reversed(padding)]:
        flat += [int(pair[0]), int(pair[1])]
    shape = (*(None if s is None else s + a + b for s, (a, b) in zip(ctx.x.shape[:-1], padding)), ctx.x.shape[-1])
    if ctx.x.rank - 2 > 2:
        raise ctx.unsupported("reflect padding of more than 2 spatial axes")
    # torch pads channels-first images: move channels first for the pad, then back
    expr = n.call("F.pad", n.X.m("movedim", -1, 1), tuple(flat[2:]), mode="reflect").m("movedim", 1, -1)
    return Converted((Op(expr),), (TensorInfo(shape, "keras"),))


def _constant_pad(ctx: Ctx, padding: object, value: object) -> Converted:
    if not isinstance(padding, list) or len(padding) != ctx.x.rank - 1 or not isinstance(value, float):
        raise ctx.unsupported(f"config padding {padding!r} / value {value!r}")
    flat: list[int] = []  # F.pad lists the last axis first
    for pair in reversed(padding):
        flat += [int(pair[0]), int(pair[1])]
    while flat[-2:] == [0, 0] and len(flat) > 2:  # the leading unpadded axes need no entry
        flat = flat[:-2]
    shape = tuple(None if s is None else s + a + b for s, (a, b) in zip(ctx.x.shape, padding))
    return Converted((Op(n.call("F.pad", n.X, tuple(flat), value=value)),), (TensorInfo(shape, "keras"),))


@converter(TF + "Tile", wants="keras")
def tile(ctx: Ctx) -> Converted:
    reps = ctx.config.get("reps")
    if not isinstance(reps, list) or len(reps) != ctx.x.rank - 1:
        raise ctx.unsupported(f"config reps {reps!r}")
    shape = tuple(None if s is None else s * r for s, r in zip(ctx.x.shape, reps))
    return Converted((Op(n.X.m("tile", (1, *(int(r) for r in reps)))),), (TensorInfo(shape, "keras"),))


@converter(TF + "Stack", wants="keras")
def stack(ctx: Ctx) -> Converted:
    axis = _axis_any(ctx)
    args = [n.arg(i) for i in range(len(ctx.inputs))]
    shape = list(ctx.x.shape)
    shape.insert(axis - 1, len(ctx.inputs))
    return Converted((Op(n.call("torch.stack", args, dim=axis)),), (TensorInfo(tuple(shape), "keras"),))


@converter(TF + "Gather", wants="keras")
def gather(ctx: Ctx) -> Converted:
    """``x.index_select(axis, indices)`` with constant indices (a vector: the axis keeps its rank)."""
    axis, indices = _axis(ctx), ctx.config.get("indices")
    if not isinstance(indices, list) or not indices or any(isinstance(i, bool) or not isinstance(i, int) for i in indices):
        raise ctx.unsupported(f"config indices {indices!r}")
    shape = tuple(len(indices) if i == axis - 1 else s for i, s in enumerate(ctx.x.shape))
    return Converted((Op(n.X[(*[slice(None)] * axis, indices)]),), (TensorInfo(shape, "keras"),))


def _axis_any(ctx: Ctx) -> int:
    axis = ctx.config.get("axis")
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 < axis <= ctx.x.rank:
        raise ctx.unsupported(f"config 'axis' should be a non-batch axis, found {axis!r}")
    return axis
