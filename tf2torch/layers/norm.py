"""Normalisation layers: BatchNormalization (epsilon and momentum carried over), LayerNormalization,
and the preprocessing layers Normalization and Rescaling."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param
from .common import apply_module, bind, cfg_bool, cfg_float, param, torch_axis
from .registry import converter


def _axes(ctx: Ctx) -> list[int]:
    axis = ctx.config.get("axis", -1)
    axes = axis if isinstance(axis, list) else [axis]
    if not axes or any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
        raise ctx.unsupported(f"config 'axis' should be an int or a list of ints, found {axis!r}")
    return [a % ctx.x.rank for a in axes]


def _ones(n: int) -> np.ndarray:
    return np.ones(n, dtype=np.float32)


@converter("BatchNormalization", wants="cf")
def batch_norm(ctx: Ctx) -> Converted:
    if _axes(ctx) != [ctx.x.rank - 1]:
        raise ctx.unsupported(f"BatchNormalization over axis {ctx.config.get('axis')!r}; only the channel axis is supported")
    scale, center = cfg_bool(ctx, "scale", True), cfg_bool(ctx, "center", True)
    names = (["gamma"] if scale else []) + (["beta"] if center else []) + ["moving_mean", "moving_variance"]
    w = bind(ctx, names)
    channels = ctx.x.shape[-1]
    eps = cfg_float(ctx, "epsilon", 1e-3)
    momentum = cfg_float(ctx, "momentum", 0.99)
    dims = {2: 1, 3: 1, 4: 2, 5: 3}.get(ctx.x.rank)
    if dims is None:
        raise ctx.unsupported(f"BatchNormalization of a rank-{ctx.x.rank} tensor")
    # Keras: moving = m * moving + (1 - m) * batch; torch: moving = (1 - m') * moving + m' * batch.
    module = Module(f"nn.BatchNorm{dims}d", (channels,), (("eps", eps), ("momentum", round(1 - momentum, 10))))
    params = [
        param("", "weight", w["gamma"]) if scale else Param("", "weight", layouts.IDENTITY, const=_ones(channels)),
        param("", "bias", w["beta"]) if center else Param("", "bias", layouts.IDENTITY, const=0 * _ones(channels)),
        param("", "running_mean", w["moving_mean"]),
        param("", "running_var", w["moving_variance"]),
        Param("", "num_batches_tracked", layouts.IDENTITY, const=np.zeros((), dtype=np.int64)),
    ]
    notes = [f"epsilon {eps:g} carried over (PyTorch's default is 1e-5)"]
    return Converted((apply_module(module),), (ctx.x,), tuple(params), notes=tuple(notes))


@converter("LayerNormalization", wants="keras")
def layer_norm(ctx: Ctx) -> Converted:
    axes = _axes(ctx)
    rank = ctx.x.rank
    if axes != list(range(rank - len(axes), rank)):
        raise ctx.unsupported(f"LayerNormalization over axes {axes}; only trailing axes are supported")
    if ctx.config.get("rms_scaling"):
        raise ctx.unsupported("rms_scaling=True is not supported")
    scale, center = cfg_bool(ctx, "scale", True), cfg_bool(ctx, "center", True)
    w = bind(ctx, (["gamma"] if scale else []) + (["beta"] if center else []))
    shape = tuple(ctx.x.shape[a - 1] for a in axes)
    eps = cfg_float(ctx, "epsilon", 1e-3)
    kwargs = [("eps", eps), ("elementwise_affine", scale or center)]
    if scale != center:
        kwargs.append(("bias", center))
        if not scale:
            raise ctx.unsupported("LayerNormalization with center=True, scale=False")
    module = Module("nn.LayerNorm", (shape,), tuple(kwargs))
    params = ([param("", "weight", w["gamma"])] if scale else []) + ([param("", "bias", w["beta"])] if center else [])
    return Converted((apply_module(module),), (ctx.x,), tuple(params),
                     notes=(f"epsilon {eps:g} carried over (PyTorch's default is 1e-5)",))


def _per_channel(ctx: Ctx, key: str, default: float) -> np.ndarray:
    """A config constant as one float32 per channel (the last Keras axis), broadcast like numpy does.

    Keras writes a number, a list (possibly nested, e.g. [[[0.485, 0.456, 0.406]]]), or, for a numpy
    array in Keras 3, ``{"class_name": "__numpy__", "config": {"value": [...]}}``.
    """
    value = ctx.config.get(key, default)
    if isinstance(value, Mapping) and value.get("class_name") == "__numpy__":
        value = (value.get("config") or {}).get("value")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.asarray(None)
    channels = ctx.x.shape[-1]
    if isinstance(value, bool) or array.dtype != np.float64 or channels is None:
        raise ctx.unsupported(f"config {key!r} should be a number or one number per channel, found {value!r}")
    if array.size == 1:
        return np.full(channels, array.item(), dtype=np.float32)
    if array.shape[-1:] != (channels,) or array.size != channels:
        raise ctx.unsupported(f"config {key!r} of shape {array.shape}: only a scalar or one value per "
                              f"channel ({channels}) along the last axis is supported")
    return array.reshape(channels).astype(np.float32)


@converter("Rescaling", wants="any")
def rescaling(ctx: Ctx) -> Converted:
    scale, offset = ctx.config.get("scale", 1.0), ctx.config.get("offset", 0.0)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (scale, offset)):
        expr = n.X if scale == 1 else n.X * float(scale)
        if offset:
            expr = expr - abs(float(offset)) if offset < 0 else expr + abs(float(offset))
        return Converted((Op(expr),), (ctx.x,))
    # Per-channel lists (EfficientNet with ImageNet weights: scale=[1/sqrt(std), ...]) broadcast along
    # Keras's last axis, i.e. the channels: buffers viewed along the channel dim of our layout.
    scales, offsets = _per_channel(ctx, "scale", 1.0), _per_channel(ctx, "offset", 0.0)
    module = Module("KerasRescaling", (len(scales), torch_axis(-1, ctx.x)))
    params = (Param("", "scale", layouts.IDENTITY, const=scales),
              Param("", "offset", layouts.IDENTITY, const=offsets))
    return Converted((apply_module(module),), (ctx.x,), params, helpers=("KerasRescaling",))


@converter("Normalization", wants="any")
def normalization(ctx: Ctx) -> Converted:
    """(x - mean) / max(sqrt(variance), 1e-7), with Keras's stored statistics as buffers."""
    if _axes(ctx) != [ctx.x.rank - 1]:
        raise ctx.unsupported("Normalization over an axis other than the last")
    if ctx.config.get("invert"):
        raise ctx.unsupported("Normalization(invert=True)")
    channels = ctx.x.shape[-1]
    dim = torch_axis(-1, ctx.x)
    module = Module("KerasNormalization", (channels, dim))
    if ctx.config.get("mean") is not None:
        # mean/variance given to the constructor (EfficientNetV2's ImageNet statistics) live in the
        # config, not in the weights: the layer has no variables then, so they become constant buffers.
        mean, variance = _per_channel(ctx, "mean", 0.0), _per_channel(ctx, "variance", 1.0)
        params = (Param("", "mean", layouts.IDENTITY, const=mean),
                  Param("", "variance", layouts.IDENTITY, const=variance))
        return Converted((apply_module(module),), (ctx.x,), params, helpers=("KerasNormalization",))
    w = bind(ctx, ["mean", "variance", "count"])
    flat = layouts.get("flatten_to_1d")
    params = (param("", "mean", w["mean"], flat), param("", "variance", w["variance"], flat))
    return Converted((apply_module(module),), (ctx.x,), params, helpers=("KerasNormalization",))


