"""keras-hub's DINOV2Backbone: DINOV2Embedding (patch conv, class token, learned positions resized to the
image's patch grid, register tokens), DINOV2Encoder (pre-norm blocks with layer scale, a GELU MLP or a
SwiGLU FFN) and a final LayerNormalization, channels-last. Written from keras-hub 0.32's
``dinov2/dinov2_backbone.py`` and ``dinov2/dinov2_layers.py``.

The encoder also returns each block's output (the feature pyramid); ``apply_layernorm`` normalises those,
but the model's one output is the normalised last block, so it changes nothing the graph computes.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..common.keras_layers import image_input


def _sizes(args: Args, key: str, default: list[int], n: int) -> list[int]:
    """The first two of a saved shape (keras-hub reads [0] and [1], channels-last), as positive ints."""
    value = args.raw(key, default)
    if not isinstance(value, list) or len(value) < n or \
            any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value[:2]):
        raise args.fail(key, f"a list of {n} or more positive integers")
    return value


@builds("DINOV2Backbone")
def dinov2(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)  # inputs={"images": ...}
    patch, hidden = args.int("patch_size"), args.int("hidden_dim")
    shape = _sizes(args, "image_shape", [224, 224, 3], 3)
    positions = _sizes(args, "position_embedding_shape", [518, 518, 3], 2)
    if shape[0] != shape[1] or shape[0] < patch:  # keras-hub refuses a non-square image itself
        raise args.fail("image_shape", f"a square [size, size, channels] of at least patch_size={patch}")
    grid = (positions[0] // patch) * (positions[1] // patch)
    # keras-hub resizes the positions from a square grid of int(sqrt(n)) (only when the pixel sizes differ)
    if positions[:2] != shape[:2] and (grid == 0 or int(grid ** 0.5) ** 2 != grid):
        raise args.fail("position_embedding_shape", f"a size whose {patch}-pixel patches form a square grid")
    heads = args.int("num_heads")
    if hidden < heads:  # keras-hub's attention has key_dim = hidden_dim // num_heads
        raise args.fail("num_heads", f"at most hidden_dim={hidden}")
    dropout = float(args.number("dropout_rate", 0.0))  # the layers keep float(...) of each rate
    args.raw("apply_layernorm")  # normalises only the pyramid outputs, which the model does not return
    # keras-hub prefixes the layers with the model's name when it has one: a saved file always has one, and
    # loading it builds "<name>_embeddings"... A model built unnamed saved them unprefixed, and these
    # layers own variables tagged with that name: the weights are found by path, so take the file's names.
    saved = args.raw("name")
    prefix = "" if saved is None else f"{saved}_"
    x = image_input(g, "images", shape)
    x = g.hub("DINOV2Embedding", prefix + "embeddings", {
        "hidden_dim": hidden, "patch_size": patch, "image_shape": shape[:2],
        "num_register_tokens": args.int("num_register_tokens", 0, minimum=0),
        "use_mask_token": args.bool("use_mask_token", True), "dropout_rate": dropout,
        "position_embedding_shape": positions[:2],
        "antialias_in_interpolation": args.bool("antialias_in_interpolation", False)}, x)
    x = g.hub("DINOV2Encoder", prefix + "encoder", {
        "num_layers": args.int("num_layers"), "hidden_dim": hidden, "num_heads": heads,
        "intermediate_dim": args.int("intermediate_dim"),
        "layer_scale_init_value": float(args.number("layer_scale_init_value", 1.0)),
        "use_swiglu_ffn": args.bool("use_swiglu_ffn", False), "dropout_rate": dropout,
        "drop_path_rate": float(args.number("drop_path_rate", 0.0))}, x)
    x = g.layer("LayerNormalization", prefix + "layernorm", {"axis": [-1], "epsilon": 1e-6}, x)
    g.auto_named.update(prefix + n for n in ("embeddings", "encoder", "layernorm"))
    return g.model(args.class_name, x)
