"""``keras.ops`` reductions on symbolic tensors in a Keras 3 Functional model: ``keras.ops.mean``,
``sum``, ``max``, ``min`` over constant axes (keras-hub's ViT classifier averages its tokens with
``ops.mean(x, axis=[1])``). The axes are data, checked here; the batch axis is never reduced.
"""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from .base import Converted, Ctx, Op, TensorInfo
from .ops import NUMPY, operands
from .registry import converter

# keras.ops name -> torch method; torch's max/min over several dims is amax/amin (max(dim=) returns indices)
_REDUCE = {"Mean": "mean", "Sum": "sum", "Max": "amax", "Min": "amin"}


def _axes(ctx: Ctx, axis: Any) -> list[int]:
    """Non-batch axes in Keras's (channels-last) numbering, 1-based as torch counts them with the batch."""
    items = axis if isinstance(axis, list) else [axis]
    rank = ctx.x.rank  # (with the batch axis)
    if axis is None or not items or any(isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank
                                        for a in items):
        raise ctx.unsupported(f"config 'axis' should be axes of a rank-{rank} tensor, found {axis!r}",
                              "reduce over explicit axes (axis=None also reduces the batch)")
    axes = sorted({a % rank for a in items})
    if axes[0] == 0:
        raise ctx.unsupported("reducing over the batch axis")
    return axes


@converter(*(NUMPY + name for name in _REDUCE), wants="keras")
def reduce(ctx: Ctx) -> Converted:
    if len(ctx.inputs) != 1 or len(operands(ctx)) != 1:
        raise ctx.unsupported("expected exactly one tensor operand")
    keep = ctx.config.get("keepdims", False)
    if not isinstance(keep, bool):
        raise ctx.unsupported(f"config 'keepdims' should be true or false, found {keep!r}")
    if ctx.config.get("initial") is not None:  # max/min's floor (ceiling) value
        raise ctx.unsupported(f"config 'initial'={ctx.config['initial']!r}", "clamp the result in a layer of its own")
    axes = _axes(ctx, ctx.config.get("axis"))
    fn = _REDUCE[ctx.layer.class_name[len(NUMPY):]]
    shape = tuple(1 if i + 1 in axes else s for i, s in enumerate(ctx.x.shape) if keep or i + 1 not in axes)
    return Converted((Op(n.X.m(fn, dim=tuple(axes), keepdim=keep)),), (TensorInfo(shape, "keras"),))
