"""``keras.ops`` array calls on symbolic tensors in a Keras 3 Functional model: ``x[...]`` (``GetItem``;
keras-hub's BERT pools ``x[:, 0, :]``) and ``keras.ops.pad`` (``Pad``; ResNetV2 pads with -inf before its
max-pool). Their arguments are saved as data and rendered here as literals.
"""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from ..readers.keras_calls import ARGS_KWARG
from ..spec import TensorRef
from .base import Converted, Ctx, Op, TensorInfo
from .common import torch_axis
from .registry import converter


def _bound(ctx: Ctx, value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ctx.unsupported(f"slice bound {value!r} is not an integer")


def _items(ctx: Ctx, index: Any) -> list[Any]:
    """The index as a list of ints, slices and None."""
    if isinstance(index, dict) and index.get("class_name") == "__tuple__":
        index = (index.get("config") or {}).get("value")
    items = index if isinstance(index, list) else [index]
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and item.get("class_name") == "__slice__" and isinstance(item.get("config"), dict):
            c = item["config"]
            step = _bound(ctx, c.get("step"))
            if step is not None and step <= 0:
                raise ctx.unsupported("a slice with a non-positive step")
            out.append(slice(_bound(ctx, c.get("start")), _bound(ctx, c.get("stop")), step))
        elif item is None or (isinstance(item, int) and not isinstance(item, bool)):
            out.append(item)
        else:
            raise ctx.unsupported(f"index item {str(item)[:60]!r} (supported: integers, slices, None)")
    return out


@converter("keras.src.ops.numpy>GetItem", wants="keras")
def get_item(ctx: Ctx) -> Converted:
    args = ctx.call.kwargs.get(ARGS_KWARG)
    if not isinstance(args, list) or len(args) != 2 or not isinstance(args[0], TensorRef) or len(ctx.inputs) != 1:
        raise ctx.unsupported("expected x[index] with a constant index")
    items = _items(ctx, args[1])
    if not items:
        raise ctx.unsupported("an empty index")
    dims = [d for d in items if d is not None]
    if len(dims) > ctx.x.rank:
        raise ctx.unsupported(f"{len(dims)} indices for a tensor of rank {ctx.x.rank}")
    if not isinstance(items[0], slice):
        raise ctx.unsupported("indexing the batch axis away (or a new axis before it)")
    sizes: list[int | None] = [None, *ctx.x.shape]  # with the batch axis
    shape: list[int | None] = []
    axis = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        size = sizes[axis]
        axis += 1
        if isinstance(item, slice):
            shape.append(None if size is None else len(range(*item.indices(size))))
        elif size is not None and not -size <= item < size:
            raise ctx.unsupported(f"index {item} out of range for an axis of size {size}")
    shape += sizes[axis:]
    return Converted((Op(n.X[tuple(items) if len(items) > 1 else items[0]]),), (TensorInfo(tuple(shape[1:])),))


@converter("keras.src.ops.numpy>Pad", wants="any")
def pad(ctx: Ctx) -> Converted:
    """keras.ops.pad(x, pad_width, mode="constant", constant_values=c) as F.pad over the same axes."""
    widths, mode = ctx.config.get("pad_width"), ctx.config.get("mode", "constant")
    value = ctx.call.kwargs.get("constant_values")
    value = 0 if value is None else value  # Keras records the default as None: zeros
    if mode != "constant":
        raise ctx.unsupported(f"mode={mode!r}; only constant padding is supported")
    if ctx.x.layout == "cf_flat":
        raise ctx.unsupported("padding a flattened channels-first tensor")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or len(ctx.inputs) != 1:
        raise ctx.unsupported(f"constant_values={value!r}; expected one number")
    ok = isinstance(widths, list) and len(widths) == ctx.x.rank and all(
        isinstance(w, list) and len(w) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in w)
        for w in widths)
    if not ok or widths[0] != [0, 0]:
        raise ctx.unsupported(f"pad_width={widths!r}; expected one [before, after] per axis, none on the batch axis")
    by_dim = {torch_axis(a, ctx.x): w for a, w in enumerate(widths)}
    padded = [d for d, w in by_dim.items() if w != [0, 0]]
    # F.pad's pairs start at the last dim and go backwards, down to the first padded one
    flat = [v for d in range(ctx.x.rank - 1, min(padded, default=ctx.x.rank) - 1, -1) for v in by_dim[d]]
    shape = tuple(None if s is None else s + sum(w) for s, w in zip(ctx.x.shape, widths[1:]))
    return Converted((Op(n.call("F.pad", n.X, flat, value=float(value))),),  # inf / nan: float('-inf')
                     (TensorInfo(shape, ctx.x.layout),))
