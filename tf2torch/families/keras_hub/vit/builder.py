"""keras-hub's ViTBackbone and DeiTBackbone: patch embeddings (a strided conv, the class token — and DeiT's
distillation token —, learned positions) then an encoder (pre-norm blocks of MultiHeadAttention and a GELU
MLP, a final LayerNorm), channels-last. Written from keras-hub 0.32's ``vit/`` and ``deit/`` backbones and layers.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..common.keras_layers import image


def _checked_patches(args: Args) -> tuple[list[int], list[int]]:
    shape = args.raw("image_shape")
    patch = args.raw("patch_size")
    patch = [patch, patch] if isinstance(patch, int) and not isinstance(patch, bool) else patch
    if not (isinstance(shape, list) and len(shape) == 3 and isinstance(patch, list) and len(patch) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in [*shape, *patch])
            and shape[0] % patch[0] == 0 and shape[1] % patch[1] == 0):
        raise args.fail("patch_size", "a patch size dividing a fully known image_shape [height, width, channels]")
    return shape, patch


@builds("ViTBackbone")
def vit(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    shape, patch = _checked_patches(args)
    x = image(args, g, name="images")
    hidden = args.int("hidden_dim")
    x = g.hub("ViTPatchingAndEmbedding", "vit_patching_and_embedding", {
        "image_size": shape[:2], "patch_size": patch, "hidden_dim": hidden, "num_channels": shape[2],
        "use_class_token": args.bool("use_class_token", True), "use_patch_bias": args.bool("use_patch_bias", True),
        "data_format": "channels_last"}, x)
    x = g.hub("ViTEncoder", "vit_encoder", {
        "num_layers": args.int("num_layers"), "num_heads": args.int("num_heads"), "hidden_dim": hidden,
        "mlp_dim": args.int("mlp_dim"), "use_mha_bias": args.bool("use_mha_bias", True),
        "use_mlp_bias": args.bool("use_mlp_bias", True), "dropout_rate": args.number("dropout_rate", 0.0),
        "attention_dropout": args.number("attention_dropout", 0.0),
        "layer_norm_epsilon": args.number("layer_norm_epsilon", 1e-6)}, x)
    return g.model(args.class_name, x)


@builds("DeiTBackbone")
def deit(args: Args) -> dict[str, Any]:
    """DeiT: DeiTEmbeddings (class and distillation tokens) then DeiTEncoder, whose first output is the model's."""
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    shape, patch = _checked_patches(args)
    x = image(args, g)
    hidden = args.int("hidden_dim")
    grid = (shape[0] // patch[0]) * (shape[1] // patch[1])
    dropout = args.number("dropout_rate", 0.0)
    x = g.hub("DeiTEmbeddings", "deit_patching_and_embedding", {
        "image_size": shape[:2], "patch_size": patch, "hidden_dim": hidden, "num_channels": shape[2],
        "num_patches": grid, "num_positions": grid + 2, "use_mask_token": False, "dropout_rate": dropout}, x)
    x = g.hub("DeiTEncoder", "deit_encoder", {
        "num_layers": args.int("num_layers"), "num_heads": args.int("num_heads"), "hidden_dim": hidden,
        "intermediate_dim": args.int("intermediate_dim"), "use_mha_bias": args.bool("use_mha_bias", True),
        "dropout_rate": dropout, "attention_dropout": args.number("attention_dropout", 0.0),
        "layer_norm_epsilon": args.number("layer_norm_epsilon", 1e-6)}, x)
    return g.model(args.class_name, x)
