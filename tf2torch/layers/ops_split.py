"""``keras.ops.split`` on a symbolic tensor in a Keras 3 Functional model (``Split``; keras-hub's CSPNet
halves its channels with it). One call, several outputs (``keras_history`` index 0, 1 …), converted as
one ``torch.split`` whose tuple the generated model unpacks.

Keras's TensorFlow backend splits with ``tf.split``: ``N`` sections must divide the axis exactly, and a
list of indices ``[i0, i1, …]`` means the pieces ``[:i0], [i0:i1], …, [ilast:]``. Both are written here
as explicit sizes, so an uneven or out-of-order split (an error in Keras) is refused, never evened out.
"""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from ..readers.keras_calls import ARGS_KWARG
from ..spec import TensorRef
from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .registry import converter


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _sizes(ctx: Ctx, sections: Any, size: int) -> list[int]:
    """The pieces' sizes along the axis, as ``tf.split`` would cut them."""
    if _is_int(sections):
        if sections < 1 or size % sections:
            raise ctx.unsupported(f"indices_or_sections={sections} does not divide the axis of size {size} "
                                  "(Keras refuses this split too)")
        return [size // sections] * sections
    if isinstance(sections, dict) and sections.get("class_name") == "__tuple__":  # Keras 3 keeps tuples apart
        sections = (sections.get("config") or {}).get("value")
    if not isinstance(sections, list) or not sections or not all(_is_int(i) for i in sections):
        raise ctx.unsupported(f"indices_or_sections={str(sections)[:60]!r}; expected a number of sections or "
                              "a list of split indices")
    bounds = [0, *sections, size]
    if any(b > a for a, b in zip(bounds[1:], bounds)):  # negative, unsorted or past the end: tf.split fails
        raise ctx.unsupported(f"split indices {sections!r} are not sorted within the axis of size {size}")
    return [b - a for a, b in zip(bounds, bounds[1:])]


@converter("keras.src.ops.numpy>Split", wants="any")
def split(ctx: Ctx) -> Converted:
    args = ctx.call.kwargs.get(ARGS_KWARG)
    extra = {k for k in ctx.call.kwargs if k != ARGS_KWARG}
    if len(ctx.inputs) != 1 or extra or (args is not None and not (len(args) == 1 and isinstance(args[0], TensorRef))):
        raise ctx.unsupported("expected keras.ops.split(x) with its sections and axis in the config")
    if ctx.x.layout == "cf_flat":
        raise ctx.unsupported("splitting a flattened channels-first tensor")
    axis = ctx.config.get("axis")  # Keras saves every argument of an op, defaults included
    if not _is_int(axis) or not -ctx.x.rank <= axis < ctx.x.rank or axis % ctx.x.rank == 0:
        raise ctx.unsupported(f"axis={axis!r}; expected a non-batch axis")
    axis %= ctx.x.rank
    size = ctx.x.shape[axis - 1]
    if size is None:  # tf.split's check would happen at run time; torch would cut unevenly instead
        raise ctx.unsupported("splitting an axis of unknown size")
    sizes = _sizes(ctx, ctx.config.get("indices_or_sections"), size)
    outs = tuple(TensorInfo(tuple(s if i == axis - 1 else d for i, d in enumerate(ctx.x.shape)), ctx.x.layout)
                 for s in sizes)
    dim = torch_axis(axis, ctx.x)
    return Converted((Op(n.call("torch.split", n.X, sizes, dim=dim)),), outs)
