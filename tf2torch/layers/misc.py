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
