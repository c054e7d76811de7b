"""keras-hub's Llama, Mistral, Qwen3 and Gemma decoder blocks and the RMS norms of these and of T5, as
``KerasHubLlamaDecoder`` / ``KerasHubGemmaDecoder`` and the norm helpers (``families/keras_hub/llm/runtime.py``,
``families/keras_hub/t5/runtime.py``); the attention kernels keep Keras's shapes."""

from __future__ import annotations

from ....codegen import nodes as n
from ....layers.base import Converted, Ctx, Module, Op
from ....layers.common import apply_module, bind, cfg_bool, cfg_float, cfg_int, param
from ....layers.registry import converter
from ..common.converters import HUB, gated_decoder_shape, sublayer_weights
from ..common.converters_encoder import padding_mask

_LLAMA, _MISTRAL, _QWEN3 = (HUB + c for c in ("LlamaTransformerDecoder", "MistralTransformerDecoder",
                                                "Qwen3TransformerDecoder"))

# keras-hub 0.32's Qwen3TransformerDecoder builds its Qwen3Attention without passing layer_norm_epsilon, so the
# per-head query/key RMS norms keep Qwen3Attention's default, never the backbone's layer_norm_epsilon (1e-6 in
# every preset): giving them the block's epsilon was off by 1.9e-3 relative, growing along the sequence
QWEN3_QK_NORM_EPSILON = 1e-5


# keras-hub's RMS norms -> (helper, weight name): Llama/Mistral/Qwen3 x * rsqrt(mean(x^2) + eps) * scale in
# float32; Gemma's scale is added to 1; T5's norm stays in the input's dtype.
_RMS_NORMS = {HUB + "LlamaLayerNorm": ("KerasHubRMSNorm", "scale"),
              HUB + "MistralLayerNormalization": ("KerasHubRMSNorm", "scale"),
              HUB + "Qwen3LayerNorm": ("KerasHubRMSNorm", "scale"),
              HUB + "RMSNormalization": ("KerasHubGemmaRMSNorm", "scale"),
              HUB + "T5LayerNorm": ("KerasHubT5LayerNorm", "weight")}


@converter(*_RMS_NORMS, wants="keras")
def rms_norm(ctx: Ctx) -> Converted:
    dim = ctx.x.shape[-1]
    if dim is None:
        raise ctx.unsupported("the normalised axis has unknown size")
    helper, weight = _RMS_NORMS[ctx.layer.class_name]
    w = bind(ctx, [weight])
    module = Module(helper, (dim, cfg_float(ctx, "epsilon", 1e-6)))
    return Converted((apply_module(module),), (ctx.x,), (param("", weight, w[weight]),), helpers=(helper,))


_SMOOTHING = ("rope_frequency_adjustment_factor", "rope_low_freq_factor", "rope_high_freq_factor",
              "rope_pretraining_sequence_length")


def _positive(ctx: Ctx, key: str) -> float:
    value = ctx.config.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ctx.unsupported(f"config {key!r} should be a positive number, found {value!r}")
    return float(value)


def _rope(ctx: Ctx) -> tuple[float, bool, tuple[float, ...] | None]:
    """(scaling factor, Llama's reciprocal form, Llama 3.1's frequency smoothing) of the block's rotary
    embedding."""
    scaling = cfg_float(ctx, "rope_scaling_factor", 1.0)
    if ctx.layer.class_name != _LLAMA:
        return scaling, False, None
    if scaling != 1.0:
        # keras-hub 0.32's LlamaRotaryEmbedding replaces the base class's inverse frequencies (which divide by
        # the factor) and so ignores it, while earlier releases divided the positions by it: what such a file
        # computes depends on the keras-hub release that loads it
        raise ctx.unsupported(f"rope_position_scaling_factor={scaling} (keras-hub 0.32 ignores it for Llama, "
                              "earlier releases scaled the positions by it)")
    given = [k for k in _SMOOTHING if ctx.config.get(k) is not None]
    if not given:
        return 1.0, True, None
    if len(given) < len(_SMOOTHING):  # keras-hub's LlamaRotaryEmbedding refuses these too
        raise ctx.unsupported(f"rotary smoothing with only {', '.join(given)} set: keras-hub needs all of "
                              f"{', '.join(_SMOOTHING)} or none")
    factor, low, high, length = (_positive(ctx, k) for k in _SMOOTHING)
    if high <= low:  # keras-hub's smooth factor divides by high - low
        raise ctx.unsupported(f"rope_high_freq_factor={high} is not above rope_low_freq_factor={low}")
    return 1.0, True, (factor, low, high, length)


