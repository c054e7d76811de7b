"""Layers that ``keras.applications`` defines for its own models (saved under the application's module):
ConvNeXt's LayerScale and StochasticDepth, InceptionResNetV2's CustomScaleLayer.

Their configs and call() are fixed by Keras's source, so they convert like built-in layers; any other
class from a user's or a library's module stays unsupported.
"""

from __future__ import annotations

from .base import Converted, Ctx, Module, Op
from .common import apply_module, bind, cfg_float, param, torch_axis
from .registry import converter

CONVNEXT, INCEPTION_RESNET = "keras.src.applications.convnext>", "keras.src.applications.inception_resnet_v2>"


@converter(CONVNEXT + "LayerScale", wants="any")
def layer_scale(ctx: Ctx) -> Converted:
    """call(): x * gamma, gamma of shape (projection_dim,) broadcast along the last Keras axis."""
    w = bind(ctx, ["gamma"])
    channels = ctx.x.shape[-1]
    if w["gamma"].shape != (channels,):
        raise ctx.unsupported(f"gamma of shape {w['gamma'].shape} for {channels} channels")
    module = Module("KerasLayerScale", (channels, torch_axis(-1, ctx.x)))
    return Converted((apply_module(module),), (ctx.x,), (param("", "gamma", w["gamma"]),),
                     helpers=("KerasLayerScale",))


@converter(CONVNEXT + "StochasticDepth", wants="any")
def stochastic_depth(ctx: Ctx) -> Converted:
    return Converted((Op("{x}"),), (ctx.x,))  # drops residual paths in training only


@converter(INCEPTION_RESNET + "CustomScaleLayer", wants="same")
def custom_scale(ctx: Ctx) -> Converted:
    """call(inputs): inputs[0] + inputs[1] * scale (the residual branch scaled, added to the shortcut)."""
    if len(ctx.inputs) != 2:
        raise ctx.unsupported(f"expected 2 inputs, found {len(ctx.inputs)}")
    scale = cfg_float(ctx, "scale")
    return Converted((Op(f"{{0}} + {{1}} * {scale!r}"),), (ctx.inputs[0],))
