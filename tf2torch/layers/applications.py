"""Layers that ``keras.applications`` defines for its own models (saved under the application's module):
ConvNeXt's LayerScale and StochasticDepth, InceptionResNetV2's CustomScaleLayer.

Their configs and call() are fixed by Keras's source, so they convert like built-in layers; any other
class from a user's or a library's module stays unsupported. A Keras 3 ``.h5`` drops a layer's module:
there the class name alone could be anyone's, so these are recognised by their config signature (the
exact config keys, the number and shape of weights) and refused, saying which part differs, otherwise.
"""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op
from .common import apply_module, bind, cfg_float, param, torch_axis
from .registry import converter

CONVNEXT, INCEPTION_RESNET = "keras.src.applications.convnext>", "keras.src.applications.inception_resnet_v2>"


_COMMON = {"name", "trainable", "dtype"}
SIGNATURES = {  # class name -> (its config keys besides name/trainable/dtype, number of weights)
    "LayerScale": ({"init_values", "projection_dim"}, 1),
    "StochasticDepth": ({"drop_path_rate"}, 0),
    "CustomScaleLayer": ({"scale"}, 0),
}


def _signature(ctx: Ctx) -> None:
    """Refuse a module-less class of these names unless its config and weights are the application's."""
    keys, n_weights = SIGNATURES[ctx.layer.class_name]
    found = set(ctx.config) - _COMMON
    if found != keys or len(ctx.layer.weights) != n_weights:
        raise ctx.unsupported(
            f"a {ctx.layer.class_name!r} saved without its module (a Keras 3 .h5) whose config keys "
            f"{sorted(found)} and {len(ctx.layer.weights)} weight(s) are not keras.applications' "
            f"({sorted(keys)}, {n_weights}): it may be another class of that name",
            "save the model as .keras (which keeps the module), or port the layer by hand")


@converter(CONVNEXT + "LayerScale", "LayerScale", wants="any")
def layer_scale(ctx: Ctx) -> Converted:
    """call(): x * gamma, gamma of shape (projection_dim,) broadcast along the last Keras axis."""
    if ctx.layer.class_name == "LayerScale":
        _signature(ctx)
        gamma = ctx.layer.weights[0]  # a .h5 calls it "variable": the one weight, checked above
    else:
        gamma = bind(ctx, ["gamma"])["gamma"]
    channels = ctx.x.shape[-1]
    if gamma.shape != (channels,) or ctx.config.get("projection_dim") != channels:
        raise ctx.unsupported(f"gamma of shape {gamma.shape} for {channels} channels")
    module = Module("KerasLayerScale", (channels, torch_axis(-1, ctx.x)))
    return Converted((apply_module(module),), (ctx.x,), (param("", "gamma", gamma),),
                     helpers=("KerasLayerScale",))


@converter(CONVNEXT + "StochasticDepth", "StochasticDepth", wants="any")
def stochastic_depth(ctx: Ctx) -> Converted:
    if ctx.layer.class_name == "StochasticDepth":
        _signature(ctx)
    return Converted((Op(n.X),), (ctx.x,))  # drops residual paths in training only


@converter(INCEPTION_RESNET + "CustomScaleLayer", "CustomScaleLayer", wants="same")
def custom_scale(ctx: Ctx) -> Converted:
    """call(inputs): inputs[0] + inputs[1] * scale (the residual branch scaled, added to the shortcut)."""
    if ctx.layer.class_name == "CustomScaleLayer":
        _signature(ctx)
    if len(ctx.inputs) != 2:
        raise ctx.unsupported(f"expected 2 inputs, found {len(ctx.inputs)}")
    scale = cfg_float(ctx, "scale")
    return Converted((Op(n.arg(0) + n.arg(1) * scale),), (ctx.inputs[0],))
