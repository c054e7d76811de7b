"""keras-hub's DINOv2 layers: DINOV2Embedding and DINOV2Encoder (its DINOV2Layer blocks with their
DINOV2Attention, DINOV2LayerScale, DINOV2DropPath, DINOV2MLP / DINOV2SwiGLUFFN sublayers) as
``KerasHubDINOV2Embedding`` and ``KerasHubDINOV2Encoder`` (``families/keras_hub/dinov2/runtime.py``)."""

from __future__ import annotations

from ....layers.base import Converted, Ctx, Module, TensorInfo
from ....layers.common import apply_module, cfg_bool, cfg_int, cfg_ints, param
from ....layers.registry import converter
from ....map import layouts
from ..common.converters import HUB, sublayer_weights


@converter(HUB + "DINOV2Embedding", wants="cf")
def dinov2_embedding(ctx: Ctx) -> Converted:
    hidden, patch = cfg_int(ctx, "hidden_dim"), cfg_int(ctx, "patch_size")
    size, source = cfg_ints(ctx, "image_shape", 2), cfg_ints(ctx, "position_embedding_shape", 2)
    registers, mask = cfg_int(ctx, "num_register_tokens", 0), cfg_bool(ctx, "use_mask_token", True)
    antialias = cfg_bool(ctx, "antialias_in_interpolation", False)
    channels = ctx.x.shape[-1]
    if ctx.x.rank != 4 or tuple(ctx.x.shape[:2]) != size or channels is None or min(size) < patch:
        raise ctx.unsupported(f"input of shape {ctx.x.shape}, but the layer was built for images of size {size} "
                              f"(at least patch_size={patch})")
    grid = (size[0] // patch, size[1] // patch)
    positions = (source[0] // patch) * (source[1] // patch)
    side = int(positions ** 0.5)
    # keras-hub resizes its positions only when the two sizes in pixels differ (tf.image.resize runs even when
    # the patch grids match: an identity at scale 1)
    resize = source != size
    if resize and (positions == 0 or side * side != positions):
        raise ctx.unsupported(f"position_embedding_shape {source} gives no square grid of {patch}-pixel patches")
    own = 3 + mask + (registers > 0)  # cls, [mask], [registers], interpolated positions, then the positions
    w = sublayer_weights(ctx, {"patch_embeddings/projection": 2, "": own})
    stored, interpolated = w[""][-1], w[""][-2]
    if stored.shape != (1, positions + 1, hidden) or interpolated.shape != (1, grid[0] * grid[1] + 1, hidden):
        raise ctx.unsupported(f"position embeddings of shapes {stored.shape} and {interpolated.shape}",
                              "the file does not match its own config")
    # The saved interpolated copy is not read: keras-hub's load_own_variables recomputes it from the stored
    # position embeddings (whose pretraining size it keeps), so the model computes that resize.
    params = [param("", "patch_embeddings.weight", w["patch_embeddings/projection"][0], "conv2d"),
              param("", "patch_embeddings.bias", w["patch_embeddings/projection"][1]),
              param("", "cls_token", w[""][0]), param("", "position_embeddings", stored)]
    if registers:  # the mask token (training only: the graph passes no masks) is left out
        params.append(param("", "register_tokens", w[""][1 + mask]))
    kwargs = (*((("resize_from", side), ("antialias", antialias)) if resize else ()),
              *((("num_register_tokens", registers),) if registers else ()))
    module = Module("KerasHubDINOV2Embedding", (channels, hidden, patch, grid, positions + 1), kwargs)
    steps = 1 + registers + grid[0] * grid[1]
    notes = (f"position embeddings resized from {side}x{side} to {grid[0]}x{grid[1]} patches "
             f"with TF's bicubic kernel{' (antialiased)' if antialias else ''}",) if resize else ()
    return Converted((apply_module(module),), (TensorInfo((steps, hidden)),), tuple(params), notes=notes,
                     helpers=("KerasHubDINOV2Embedding",))


_MHA = {"query": ("query", "mha_in_kernel", "mha_in_bias"), "key": ("key", "mha_in_kernel", "mha_in_bias"),
        "value": ("value", "mha_in_kernel", "mha_in_bias"),
        "output": ("attention_output", "mha_out_kernel", layouts.IDENTITY)}


@converter(HUB + "DINOV2Encoder", wants="keras")
def dinov2_encoder(ctx: Ctx) -> Converted:
    layers, hidden, heads = cfg_int(ctx, "num_layers"), cfg_int(ctx, "hidden_dim"), cfg_int(ctx, "num_heads")
    inner, swiglu = cfg_int(ctx, "intermediate_dim"), cfg_bool(ctx, "use_swiglu_ffn", False)
    if ctx.x.rank != 3 or ctx.x.shape[-1] != hidden or hidden < heads:
        raise ctx.unsupported(f"expected (N, T, {hidden}) with num_heads={heads} <= {hidden}, found {ctx.x.shape}")
    ffn = ("mlp/weights_in", "mlp/weights_out") if swiglu else ("mlp/fc1", "mlp/fc2")
    per_block = {**{f"attention/attention/{s}_dense": 2 for s in _MHA}, "norm1": 2, "norm2": 2,
                 "layer_scale1": 1, "layer_scale2": 1, **{n: 2 for n in ffn}}
    # the blocks' weights by list index (dinov2_layer, dinov2_layer_1 …); a lone block's path is the root
    names = [f"dinov2_layer{f'_{i}' if i else ''}/" for i in range(layers)] if layers > 1 else [""]
    w = sublayer_weights(ctx, {f"{b}{k}": n for b in names for k, n in per_block.items()})
    params = []
    for i, b in enumerate(names):
        block = f"blocks.{i}"
        for sub in per_block:
            variables = w[f"{b}{sub}"]
            if sub.startswith("attention/"):
                name, kernel, bias = _MHA[sub.split("/")[-1][:-len("_dense")]]
                params += [param("", f"{block}.attention.{name}.weight", variables[0], kernel),
                           param("", f"{block}.attention.{name}.bias", variables[1], bias)]
            elif sub.startswith("layer_scale"):
                params.append(param("", f"{block}.{sub}", variables[0]))
            else:  # norm1 / norm2 (gamma, beta), or a Dense of the FFN (kernel, bias)
                target, kind = f"{block}.{sub.split('/')[-1]}", "dense" if sub.startswith("mlp/") else "identity"
                params += [param("", f"{target}.weight", variables[0], kind),
                           param("", f"{target}.bias", variables[1])]
    kwargs = (("swiglu", True),) if swiglu else ()
    module = Module("KerasHubDINOV2Encoder", (layers, hidden, heads, inner), kwargs)
    # (last output, then the pyramid dict's values in Keras's flatten order: keys sorted as strings)
    outputs = (ctx.x, *(ctx.x for _ in range(layers)))
    return Converted((apply_module(module),), outputs, tuple(params),
                     helpers=("KerasMultiHeadAttention", "KerasHubDINOV2Layer", "KerasHubDINOV2Encoder"))
