"""keras-hub's MiT (SegFormer) layers: OverlappingPatchingAndEmbedding and HierarchicalTransformerEncoder as
``KerasHubMiTPatchEmbedding`` / ``KerasHubMiTBlock``."""

from __future__ import annotations

from ....layers.base import Converted, Ctx, Module, TensorInfo
from ....layers.common import apply_module, cfg_float, cfg_int, param
from ....layers.registry import converter
from ..common.converters import HUB, sublayer_weights


@converter(HUB + "OverlappingPatchingAndEmbedding", wants="cf")
def mit_patch_embedding(ctx: Ctx) -> Converted:
    dim, patch, stride = cfg_int(ctx, "project_dim"), cfg_int(ctx, "patch_size"), cfg_int(ctx, "stride")
    if ctx.x.rank != 4 or ctx.x.shape[-1] is None or any(s is None for s in ctx.x.shape[:2]):
        raise ctx.unsupported(f"expected an image of known size, found {ctx.x.shape}")
    w = sublayer_weights(ctx, {"proj": 2, "norm": 2})
    params = (param("", "proj.weight", w["proj"][0], "conv2d"), param("", "proj.bias", w["proj"][1]),
              param("", "norm.weight", w["norm"][0]), param("", "norm.bias", w["norm"][1]))
    h, wd = ((s + 2 * (patch // 2) - patch) // stride + 1 for s in ctx.x.shape[:2])
    module = Module("KerasHubMiTPatchEmbedding", (ctx.x.shape[-1], dim, patch, stride))
    return Converted((apply_module(module),), (TensorInfo((h * wd, dim)),), params,
                     helpers=("KerasHubMiTPatchEmbedding",))


@converter(HUB + "HierarchicalTransformerEncoder", wants="keras")
def mit_block(ctx: Ctx) -> Converted:
    dim, heads, sr = cfg_int(ctx, "project_dim"), cfg_int(ctx, "num_heads"), cfg_int(ctx, "sr_ratio")
    steps = ctx.x.shape[0]
    side = int(steps ** 0.5) if steps is not None else None
    if ctx.x.rank != 3 or ctx.x.shape[-1] != dim or side is None or side * side != steps or dim % heads:
        raise ctx.unsupported(f"expected (N, S * S, {dim}) from a square image, found {ctx.x.shape}")
    expected = {"norm1": 2, "norm2": 2, **{f"attn/{n}": 2 for n in ("q", "k", "v", "proj")},
                "mlp/fc1": 2, "mlp/dwconv": 2, "mlp/fc2": 2, **({"attn/sr": 2, "attn/norm": 2} if sr > 1 else {})}
    w = sublayer_weights(ctx, expected)
    ours = {"norm1": "norm1", "norm2": "norm2", "attn/q": "q", "attn/k": "k", "attn/v": "v", "attn/proj": "proj",
            "attn/sr": "sr", "attn/norm": "sr_norm", "mlp/fc1": "fc1", "mlp/dwconv": "dwconv", "mlp/fc2": "fc2"}
    kinds = {"attn/sr": "conv2d", "mlp/dwconv": "depthwise2d", **{k: "dense" for k in
             ("attn/q", "attn/k", "attn/v", "attn/proj", "mlp/fc1", "mlp/fc2")}}
    params = tuple(p for key, (weight, bias) in w.items()
                   for p in (param("", f"{ours[key]}.weight", weight, kinds.get(key, "identity")),
                             param("", f"{ours[key]}.bias", bias)))
    module = Module("KerasHubMiTBlock", (dim, heads, sr, cfg_float(ctx, "layer_norm_epsilon", 1e-6)))
    return Converted((apply_module(module),), (ctx.x,), params, helpers=("KerasHubMiTBlock",))
