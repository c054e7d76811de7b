"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate."""

from __future__ import annotations

from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .registry import converter


def _operands(ctx: Ctx) -> list[str]:
    if len(ctx.inputs) < 2 and ctx.layer.class_name != "Subtract":
        raise ctx.unsupported(f"expected at least 2 inputs, found {len(ctx.inputs)}")
    return [f"{{{i}}}" for i in range(len(ctx.inputs))]


def _broadcast(ctx: Ctx) -> TensorInfo:
    """The output info: the input with the most known dims (Keras merges broadcast size-1 dims)."""
    return max(ctx.inputs, key=lambda i: (i.rank, sum(s is not None and s != 1 for s in i.shape)))


@converter("Add", wants="same")
def add(ctx: Ctx) -> Converted:
    return Converted((Op(" + ".join(_operands(ctx))),), (_broadcast(ctx),))


@converter("Subtract", wants="same")
def subtract(ctx: Ctx) -> Converted:
    if len(ctx.inputs) != 2:
        raise ctx.unsupported(f"Subtract takes exactly 2 inputs, found {len(ctx.inputs)}")
    return Converted((Op("{0} - {1}"),), (_broadcast(ctx),))


@converter("Multiply", wants="same")
def multiply(ctx: Ctx) -> Converted:
    return Converted((Op(" * ".join(_operands(ctx))),), (_broadcast(ctx),))


@converter("Average", wants="same")
def average(ctx: Ctx) -> Converted:
    ops = _operands(ctx)
    return Converted((Op(f"({' + '.join(ops)}) / {len(ops)}"),), (_broadcast(ctx),))


@converter("Maximum", "Minimum", wants="same")
def extremum(ctx: Ctx) -> Converted:
    fn = "torch.maximum" if ctx.layer.class_name == "Maximum" else "torch.minimum"
    expr = "{0}"
    for i in range(1, len(_operands(ctx))):
        expr = f"{fn}({expr}, {{{i}}})"
    return Converted((Op(expr),), (_broadcast(ctx),))


@converter("Concatenate", wants="same")
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
    expr = f"torch.cat([{', '.join(_operands(ctx))}], dim={torch_axis(axis, first)})"
    return Converted((Op(expr),), (TensorInfo(shape, first.layout),))
