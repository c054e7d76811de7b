"""keras-hub's ViT and DeiT layers: ViTPatchingAndEmbedding / DeiTEmbeddings and ViTEncoder / DeiTEncoder as
``KerasHubViTPatchingAndEmbedding`` and ``KerasHubViTEncoder`` / ``KerasHubDeiTEncoder`` (one
``KerasHubViTBlock`` class, its blocks in an ``nn.ModuleList``)."""

from __future__ import annotations

import re

from ....layers.base import Converted, Ctx, Module, TensorInfo
from ....layers.common import apply_module, cfg_bool, cfg_float, cfg_int, cfg_ints, param
from ....layers.registry import converter
from ....map import layouts
from ..common.converters import HUB, sublayer_weights


@converter(HUB + "ViTPatchingAndEmbedding", HUB + "DeiTEmbeddings", wants="cf")
def vit_patching(ctx: Ctx) -> Converted:
    deit = ctx.layer.class_name == HUB + "DeiTEmbeddings"
    if ctx.config.get("data_format", "channels_last") != "channels_last":
        raise ctx.unsupported("data_format channels_first")
    if deit and ctx.config.get("use_mask_token"):
        raise ctx.unsupported("use_mask_token=True (masked-patch pretraining)")
    patch, size = cfg_ints(ctx, "patch_size", 2), cfg_ints(ctx, "image_size", 2)
    hidden, channels = cfg_int(ctx, "hidden_dim"), ctx.x.shape[-1]
    token, bias = (True, True) if deit else (cfg_bool(ctx, "use_class_token", True), cfg_bool(ctx, "use_patch_bias", True))
    if tuple(ctx.x.shape[:2]) != size or channels is None:
        raise ctx.unsupported(f"input of spatial size {ctx.x.shape[:2]}, but the layer was built for {size}")
    positions = (size[0] // patch[0]) * (size[1] // patch[1]) + token + deit
    # DeiT's own weights in creation order: class token, distillation token, position embedding
    own = {"": 3} if deit else {"position_embedding": 1, **({"": 1} if token else {})}
    w = sublayer_weights(ctx, {"patch_embedding": 1 + bias, **own})
    params = [param("", "patch_embedding.weight", w["patch_embedding"][0], "conv2d"),
              param("", "position_embedding", w[""][2] if deit else w["position_embedding"][0])]
    if bias:
        params.append(param("", "patch_embedding.bias", w["patch_embedding"][1]))
    if token:
        params.append(param("", "class_token", w[""][0]))
    if deit:
        params.append(param("", "distillation_token", w[""][1]))
    kwargs = (*((("use_class_token", False),) if not token else ()), *((("use_patch_bias", False),) if not bias else ()),
              *((("distillation_token", True),) if deit else ()))
    module = Module("KerasHubViTPatchingAndEmbedding", (channels, hidden, patch, positions), kwargs)
    return Converted((apply_module(module),), (TensorInfo((positions, hidden)),), tuple(params),
                     helpers=("KerasHubViTPatchingAndEmbedding",))


_BLOCK = re.compile(r"^encoder_layers/(?:vi|dei)_t_encoder_block(?:_(\d+))?/(.+)$")
# DeiT's sublayer -> ours (the ViT block's names)
_DEIT = {"mlp/dense": "mlp/dense_1", "output_layer/dense": "mlp/dense_2"}


@converter(HUB + "ViTEncoder", HUB + "DeiTEncoder", wants="keras")
def vit_encoder(ctx: Ctx) -> Converted:
    deit = ctx.layer.class_name == HUB + "DeiTEncoder"
    layers, hidden, heads = cfg_int(ctx, "num_layers"), cfg_int(ctx, "hidden_dim"), cfg_int(ctx, "num_heads")
    mlp, eps = cfg_int(ctx, "intermediate_dim" if deit else "mlp_dim"), cfg_float(ctx, "layer_norm_epsilon", 1e-6)
    mha_bias, mlp_bias = cfg_bool(ctx, "use_mha_bias", True), True if deit else cfg_bool(ctx, "use_mlp_bias", True)
    if ctx.x.rank != 3 or ctx.x.shape[-1] != hidden or hidden % heads:
        raise ctx.unsupported(f"expected (N, T, {hidden}) with {hidden} a multiple of num_heads={heads}, "
                              f"found {ctx.x.shape}")
    mlp_names = ("mlp/dense", "output_layer/dense") if deit else ("mlp/dense_1", "mlp/dense_2")
    per_block = {**{f"mha/{s}_dense": 1 + mha_bias for s in ("query", "key", "value", "output")},
                 "layer_norm_1": 2, "layer_norm_2": 2, **{n: 1 + mlp_bias for n in mlp_names}}
    block = "dei_t_encoder_block" if deit else "vi_t_encoder_block"
    block_name = [f"encoder_layers/{block}{f'_{i}' if i else ''}" for i in range(layers)]
    w = sublayer_weights(ctx, {"layer_norm": 2, **{f"{b}/{k}": n for b in block_name for k, n in per_block.items()}})
    params = [param("", "ln.weight", w["layer_norm"][0]), param("", "ln.bias", w["layer_norm"][1])]
    for key, variables in w.items():
        match = _BLOCK.match(key)
        if match is None:
            continue
        ours, sub = f"blocks.{int(match.group(1) or 0)}", match.group(2)
        sub = _DEIT.get(sub, sub) if deit else sub
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
    helpers = ("KerasMultiHeadAttention", "KerasHubViTBlock", "KerasHubViTEncoder")
    if deit:  # DeiTEncoder returns (hidden states, hidden-state stack, attention-score stack)
        module = Module("KerasHubDeiTEncoder", (layers, hidden, heads, mlp, eps), kwargs)
        steps = ctx.x.shape[0]
        outputs = (ctx.x, TensorInfo(ctx.x.shape), TensorInfo((heads, steps, steps)))
        return Converted((apply_module(module),), outputs, tuple(params), helpers=(*helpers, "KerasHubDeiTEncoder"))
    module = Module("KerasHubViTEncoder", (layers, hidden, heads, mlp, eps), kwargs)
    return Converted((apply_module(module),), (ctx.x,), tuple(params), helpers=helpers)
