"""Shape layers: Flatten, Reshape, Permute, RepeatVector, ZeroPadding, Cropping, UpSampling."""

from __future__ import annotations

import math

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import apply_module, cfg_int, channels_last, spatial
from .registry import converter


def _n(ctx: Ctx) -> int:
    return int(ctx.layer.class_name[-2])  # "ZeroPadding2D" -> 2


def _known(shape) -> int | None:
    return None if any(s is None for s in shape) else math.prod(shape)


@converter("Flatten", wants="any")
def flatten(ctx: Ctx) -> Converted:
    x = ctx.x
    out_shape = (_known(x.shape),)
    if x.layout == "cf" and x.rank >= 3:
        # A channels-first flatten orders features (C, *spatial), Keras's (…spatial, C): the next Dense
        # reorders its kernel rows once (layouts.dense_after_flatten) instead of a permute per call.
        if any(s is None for s in x.shape):
            return Converted((Op(n.call("torch.flatten", n.X.m("movedim", 1, -1), 1)),), (TensorInfo(out_shape, "keras"),))
        return Converted((Op(n.call("torch.flatten", n.X, 1)),), (TensorInfo(out_shape, "cf_flat", tuple(x.shape)),))
    return Converted((Op(n.call("torch.flatten", n.X, 1)),), (TensorInfo(out_shape, "keras"),))


@converter("Reshape", wants="keras")
def reshape(ctx: Ctx) -> Converted:
    target = ctx.config.get("target_shape")
    if not isinstance(target, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in target):
        raise ctx.unsupported(f"config 'target_shape' should be a list of ints, found {target!r}")
    shape = list(target)
    if -1 in shape:
        known = _known(ctx.x.shape)
        rest = math.prod(v for v in shape if v != -1)
        shape[shape.index(-1)] = None if known is None or rest == 0 else known // rest
    # flatten + unflatten evaluates the input once and allows one -1, as Keras does
    return Converted((Op(n.X.m("flatten", 1).m("unflatten", 1, tuple(target))),), (TensorInfo(tuple(shape), "keras"),))


@converter("Permute", wants="keras")
def permute(ctx: Ctx) -> Converted:
    dims = ctx.config.get("dims")
    if not isinstance(dims, list) or sorted(dims) != list(range(1, len(dims) + 1)):
        raise ctx.unsupported(f"config 'dims' should be a permutation of 1..{ctx.x.rank - 1}, found {dims!r}")
    shape = tuple(ctx.x.shape[d - 1] for d in dims)
    return Converted((Op(n.X.m("permute", 0, *dims)),), (TensorInfo(shape, "keras"),))


@converter("RepeatVector", wants="keras")
def repeat_vector(ctx: Ctx) -> Converted:
    count = cfg_int(ctx, "n")
    return Converted((Op(n.X.m("unsqueeze", 1).m("expand", -1, count, -1)),), (TensorInfo((count, *ctx.x.shape), "keras"),))


def _pairs(ctx: Ctx, key: str, nd: int) -> tuple[tuple[int, int], ...]:
    """Keras padding/cropping: int, (a, b, …) symmetric per dim, or ((before, after), …)."""
    value = ctx.config.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return ((value, value),) * nd
    if isinstance(value, list) and len(value) == nd:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tuple((v, v) for v in value)
        if all(isinstance(v, list) and len(v) == 2 and all(isinstance(u, int) for u in v) for v in value):
            return tuple((v[0], v[1]) for v in value)
    if nd == 1 and isinstance(value, list) and len(value) == 2:  # Cropping1D/ZeroPadding1D: (before, after)
        return ((value[0], value[1]),)
    raise ctx.unsupported(f"config {key!r} should be per-dim (before, after) integers, found {value!r}")


@converter("ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", wants="cf")
def zero_padding(ctx: Ctx) -> Converted:
    channels_last(ctx)
    nd = _n(ctx)
    pairs = _pairs(ctx, "padding", nd)
    torch_order = tuple(v for pair in reversed(pairs) for v in pair)  # F.pad order: last dim first
    sizes = tuple(None if s is None else s + a + b for s, (a, b) in zip(spatial(ctx.x), pairs))
    return Converted((apply_module(Module(f"nn.ZeroPad{nd}d", (torch_order,))),),
                     (TensorInfo((*sizes, ctx.x.shape[-1]), "cf"),))


@converter("Cropping1D", "Cropping2D", "Cropping3D", wants="cf")
def cropping(ctx: Ctx) -> Converted:
    channels_last(ctx)
    nd = _n(ctx)
    pairs = _pairs(ctx, "cropping", nd)
    slices = tuple(slice(a, None if b == 0 else -b) for a, b in pairs)
    sizes = tuple(None if s is None else s - a - b for s, (a, b) in zip(spatial(ctx.x), pairs))
    return Converted((Op(n.X[(slice(None), slice(None), *slices)]),), (TensorInfo((*sizes, ctx.x.shape[-1]), "cf"),))


@converter("UpSampling1D", "UpSampling2D", "UpSampling3D", wants="cf")
def upsampling(ctx: Ctx) -> Converted:
    channels_last(ctx)
    nd = _n(ctx)
    key = "size"
    size = ctx.config.get(key, 2)
    factors = tuple(size) if isinstance(size, list) else (size,) * nd
    if len(factors) != nd or any(isinstance(f, bool) or not isinstance(f, int) or f < 1 for f in factors):
        raise ctx.unsupported(f"config 'size' should be {nd} positive integers, found {size!r}")
    mode = ctx.config.get("interpolation", "nearest")
    if mode not in ("nearest", "bilinear") or (mode == "bilinear" and nd != 2):
        raise ctx.unsupported(f"interpolation {mode!r} is not supported (nearest, bilinear for 2D)")
    kwargs: tuple = (("scale_factor", tuple(float(f) for f in factors)), ("mode", mode))
    if mode == "bilinear":  # Keras resizes with half-pixel centres: torch's align_corners=False
        kwargs += (("align_corners", False),)
    sizes = tuple(None if s is None else s * f for s, f in zip(spatial(ctx.x), factors))
    return Converted((apply_module(Module("nn.Upsample", (), kwargs)),), (TensorInfo((*sizes, ctx.x.shape[-1]), "cf"),))
