"""Pooling: Max/AveragePooling 1D/2D/3D (exact TF 'SAME') and the global pools."""

from __future__ import annotations

from ..codegen import nodes as n
from . import masks
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import apply_module, cfg_bool, cfg_ints, cfg_str, channels_last, spatial
from .padding import conv_out_size, pool_ops
from .registry import converter


def _ndim(ctx: Ctx) -> int:
    return int(ctx.layer.class_name[-2])  # "MaxPooling2D" -> 2


def _window(ctx: Ctx, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    channels_last(ctx)
    kernel = cfg_ints(ctx, "pool_size", nd)
    strides = ctx.config.get("strides")
    strides_t = kernel if strides is None else cfg_ints(ctx, "strides", nd)  # Keras: strides=None means pool_size
    return kernel, strides_t, cfg_str(ctx, "padding", "valid", ("valid", "same"))


def _out(ctx: Ctx, kernel, strides, mode) -> TensorInfo:
    sizes = tuple(conv_out_size(s, k, st, 1, mode) for s, k, st in zip(spatial(ctx.x), kernel, strides))
    return TensorInfo((*sizes, ctx.x.shape[-1]), "cf")


@converter("MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", wants="cf")
def max_pool(ctx: Ctx) -> Converted:
    nd = _ndim(ctx)
    kernel, strides, mode = _window(ctx, nd)
    plan = pool_ops(ctx, kernel, strides, mode, "max")
    return Converted(plan.ops, (_out(ctx, kernel, strides, mode),), notes=plan.notes, helpers=plan.helpers,
                     sized=plan.sized)


@converter("AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           wants="cf")
def avg_pool(ctx: Ctx) -> Converted:
    nd = _ndim(ctx)
    kernel, strides, mode = _window(ctx, nd)
    plan = pool_ops(ctx, kernel, strides, mode, "avg")
    return Converted(plan.ops, (_out(ctx, kernel, strides, mode),), notes=plan.notes, helpers=plan.helpers,
                     sized=plan.sized)


@converter("GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
           "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPool3D", wants="cf")
def global_pool(ctx: Ctx) -> Converted:
    channels_last(ctx)
    nd = len(ctx.x.shape) - 1
    keepdims = cfg_bool(ctx, "keepdims", False)
    dims = tuple(range(2, 2 + nd))
    reduce = "mean" if "Average" in ctx.layer.class_name or "Avg" in ctx.layer.class_name else "amax"
    expr = n.X.m(reduce, dim=dims, keepdim=keepdims)
    mask = masks.call_mask(ctx)
    if mask is not None and ctx.layer.class_name not in ("GlobalAveragePooling1D", "GlobalAvgPool1D"):
        raise ctx.unsupported("a Keras mask (masked pooling is converted for GlobalAveragePooling1D only)")
    if mask is not None:  # the mean over the unmasked steps (all masked: 0 / 0, as in Keras)
        keep = mask.m("unsqueeze", 1)  # (N, 1, T) against the channels-first (N, C, T)
        as_x = keep.m("to", n.Attr(n.X, "dtype"))
        # Keras 3 zeroes the masked steps with where(); tf_keras multiplies by the mask
        kept = n.call("torch.where", keep, n.X, 0.0) if ctx.keras_version == 3 else n.X * as_x
        expr = kept.m("sum", dim=2, keepdim=keepdims) / as_x.m("sum", dim=2, keepdim=keepdims)
    channels = ctx.x.shape[-1]
    out = TensorInfo(((1,) * nd + (channels,)) if keepdims else (channels,), "cf" if keepdims else "keras")
    return Converted((Op(expr),), (out,))


@converter("AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D", wants="cf")
def adaptive_pool(ctx: Ctx) -> Converted:
    """Keras 3's adaptive pools: the bins torch's adaptive pools use (start floor(i * in / out), end
    ceil((i + 1) * in / out)), checked against Keras in the tests."""
    channels_last(ctx)
    nd = int(ctx.layer.class_name[-2])
    size = ctx.config.get("output_size")
    sizes = tuple(size) if isinstance(size, (list, tuple)) else (size,) * nd
    if len(sizes) != nd or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
        raise ctx.unsupported(f"config 'output_size' should be {nd} positive integers, found {size!r}")
    kind = "Avg" if "Average" in ctx.layer.class_name else "Max"
    module = Module(f"nn.Adaptive{kind}Pool{nd}d", (sizes,))
    return Converted((apply_module(module),), (TensorInfo((*sizes, ctx.x.shape[-1]), "cf"),))
