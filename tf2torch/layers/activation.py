"""Activation layers: Activation, ReLU, LeakyReLU, PReLU, ELU, Softmax, ThresholdedReLU."""

from __future__ import annotations

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op
from .common import activation_ops, apply_module, bind, cfg_float, param, torch_axis
from .registry import converter


@converter("Activation", wants="any")
def activation(ctx: Ctx) -> Converted:
    ops = activation_ops(ctx, ctx.config.get("activation"), ctx.x, suffix="")
    return Converted(ops or (Op(n.X),), (ctx.x,))


@converter("ReLU", wants="any")
def relu(ctx: Ctx) -> Converted:
    max_value = ctx.config.get("max_value")
    slope = cfg_float(ctx, "negative_slope", 0.0)
    threshold = cfg_float(ctx, "threshold", 0.0)
    if max_value is not None and (isinstance(max_value, bool) or not isinstance(max_value, (int, float))):
        raise ctx.unsupported(f"config 'max_value' should be a number, found {max_value!r}")
    if slope == 0 and threshold == 0 and max_value is None:
        return Converted((apply_module(Module("nn.ReLU")),), (ctx.x,))
    if slope == 0 and threshold == 0 and float(max_value) == 6.0:
        return Converted((apply_module(Module("nn.ReLU6")),), (ctx.x,))
    # Keras: x if x >= threshold, negative_slope * (x - threshold) below it, then clipped at max_value.
    expr = n.call("torch.where", n.compare(n.X, ">=", threshold), n.X, slope * (n.X - threshold))
    if max_value is not None:
        expr = n.call("torch.clamp", expr, max=float(max_value))
    return Converted((Op(expr),), (ctx.x,))


@converter("LeakyReLU", wants="any")
def leaky_relu(ctx: Ctx) -> Converted:
    # Keras 2 calls the slope `alpha`, Keras 3 `negative_slope`; both default to 0.3 (torch: 0.01).
    key = "negative_slope" if "negative_slope" in ctx.config else "alpha"
    slope = cfg_float(ctx, key, 0.3)
    return Converted((apply_module(Module("nn.LeakyReLU", (slope,))),), (ctx.x,))


@converter("ELU", wants="any")
def elu(ctx: Ctx) -> Converted:
    return Converted((apply_module(Module("nn.ELU", (cfg_float(ctx, "alpha", 1.0),))),), (ctx.x,))


@converter("ThresholdedReLU", wants="any")
def thresholded_relu(ctx: Ctx) -> Converted:
    theta = cfg_float(ctx, "theta", 1.0)
    return Converted((apply_module(Module("nn.Threshold", (theta, 0.0))),), (ctx.x,))


@converter("Softmax", wants="any")
def softmax(ctx: Ctx) -> Converted:
    axis = ctx.config.get("axis", -1)
    if isinstance(axis, list) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ctx.unsupported(f"Softmax over axis {axis!r}; only a single axis is supported")
    return Converted((apply_module(Module("nn.Softmax", (), (("dim", torch_axis(axis, ctx.x)),))),), (ctx.x,))


@converter("PReLU", wants="any")
def prelu(ctx: Ctx) -> Converted:
    """torch's PReLU has one slope per channel (dim 1) or one in all; Keras shares over `shared_axes`."""
    w = bind(ctx, ["alpha"])
    alpha_shape = w["alpha"].shape
    channels = ctx.x.shape[-1]
    if all(s == 1 for s in alpha_shape):
        count = 1
    elif all(s == 1 for s in alpha_shape[:-1]) and alpha_shape[-1] == channels:
        count = channels
    else:
        raise ctx.unsupported(f"PReLU alpha of shape {alpha_shape}: torch needs one slope per channel",
                              "set shared_axes to every axis but the channels")
    if ctx.x.layout == "keras" and ctx.x.rank > 2 and count > 1:
        raise ctx.unsupported("per-channel PReLU on a tensor whose channels are not on axis 1")
    module = Module("nn.PReLU", (), (("num_parameters", count),))
    return Converted((apply_module(module),), (ctx.x,), (param("", "weight", w["alpha"], layouts.get("flatten_to_1d")),))
