"""keras-hub's HGNetV2Backbone: the image through two keras-hub layers, ``HGNetV2Embeddings`` (the stem) and
``HGNetV2Encoder`` (the stages, returning the stem's output and each stage's), its outputs the
``out_features`` among ``stem``, ``stage1`` … Channels-last, as keras-hub builds it by default.

Written from keras-hub 0.32's ``hgnetv2/hgnetv2_backbone.py`` and ``hgnetv2_encoder.py``. The two layers
are converted as wholes (``families/keras_hub/hgnetv2/converters.py``); the builder passes each the config keras-hub's
constructor gives it.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import CHANNELS_LAST, channels_last_only, image, positive_ints

ACTIVATIONS = ("relu", "gelu", "tanh", None)  # HGNetV2ConvLayer's; any other raises in keras-hub
STAGE_FIELDS = ("stage_in_channels", "stage_mid_channels", "stage_out_channels", "stage_num_blocks",
                "stage_num_of_layers", "stage_kernel_size")  # one stackwise_stage_filters row, in order


def _flags(args: Args, key: str, count: int) -> list[bool | int]:
    """A per-stage switch as saved: keras-hub tests it for truth (its docs allow 0 / 1 for apply_downsample)."""
    value = args.raw(key)
    if not isinstance(value, list) or len(value) != count or \
            any(not isinstance(v, (bool, int)) or v not in (0, 1) for v in value):
        raise args.fail(key, f"a list of {count} true/false values, one per stage")
    return value


def _stage_rows(args: Args) -> list[list[int]]:
    rows = args.raw("stackwise_stage_filters")
    if not isinstance(rows, list) or not rows or any(
            not isinstance(r, list) or len(r) != len(STAGE_FIELDS)
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in r) for r in rows):
        raise args.fail("stackwise_stage_filters", "a list of [in, mid, out, blocks, layers, kernel] positive integers")
    return rows


@builds("HGNetV2Backbone")
def hgnetv2(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    channels_last_only(args)
    stem = positive_ints(args, "stem_channels")
    if len(stem) != 3 or stem[1] < 2:  # [in, mid, out]; stem2a has mid // 2 filters
        raise args.fail("stem_channels", "[in, mid, out] with mid >= 2")
    act = args.raw("hidden_act")
    if act not in ACTIVATIONS:
        raise args.fail("hidden_act", "one of relu, gelu, tanh, null")
    lab = args.bool("use_learnable_affine_block")
    rows = _stage_rows(args)
    downsample = _flags(args, "apply_downsample", len(rows))
    light = _flags(args, "use_lightweight_conv_block", len(rows))
    # kept in the config only: the constructor builds nothing from them
    positive_ints(args, "depths"), positive_ints(args, "hidden_sizes"), args.int("embedding_size")
    names = ["stem"] + [f"stage{i + 1}" for i in range(len(rows))]
    wanted = args.raw("out_features", None)
    wanted = names if wanted is None else wanted
    if not isinstance(wanted, list) or any(not isinstance(n, str) for n in wanted) or not set(wanted) & set(names):
        raise args.fail("out_features", f"a list of names among {', '.join(names)}")
    x = image(args, g, "pixel_values_input")
    # keras-hub names the two layers after the model's name when it has one, and the file always holds one
    # (a model built unnamed called them "embedder" / "encoder"; loading the file names them as here). They
    # own no variables of their own, so the weights do not record either name.
    saved_name = args.raw("name")
    prefix = f"{saved_name}_" if isinstance(saved_name, str) and saved_name else ""
    common = {"use_learnable_affine_block": lab, "data_format": CHANNELS_LAST, "channel_axis": -1}
    x = g.hub("HGNetV2Embeddings", prefix + "embedder", {"stem_channels": stem, "hidden_act": act, **common}, x)
    stages = {key: [r[i] for r in rows] for i, key in enumerate(STAGE_FIELDS)}
    encoder = g.hub("HGNetV2Encoder", prefix + "encoder", {
        **{k: stages[k] for k in STAGE_FIELDS[:5]}, "apply_downsample": downsample,
        "use_lightweight_conv_block": light, "stage_kernel_size": stages["stage_kernel_size"], **common}, x)
    # the encoder returns (its input, each stage's output); keras-hub keeps the wanted ones in stage order
    outputs = {name: Ref(encoder.layer, encoder.node, i) for i, name in enumerate(names) if name in wanted}
    return g.model(args.class_name, outputs)
