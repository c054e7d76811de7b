"""Layers that are the identity at inference: Dropout and friends, Identity, noise, regularisers."""

from __future__ import annotations

from .base import Converted, Ctx, Module, Op
from .common import apply_module, cfg_float
from .registry import converter


@converter("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "AlphaDropout",
           "GaussianDropout", wants="any")
def dropout(ctx: Ctx) -> Converted:
    # Kept as a module so the generated code reads like the Keras model; identity in eval().
    return Converted((apply_module(Module("nn.Dropout", (cfg_float(ctx, "rate", 0.0),))),), (ctx.x,))


@converter("Identity", "GaussianNoise", "ActivityRegularization", "Masking", wants="any")
def identity(ctx: Ctx) -> Converted:
    notes = ("Masking: the mask is not propagated (outputs of unmasked steps are identical)",) \
        if ctx.layer.class_name == "Masking" else ()
    return Converted((Op("{x}"),), (ctx.x,), notes=notes)


# keras.layers' random augmentation layers: each returns its input unchanged unless called with
# training=True (their call(): `if training: ... else: return inputs`), so at inference they are the
# identity. Checked one by one against Keras in tests/layers/test_layers.py ("augment-*").
AUGMENTATION = (
    "RandomFlip", "RandomRotation", "RandomZoom", "RandomContrast", "RandomTranslation", "RandomBrightness",
    "RandomShear", "RandomHue", "RandomSaturation", "RandomSharpness", "RandomGrayscale", "RandomColorJitter",
    "RandomErasing", "RandomGaussianBlur", "RandomPerspective", "RandomInvert", "RandomPosterization",
    "RandomColorDegeneration", "RandomElasticTransform", "AugMix", "RandAugment", "CutMix", "MixUp",
)


@converter(*AUGMENTATION, wants="any")
def augmentation(ctx: Ctx) -> Converted:
    return Converted((Op("{x}"),), (ctx.x,),
                     notes=(f"{ctx.layer.class_name}: random augmentation, the identity at inference",))
