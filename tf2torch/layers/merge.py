"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate."""

from __future__ import annotations

import functools
import operator

from ..codegen import nodes as n
from ..readers.keras_calls import ARGS_KWARG
from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .ops import NUMPY, broadcast, operands
from .registry import converter


def _is_op(ctx: Ctx) -> bool:
    """A Keras 3 op saved in a legacy .h5, which drops op layers' module: ``x * 2.0`` reads as class
    "Multiply" with a constant among its arguments. A layer's config always has "trainable", an op's never."""
    return "trainable" not in ctx.config or ARGS_KWARG in ctx.call.kwargs


def _operands(ctx: Ctx) -> list[n.Expr]:
    if _is_op(ctx):  # the op's positional operands (numbers allowed, keyword operands refused)
        return operands(ctx)
    if len(ctx.inputs) < 2 and ctx.layer.class_name != "Subtract":
        raise ctx.unsupported(f"expected at least 2 inputs, found {len(ctx.inputs)}")
    top = max(i.rank for i in ctx.inputs)
    out = []
    for i, info in enumerate(ctx.inputs):
        # Keras merges expand a lower-rank input right after the batch axis ((N, C) -> (N, 1, 1, C)),
        # not on the left as torch broadcasting would ((1, 1, N, C)): insert the axes explicitly, after
        # the channels when the tensor is channels-first ((N, C) -> (N, C, 1, 1)).
        new_axes = (None,) * (top - info.rank)
        keep = (slice(None),) * (2 if ctx.inputs[0].layout == "cf" and top > 2 else 1)
        out.append(n.arg(i)[(*keep, *new_axes)] if new_axes else n.arg(i))
    return out


def _broadcast(ctx: Ctx) -> TensorInfo:
    """The output info: the input with the most known dims (Keras merges broadcast size-1 dims)."""
    if _is_op(ctx):
        return broadcast(ctx)  # ops broadcast like numpy (right-aligned): same ranks only
    return max(ctx.inputs, key=lambda i: (i.rank, sum(s is not None and s != 1 for s in i.shape)))


@converter("Add", wants="same")
def add(ctx: Ctx) -> Converted:
    return Converted((Op(functools.reduce(operator.add, _operands(ctx))),), (_broadcast(ctx),))


@converter("Subtract", wants="same")
def subtract(ctx: Ctx) -> Converted:
    ops = _operands(ctx)
    if len(ops) != 2:
        raise ctx.unsupported(f"Subtract takes exactly 2 inputs, found {len(ops)}")
    return Converted((Op(ops[0] - ops[1]),), (_broadcast(ctx),))


@converter("Multiply", wants="same")
def multiply(ctx: Ctx) -> Converted:
    return Converted((Op(functools.reduce(operator.mul, _operands(ctx))),), (_broadcast(ctx),))


@converter("Average", wants="same")
def average(ctx: Ctx) -> Converted:
    if _is_op(ctx):
        raise ctx.unsupported("keras.ops.average (a reduction, saved in .h5 under the merge layer's name)",
                              "save the model as .keras, or use keras.layers.Average")
    ops = _operands(ctx)
    return Converted((Op(functools.reduce(operator.add, ops) / len(ops)),), (_broadcast(ctx),))


@converter("Maximum", "Minimum", wants="same")
def extremum(ctx: Ctx) -> Converted:
    fn = "torch.maximum" if ctx.layer.class_name == "Maximum" else "torch.minimum"
    ops = _operands(ctx)
    if len(ctx.inputs) == 1 and len(ops) == 2:  # an op with a number (Keras 3 .h5, see _operands)
        bound = ops[1] if ops[0] == n.arg(0) else ops[0]
        return Converted((Op(n.arg(0).m("clamp", **{"min" if fn == "torch.maximum" else "max": bound})),), (ctx.x,))
    expr = ops[0]
    for op in ops[1:]:
        expr = n.call(fn, expr, op)
    return Converted((Op(expr),), (_broadcast(ctx),))


@converter("Concatenate", NUMPY + "Concatenate", wants="same")  # keras.ops.concatenate saves its axis
def concatenate(ctx: Ctx) -> Converted:
    axis = ctx.config.get("axis", -1)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ctx.unsupported(f"config 'axis' should be an integer, found {axis!r}")
    first = ctx.inputs[0]
    a = axis % first.rank
    if a == 0:
        raise ctx.unsupported("concatenation along the batch axis")
    sizes = [i.shape[a - 1] for i in ctx.inputs]
    total = None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]
    shape = tuple(total if k == a - 1 else s for k, s in enumerate(first.shape))
    expr = n.call("torch.cat", _operands(ctx), dim=torch_axis(axis, first))
    return Converted((Op(expr),), (TensorInfo(shape, first.layout),))
