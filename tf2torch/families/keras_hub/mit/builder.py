"""keras-hub's MiTBackbone (SegFormer's Mix Transformer): per level an overlapping patch embedding, its
hierarchical encoders (efficient attention with a strided sequence-reduction conv, a Mix-FFN with a
depthwise conv), an unnamed LayerNormalization and the reshape back to a square image. Square inputs of a
known size only, as keras-hub builds it. Written from keras-hub 0.32's ``mit/mit_backbone.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..common.keras_layers import image, positive_ints


@builds("MiTBackbone")
def mit(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    levels = args.int("num_layers")
    depths, heads = positive_ints(args, "layerwise_depths"), positive_ints(args, "layerwise_num_heads")
    ratios, patches = positive_ints(args, "layerwise_sr_ratios"), positive_ints(args, "layerwise_patch_sizes")
    strides, dims = positive_ints(args, "layerwise_strides"), positive_ints(args, "hidden_dims")
    if any(len(v) < levels for v in (depths, heads, ratios, patches, strides, dims)):
        raise args.fail("layerwise_depths", f"lists of at least num_layers={levels} entries")
    drop = args.number("max_drop_path_rate", 0.0)
    shape = args.raw("image_shape", [None, None, 3])
    if not isinstance(shape, list) or len(shape) != 3 or not all(isinstance(s, int) for s in shape[:2]):
        raise args.fail("image_shape", "[height, width, channels] with the size known (keras-hub needs it)")
    x = image(args, g)
    rates = np.linspace(0.0, drop, sum(depths[:levels]))  # each encoder's DropPath rate (identity at inference)
    height, width, cur = shape[0], shape[1], 0
    for i in range(levels):
        height, width = int(height / strides[i]), int(width / strides[i])
        x = g.hub("OverlappingPatchingAndEmbedding", f"patch_and_embed_{i}",
                  {"project_dim": dims[i], "patch_size": patches[i], "stride": strides[i]}, x)
        for k in range(depths[i]):
            x = g.hub("HierarchicalTransformerEncoder", f"hierarchical_encoder_{i}_{k}", {
                "project_dim": dims[i], "num_heads": heads[i], "sr_ratio": ratios[i],
                "drop_prob": float(rates[cur + k]), "layer_norm_epsilon": 1e-6}, x)
        cur += depths[i]
        x = g.layer("LayerNormalization", g.auto_name("layer_normalization"), {"axis": [-1], "epsilon": 1e-5}, x)
        x = g.layer("Reshape", f"output_level_{i}", {"target_shape": [height, width, -1]}, x)
    return g.model(args.class_name, x)
