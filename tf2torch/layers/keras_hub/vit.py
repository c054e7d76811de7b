"""keras-hub's ViT layers: ViTPatchingAndEmbedding and ViTEncoder as ``KerasHubViTPatchingAndEmbedding`` and
``KerasHubViTEncoder`` (one ``KerasHubViTBlock`` class, its blocks in an ``nn.ModuleList``)."""

from __future__ import annotations

import re

from ...map import layouts
from ..base import Converted, Ctx, Module, Op, TensorInfo
from ..common import cfg_bool, cfg_float, cfg_int, cfg_ints, param
from ..registry import converter
from .common import HUB, sublayer_weights


@converter(HUB + "ViTPatchingAndEmbedding", wants="cf")
def vit_patching(ctx: Ctx) -> Converted:
    if ctx.config.get("data_format", "channels_last") != "channels_last":
        raise ctx.unsupported("data_format channels_first")
    patch, size = cfg_ints(ctx, "patch_size", 2), cfg_ints(ctx, "image_size", 2)
    hidden, channels = cfg_int(ctx, "hidden_dim"), ctx.x.shape[-1]
    token, bias = cfg_bool(ctx, "use_class_token", True), cfg_bool(ctx, "use_patch_bias", True)
    if tuple(ctx.x.shape[:2]) != size or channels is None:
        raise ctx.unsupported(f"input of spatial size {ctx.x.shape[:2]}, but the layer was built for {size}")
    positions = (size[0] // patch[0]) * (size[1] // patch[1]) + token
    w = sublayer_weights(ctx, {"patch_embedding": 1 + bias, "position_embedding": 1, **({"": 1} if token else {})})
    params = [param("", "patch_embedding.weight", w["patch_embedding"][0], "conv2d"),
              param("", "position_embedding", w["position_embedding"][0])]
    if bias:
        params.append(param("", "patch_embedding.bias", w["patch_embedding"][1]))
    if token:
        params.append(param("", "class_token", w[""][0]))
    kwargs = (*((("use_class_token", False),) if not token else ()), *((("use_patch_bias", False),) if not bias else ()))
    module = Module("KerasHubViTPatchingAndEmbedding", (channels, hidden, patch, positions), kwargs)
    return Converted((Op("{m}({x})", module),), (TensorInfo((positions, hidden)),), tuple(params),
                     helpers=("KerasHubViTPatchingAndEmbedding",))


_BLOCK = re.compile(r"^encoder_layers/vi_t_encoder_block(?:_(\d+))?/(.+)$")


@converter(HUB + "ViTEncoder", wants="keras")
def vit_encoder(ctx: Ctx) -> Converted:
    layers, hidden, heads = cfg_int(ctx, "num_layers"), cfg_int(ctx, "hidden_dim"), cfg_int(ctx, "num_heads")
    mlp, eps = cfg_int(ctx, "mlp_dim"), cfg_float(ctx, "layer_norm_epsilon", 1e-6)
    mha_bias, mlp_bias = cfg_bool(ctx, "use_mha_bias", True), cfg_bool(ctx, "use_mlp_bias", True)
    if ctx.x.rank != 3 or ctx.x.shape[-1] != hidden or hidden % heads:
        raise ctx.unsupported(f"expected (N, T, {hidden}) with {hidden} a multiple of num_heads={heads}, "
                              f"found {ctx.x.shape}")
    per_block = {**{f"mha/{s}_dense": 1 + mha_bias for s in ("query", "key", "value", "output")},
                 "layer_norm_1": 2, "layer_norm_2": 2, "mlp/dense_1": 1 + mlp_bias, "mlp/dense_2": 1 + mlp_bias}
    block_name = [f"encoder_layers/vi_t_encoder_block{f'_{i}' if i else ''}" for i in range(layers)]
    w = sublayer_weights(ctx, {"layer_norm": 2, **{f"{b}/{k}": n for b in block_name for k, n in per_block.items()}})
    params = [param("", "ln.weight", w["layer_norm"][0]), param("", "ln.bias", w["layer_norm"][1])]
    for key, variables in w.items():
        match = _BLOCK.match(key)
        if match is None:
            continue
        ours, sub = f"blocks.{int(match.group(1) or 0)}", match.group(2)
        if sub.startswith("mha/"):
            name = {"query": "query", "key": "key", "value": "value", "output": "attention_output"}[sub[4:-6]]
            kinds = ("mha_out_kernel" if name == "attention_output" else "mha_in_kernel",
                     layouts.IDENTITY if name == "attention_output" else "mha_in_bias")
            target = f"{ours}.mha.{name}"
        else:
            kinds = ("dense" if sub.startswith("mlp") else "identity", "identity")
            target = f"{ours}.{ {'layer_norm_1': 'ln_1', 'layer_norm_2': 'ln_2'}.get(sub, sub[4:]) }"
        params += [param("", f"{target}.{leaf}", var, kind)
                   for leaf, var, kind in zip(("weight", "bias"), variables, kinds)]
    kwargs = (*((("use_mha_bias", False),) if not mha_bias else ()), *((("use_mlp_bias", False),) if not mlp_bias else ()))
    module = Module("KerasHubViTEncoder", (layers, hidden, heads, mlp, eps), kwargs)
    return Converted((Op("{m}({x})", module),), (ctx.x,), tuple(params),
                     helpers=("KerasMultiHeadAttention", "KerasHubViTBlock", "KerasHubViTEncoder"))
