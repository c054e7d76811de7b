"""keras-hub's Qwen decoder block and RMS norm, as ``KerasHubQwenDecoder`` (``qwen/runtime.py``, built on
``llm/runtime.py``'s Llama block) and ``KerasHubRMSNorm``; the attention kernels keep Keras's shapes."""

from __future__ import annotations

from ....codegen import nodes as n
from ....layers.base import Converted, Ctx, Module, Op
from ....layers.common import apply_module, bind, cfg_bool, cfg_float, param
from ....layers.registry import converter
from ..common.converters import HUB, gated_decoder_shape, sublayer_weights
from ..common.converters_encoder import padding_mask


@converter(HUB + "QwenLayerNorm", wants="keras")
def qwen_norm(ctx: Ctx) -> Converted:
    """x * rsqrt(mean(x^2) + epsilon) * scale in float32: Llama's norm (``KerasHubRMSNorm``)."""
    dim = ctx.x.shape[-1]
    if dim is None:
        raise ctx.unsupported("the normalised axis has unknown size")
    w = bind(ctx, ["scale"])
    module = Module("KerasHubRMSNorm", (dim, cfg_float(ctx, "epsilon", 1e-6)))
    return Converted((apply_module(module),), (ctx.x,), (param("", "scale", w["scale"]),),
                     helpers=("KerasHubRMSNorm",))


def _positive(ctx: Ctx, key: str, default: float) -> float:
    value = ctx.config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ctx.unsupported(f"config {key!r} should be a positive number, found {value!r}")
    return value


@converter(HUB + "QwenTransformerDecoder", wants="keras")
def qwen_decoder(ctx: Ctx) -> Converted:
    masked = padding_mask(ctx, "decoder_padding_mask", {})
    hidden, inner, q_heads, kv_heads = gated_decoder_shape(ctx)
    # QwenDecoder's own defaults (4096, off) are never used: the backbone passes the window to the block; the
    # graph writes it into the block's config (the block's get_config drops it)
    window = None
    if cfg_bool(ctx, "use_sliding_window_attention", False):
        window = ctx.config.get("sliding_window_size", 4096)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            # keras-hub's TF backend keeps the whole band for a window below 1, its other backends none of it
            raise ctx.unsupported(f"sliding_window_size={window!r} with the window on")
    w = sublayer_weights(ctx, {
        **{f"self_attention_layer/{s}_dense": 2 for s in ("query", "key", "value")},
        "self_attention_layer/output_dense": 1, "self_attention_layernorm": 1, "feedforward_layernorm": 1,
        "feedforward_gate_dense": 1, "feedforward_intermediate_dense": 1, "feedforward_output_dense": 1})
    params = [param("", f"{s}_kernel", w[f"self_attention_layer/{s}_dense"][0]) for s in ("query", "key", "value", "output")]
    params += [param("", f"{s}_bias", w[f"self_attention_layer/{s}_dense"][1]) for s in ("query", "key", "value")]
    params += [param("", "self_attention_norm.scale", w["self_attention_layernorm"][0]),
               param("", "feedforward_norm.scale", w["feedforward_layernorm"][0]),
               param("", "gate.weight", w["feedforward_gate_dense"][0], "dense"),
               param("", "up.weight", w["feedforward_intermediate_dense"][0], "dense"),
               param("", "down.weight", w["feedforward_output_dense"][0], "dense")]
    kwargs = (("max_wavelength", _positive(ctx, "rope_max_wavelength", 10000)),
              ("scaling_factor", _positive(ctx, "rope_scaling_factor", 1.0)), ("sliding_window", window))
    module = Module("KerasHubQwenDecoder", (hidden, inner, q_heads, kv_heads, cfg_float(ctx, "layer_norm_epsilon")),
                    tuple((k, v) for k, v in kwargs if v is not None))
    call = n.call(n.M, n.arg(0), padding_mask=n.arg(1)) if masked else n.call(n.M, n.arg(0))
    return Converted((Op(call, module),), (ctx.x,), tuple(params), helpers=("KerasHubQwenDecoder",))
