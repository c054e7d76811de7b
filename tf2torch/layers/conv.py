"""Convolutions: Conv1D/2D/3D, DepthwiseConv1D/2D, SeparableConv1D/2D, Conv1D/2D/3DTranspose."""

from __future__ import annotations

from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import (
    activation_ops,
    apply_module,
    bind,
    cfg_bool,
    cfg_int,
    cfg_ints,
    cfg_str,
    channels_last,
    param,
    spatial,
)
from .padding import conv_out_size, transpose_plan, window_plan
from .registry import converter


def _ndim(class_name: str) -> int:
    for n in (1, 2, 3):
        if f"{n}D" in class_name:
            return n
    return 2


def _geometry(ctx: Ctx, n: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], str]:
    channels_last(ctx)
    kernel = cfg_ints(ctx, "kernel_size", n)
    strides = cfg_ints(ctx, "strides", n, 1)
    dilation = cfg_ints(ctx, "dilation_rate", n, 1)
    padding = cfg_str(ctx, "padding", "valid", ("valid", "same", "causal"))
    if any(s > 1 for s in strides) and any(d > 1 for d in dilation):
        raise ctx.unsupported("strides > 1 together with dilation_rate > 1 (TF rejects it too)")
    return kernel, strides, dilation, padding


def conv_like(ctx: Ctx, n: int, out_channels: int, groups: int, weight: Param, bias: Param | None,
               extra_notes: tuple[str, ...] = (), cls: str = "", more: tuple[Param, ...] = ()) -> Converted:
    """A conv module (``cls``: a helper class taking nn.ConvNd's arguments, e.g. TFLite's hybrid int8
    conv; ``more``: its extra state) with the one SAME plan."""
    kernel, strides, dilation, padding = _geometry(ctx, n)
    plan = window_plan(ctx, kernel, strides, dilation, padding)
    in_channels = ctx.x.shape[-1]
    module = Module(cls or f"nn.Conv{n}d", (in_channels, out_channels, kernel), (
        ("stride", strides), ("padding", plan.padding), ("dilation", dilation),
        ("groups", groups), ("bias", bias is not None)))
    out_spatial = tuple(conv_out_size(s, k, st, d, padding) for s, k, st, d in
                        zip(spatial(ctx.x), kernel, strides, dilation))
    out = TensorInfo((*out_spatial, out_channels), "cf")
    ops = (*plan.ops, apply_module(module), *activation_ops(ctx, ctx.config.get("activation"), out))
    params = ((weight,) if bias is None else (weight, bias)) + more
    return Converted(ops, (out,), params, notes=plan.notes + extra_notes,
                     helpers=plan.helpers + ((cls,) if cls else ()), sized=plan.sized)


@converter("Conv1D", "Conv2D", "Conv3D", wants="cf")
def conv(ctx: Ctx) -> Converted:
    n = _ndim(ctx.layer.class_name)
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    groups = cfg_int(ctx, "groups", 1)
    filters = cfg_int(ctx, "filters")
    bias = param("", "bias", w["bias"]) if use_bias else None
    return conv_like(ctx, n, filters, groups, param("", "weight", w["kernel"], f"conv{n}d"), bias)


@converter("DepthwiseConv1D", "DepthwiseConv2D", wants="cf")
def depthwise(ctx: Ctx) -> Converted:
    n = _ndim(ctx.layer.class_name)
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["depthwise_kernel", "bias"] if use_bias else ["depthwise_kernel"])
    channels = ctx.x.shape[-1]
    if channels is None:
        raise ctx.unsupported("the number of input channels is unknown")
    mult = cfg_int(ctx, "depth_multiplier", 1)
    bias = param("", "bias", w["bias"]) if use_bias else None
    weight = param("", "weight", w["depthwise_kernel"], f"depthwise{n}d")
    return conv_like(ctx, n, channels * mult, channels, weight, bias)


@converter("SeparableConv1D", "SeparableConv2D", wants="cf")
def separable(ctx: Ctx) -> Converted:
    """A depthwise conv (with the layer's padding/strides) then a 1x1 pointwise conv with the bias."""
    n = _ndim(ctx.layer.class_name)
    use_bias = cfg_bool(ctx, "use_bias", True)
    names = ["depthwise_kernel", "pointwise_kernel"] + (["bias"] if use_bias else [])
    w = bind(ctx, names)
    channels = ctx.x.shape[-1]
    mult = cfg_int(ctx, "depth_multiplier", 1)
    filters = cfg_int(ctx, "filters")
    kernel, strides, dilation, padding = _geometry(ctx, n)
    plan = window_plan(ctx, kernel, strides, dilation, padding)
    depthwise_module = Module(f"nn.Conv{n}d", (channels, channels * mult, kernel), (
        ("stride", strides), ("padding", plan.padding), ("dilation", dilation), ("groups", channels), ("bias", False)))
    pointwise_module = Module(f"nn.Conv{n}d", (channels * mult, filters, (1,) * n), (("bias", use_bias),))
    out_spatial = tuple(conv_out_size(s, k, st, d, padding) for s, k, st, d in
                        zip(spatial(ctx.x), kernel, strides, dilation))
    out = TensorInfo((*out_spatial, filters), "cf")
    params = [param("depthwise", "weight", w["depthwise_kernel"], f"depthwise{n}d"),
              param("", "weight", w["pointwise_kernel"], f"conv{n}d")]
    if use_bias:
        params.append(param("", "bias", w["bias"]))
    ops = (*plan.ops, apply_module(depthwise_module, "depthwise"), apply_module(pointwise_module),
           *activation_ops(ctx, ctx.config.get("activation"), out))
    return Converted(ops, (out,), tuple(params), notes=plan.notes, helpers=plan.helpers, sized=plan.sized)


@converter("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", wants="cf")
def conv_transpose(ctx: Ctx) -> Converted:
    n = _ndim(ctx.layer.class_name)
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    kernel, strides, dilation, padding = _geometry(ctx, n)
    if padding == "causal":
        raise ctx.unsupported("causal padding on a transposed conv")
    if ctx.config.get("output_padding") is not None:
        raise ctx.unsupported("output_padding is not supported", "save without output_padding")
    filters = cfg_int(ctx, "filters")
    plan = transpose_plan(ctx, kernel, strides, dilation, padding)
    module = Module(f"nn.ConvTranspose{n}d", (ctx.x.shape[-1], filters, kernel), (
        ("stride", strides), ("padding", plan.padding), ("output_padding", plan.output_padding),
        ("dilation", dilation), ("bias", use_bias)))
    out = TensorInfo((*plan.out_spatial, filters), "cf")
    params: tuple[Param, ...] = (param("", "weight", w["kernel"], layouts.get(f"conv{n}d_transpose")),)
    if use_bias:
        params += (param("", "bias", w["bias"]),)
    ops: tuple[Op, ...] = (apply_module(module), *plan.ops, *activation_ops(ctx, ctx.config.get("activation"), out))
    return Converted(ops, (out,), params, notes=plan.notes, helpers=plan.helpers)