@converter(_LLAMA, _MISTRAL, _QWEN3, wants="keras")
def llama_decoder(ctx: Ctx) -> Converted:
    masked = padding_mask(ctx, "decoder_padding_mask", {})
    hidden, inner, q_heads, kv_heads = gated_decoder_shape(ctx)
    head = cfg_int(ctx, "head_dim") if ctx.config.get("head_dim") is not None else hidden // q_heads
    scaling, reciprocal, smoothing = _rope(ctx)
    window = {_MISTRAL: ctx.config.get("sliding_window"), _QWEN3: ctx.config.get("sliding_window_size")}.get(
        ctx.layer.class_name) or None  # Qwen3: 0 / None mean no window
    qk_norm = ctx.layer.class_name == _QWEN3
    qk_epsilon = QWEN3_QK_NORM_EPSILON if qk_norm else None
    norms = {"self_attention_layer/query_dense_layer_norm": 1, "self_attention_layer/key_dense_layer_norm": 1}
    w = sublayer_weights(ctx, {
        **(norms if qk_norm else {}),
        **{f"self_attention_layer/{s}_dense": 1 for s in ("query", "key", "value", "output")},
        "self_attention_layernorm": 1, "feedforward_layernorm": 1, "feedforward_gate_dense": 1,
        "feedforward_intermediate_dense": 1, "feedforward_output_dense": 1})
    params = [param("", f"{s}_kernel", w[f"self_attention_layer/{s}_dense"][0])
              for s in ("query", "key", "value", "output")]
    params += [param("", "self_attention_norm.scale", w["self_attention_layernorm"][0]),
               param("", "feedforward_norm.scale", w["feedforward_layernorm"][0]),
               param("", "gate.weight", w["feedforward_gate_dense"][0], "dense"),
               param("", "up.weight", w["feedforward_intermediate_dense"][0], "dense"),
               param("", "down.weight", w["feedforward_output_dense"][0], "dense")]
    if qk_norm:
        params += [param("", f"{s}_norm.scale", w[f"self_attention_layer/{s}_dense_layer_norm"][0]) for s in ("query", "key")]
    kwargs = tuple((k, v) for k, v in (("max_wavelength", ctx.config.get("rope_max_wavelength", 10000)),
                                        ("scaling_factor", scaling), ("reciprocal", reciprocal),
                                        ("sliding_window", window), ("qk_norm_epsilon", qk_epsilon)))
    for key, value in kwargs[:1] + kwargs[3:4]:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ctx.unsupported(f"config {key!r} should be a positive number, found {value!r}")
    if smoothing is not None:
        kwargs += (("rope_smoothing", smoothing),)
    module = Module("KerasHubLlamaDecoder", (hidden, inner, q_heads, kv_heads, head, cfg_float(ctx, "layer_norm_epsilon")),
                    kwargs)
    call = n.call(n.M, n.arg(0), padding_mask=n.arg(1)) if masked else n.call(n.M, n.arg(0))
    return Converted((Op(call, module),), (ctx.x,), tuple(params),
                     helpers=("KerasHubRMSNorm", "KerasHubRotaryEmbedding", "KerasHubCausalMask", "KerasHubLlamaDecoder"))


@converter(HUB + "GemmaDecoderBlock", wants="keras")
def gemma_decoder(ctx: Ctx) -> Converted:
    masked = padding_mask(ctx, "padding_mask", {})
    hidden = ctx.x.shape[-1]
    if hidden != cfg_int(ctx, "hidden_dim"):
        raise ctx.unsupported(f"input of width {hidden}, but the block was built for {cfg_int(ctx, 'hidden_dim')}")
    inner, head = cfg_int(ctx, "intermediate_dim"), cfg_int(ctx, "head_dim")
    q_heads, kv_heads = cfg_int(ctx, "num_query_heads"), cfg_int(ctx, "num_key_value_heads")
    if q_heads % kv_heads:
        raise ctx.unsupported(f"num_query_heads={q_heads} is not a multiple of num_key_value_heads={kv_heads}")
    post_attention = cfg_bool(ctx, "use_post_attention_norm", False)
    post_ffw = cfg_bool(ctx, "use_post_ffw_norm", False)
    # keras-hub 0.32's GemmaDecoderBlock stores query_head_dim_normalize but builds CachedGemmaAttention with
    # query_head_dim_normalize=True whatever it is: queries are always scaled by 1/sqrt(head_dim) (reading the flag
    # was 1.3e-1 off where head_dim != hidden / heads, as in Gemma 2 27B's shape). np.sqrt in float64, cast to the
    # query's dtype by Keras: the same float32 as torch's multiply by it
    scale = 1.0 / float(head) ** 0.5
    cap = ctx.config.get("logit_soft_cap")
    window = cfg_int(ctx, "sliding_window_size") if cfg_bool(ctx, "use_sliding_window_attention", False) else None
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
        raise ctx.unsupported(f"config 'logit_soft_cap' should be a positive number, found {cap!r}")
    expected = {**{f"attention/{s}_dense": 1 for s in ("query", "key", "value", "output")},
                "pre_attention_norm": 1, "pre_ffw_norm": 1, "gating_ffw": 1, "gating_ffw_2": 1, "ffw_linear": 1,
                **({"post_attention_norm": 1} if post_attention else {}), **({"post_ffw_norm": 1} if post_ffw else {})}
    w = sublayer_weights(ctx, expected)
    names = {**{f"attention/{s}_dense": f"{s}_kernel" for s in ("query", "key", "value", "output")},
             "gating_ffw": "gate_kernel", "gating_ffw_2": "gate_2_kernel", "ffw_linear": "linear_kernel",
             **{norm: f"{norm}.scale" for norm in ("pre_attention_norm", "pre_ffw_norm", "post_attention_norm",
                                                  "post_ffw_norm")}}
    params = tuple(param("", names[key], variables[0]) for key, variables in w.items())
    kwargs = tuple((k, v) for k, v in (("logit_soft_cap", None if cap is None else float(cap)),
                                        ("sliding_window", window), ("post_attention_norm", post_attention),
                                        ("post_ffw_norm", post_ffw)) if v)
    module = Module("KerasHubGemmaDecoder", (hidden, inner, q_heads, kv_heads, head, cfg_float(ctx, "layer_norm_epsilon"),
                                             scale), kwargs)
    call = n.call(n.M, n.arg(0), padding_mask=n.arg(1)) if masked else n.call(n.M, n.arg(0))
    return Converted((Op(call, module),), (ctx.x,), params,
                     helpers=("KerasHubRotaryEmbedding", "KerasHubGemmaRMSNorm", "KerasHubCausalMask",
                              "KerasHubGemmaDecoder"))