@converter("GroupNormalization", wants="cf")
def group_norm(ctx: Ctx) -> Converted:
    """Keras groups consecutive channels, as torch's GroupNorm does; statistics over each group and
    the spatial axes, epsilon inside the square root (default 1e-3)."""
    if _axes(ctx) != [ctx.x.rank - 1]:
        raise ctx.unsupported("GroupNormalization over an axis other than the channels")
    scale, center = cfg_bool(ctx, "scale", True), cfg_bool(ctx, "center", True)
    if scale != center:
        raise ctx.unsupported("GroupNormalization with only one of center / scale")
    groups, channels = int(ctx.config.get("groups", 32)), ctx.x.shape[-1]
    eps = cfg_float(ctx, "epsilon", 1e-3)
    w = bind(ctx, ["gamma", "beta"] if scale else [])
    module = Module("nn.GroupNorm", (groups, channels), (("eps", eps), ("affine", scale)))
    params = (param("", "weight", w["gamma"]), param("", "bias", w["beta"])) if scale else ()
    return Converted((apply_module(module),), (ctx.x,), params, notes=(f"epsilon {eps:g} carried over",))


@converter("RMSNormalization", wants="keras")
def rms_norm(ctx: Ctx) -> Converted:
    """x * rsqrt(mean(x^2) + epsilon) * scale over the last axis (Keras default epsilon 1e-6)."""
    if _axes(ctx) != [ctx.x.rank - 1]:
        raise ctx.unsupported("RMSNormalization over an axis other than the last")
    eps = cfg_float(ctx, "epsilon", 1e-6)
    w = bind(ctx, ["scale"])
    module = Module("nn.RMSNorm", ((ctx.x.shape[-1],),), (("eps", eps),))
    return Converted((apply_module(module),), (ctx.x,), (param("", "weight", w["scale"]),),
                     notes=(f"epsilon {eps:g} carried over",))


@converter("UnitNormalization", wants="keras")
def unit_norm(ctx: Ctx) -> Converted:
    """x / max(||x||_2, 1e-12) over ``axis`` (Keras: ops.normalize(order=2, epsilon=1e-12))."""
    axes = _axes(ctx)
    dims = tuple(a for a in axes)
    if len(dims) != 1:
        raise ctx.unsupported(f"UnitNormalization over several axes {axes}")
    return Converted((Op(n.call("F.normalize", n.X, p=2.0, dim=dims[0], eps=1e-12)),), (ctx.x,))
