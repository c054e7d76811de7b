"""Layers that are the identity at inference: Dropout and friends, Identity, noise, regularisers."""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op
from .common import apply_module, cfg_float
from .registry import converter


@converter("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "AlphaDropout",
           "GaussianDropout", wants="any")
def dropout(ctx: Ctx) -> Converted:
    # Kept as a module so the generated code reads like the Keras model; identity in eval().
    return Converted((apply_module(Module("nn.Dropout", (cfg_float(ctx, "rate", 0.0),))),), (ctx.x,))


@converter("Identity", "GaussianNoise", "ActivityRegularization", wants="any")
def identity(ctx: Ctx) -> Converted:
    return Converted((Op(n.X),), (ctx.x,))


@converter("Masking", wants="keras")
def masking(ctx: Ctx) -> Converted:
    """call(): x times (any feature != mask_value): masked steps become zeros (not mask_value). The mask
    itself is made by the graph walker (layers/masks.py), or recorded as ops by Keras 3."""
    value = ctx.config.get("mask_value", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.unsupported(f"mask_value {value!r}: only a number is supported")
    keep = n.compare(n.X, "!=", float(value)).m("any", dim=-1, keepdim=True)
    return Converted((Op(n.X * keep.m("to", n.Attr(n.X, "dtype"))),), (ctx.x,))


# keras.layers' random augmentation layers: each returns its input unchanged unless called with
# training=True (their call(): `if training: ... else: return inputs`), so at inference they are the
# identity. Checked one by one against Keras in tests/layers/test_layers.py ("augment-*").
AUGMENTATION = (
    "RandomFlip", "RandomRotation", "RandomZoom", "RandomContrast", "RandomTranslation", "RandomBrightness",
    "RandomShear", "RandomHue", "RandomSaturation", "RandomSharpness", "RandomGrayscale", "RandomColorJitter",
    "RandomErasing", "RandomGaussianBlur", "RandomPerspective", "RandomInvert", "RandomPosterization",
    "RandomColorDegeneration", "RandomElasticTransform", "AugMix", "RandAugment", "CutMix", "MixUp",
    "Solarization",  # random thresholds and additions in training, nothing else (not a fixed solarize)
)


@converter(*AUGMENTATION, wants="any")
def augmentation(ctx: Ctx) -> Converted:
    return Converted((Op(n.X),), (ctx.x,),
                     notes=(f"{ctx.layer.class_name}: random augmentation, the identity at inference",))
