"""Array ops a TF graph has and Keras has no layer for: split, unstack, strided slice.

The TF-graph lowering (``tfgraph/ops_array.py``) emits them as layers of these classes, with axes
counted as in the graph (batch first, channels last); each converter maps its axis through the
tensor's layout, so a split of an NHWC channel axis is a split of dim 1 of the channels-first tensor.
"""

from __future__ import annotations

from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .registry import converter

TF = "tf2torch>"


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
    return Converted((Op(f"torch.split({{x}}, {sizes!r}, dim={dim})"),), outs)


@converter(TF + "Unstack", wants="any")
def unstack(ctx: Ctx) -> Converted:
    axis = _axis(ctx)
    count = ctx.x.shape[axis - 1]
    if count is None:
        raise ctx.unsupported("unstacking an axis of unknown size")
    shape = tuple(d for i, d in enumerate(ctx.x.shape) if i != axis - 1)
    layout = ctx.x.layout if axis != ctx.x.rank - 1 else "keras"  # no channel axis left to move
    dim = torch_axis(axis, ctx.x)
    return Converted((Op(f"torch.unbind({{x}}, dim={dim})"),), tuple(TensorInfo(shape, layout) for _ in range(count)))


@converter(TF + "Slice", wants="keras")
def strided_slice(ctx: Ctx) -> Converted:
    """``x[:, b0:e0:s0, b1:e1:s1, ...]`` over the non-batch axes (each a [begin, end, step], None for open)."""
    ranges = ctx.config.get("ranges")
    if not isinstance(ranges, list) or len(ranges) != ctx.x.rank - 1:
        raise ctx.unsupported(f"config 'ranges' should give one [begin, end, step] per non-batch axis, found {ranges!r}")
    parts, shape = [":"], []
    for (begin, end, step), size in zip(ranges, ctx.x.shape):
        for v in (begin, end, step):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ctx.unsupported(f"slice bound {v!r} is not an integer")
        if step is not None and step <= 0:
            raise ctx.unsupported("a slice with a non-positive step")
        parts.append(":".join("" if v is None else str(v) for v in (begin, end, step)).rstrip(":") or ":")
        shape.append(None if size is None else len(range(*slice(begin, end, step).indices(size))))
    return Converted((Op(f"{{x}}[{', '.join(parts)}]"),), (TensorInfo(tuple(shape), "keras"),))
