"""keras-hub's Llama-style decoder-only LMs: a token embedding, pre-norm decoder blocks (RMS norms, rotary
grouped-query attention, a SiLU-gated MLP) fed the padding mask, and a final RMS norm. Llama (and Llama 3,
the same class under another name; Llama 3.1's rotary frequency smoothing), Mistral (a sliding attention
window, an optional head size) and Qwen3 (per-head query/key RMS norms).

Written from keras-hub 0.32's ``llama/llama_backbone.py``, ``llama3/llama3_backbone.py``,
``mistral/mistral_backbone.py`` and ``qwen3/qwen3_backbone.py``. Llama's rope_position_scaling_factor other
than 1 is refused by the converter (``families/keras_hub/llm/converters.py`` says why).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph


def _decoder_lm(args: Args, block: str, norm: str, block_config: dict[str, Any], module: str, tie: bool) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    hidden, epsilon = args.int("hidden_dim"), args.float("layer_norm_epsilon", 1e-6)
    ids = g.input("token_ids", (None,), "int32")
    x = g.layer("ReversibleEmbedding", "token_embedding",
                {"input_dim": args.int("vocabulary_size"), "output_dim": hidden, "tie_weights": tie}, ids)
    mask = g.input("padding_mask", (None,), "int32")
    config = {"intermediate_dim": args.int("intermediate_dim"), "num_query_heads": args.int("num_query_heads"),
              "num_key_value_heads": args.int("num_key_value_heads"),
              "rope_max_wavelength": args.number("rope_max_wavelength", 10000), **block_config,
              "activation": "silu", "layer_norm_epsilon": epsilon, "dropout": args.number("dropout", 0)}
    for i in range(args.int("num_layers")):
        x = g.layer(block, f"transformer_layer_{i}", config, x, module=f"keras_hub.src.models.{module}",
                    registered=f"keras_hub>{block}", decoder_padding_mask=mask)
    x = g.layer(norm, "sequence_output_layernorm", {"epsilon": epsilon}, x,
                module=f"keras_hub.src.models.{module}", registered=f"keras_hub>{norm}")
    return g.model(args.class_name, x)


@builds("LlamaBackbone", "Llama3Backbone")  # Llama3Backbone subclasses LlamaBackbone and adds nothing
def llama(args: Args) -> dict[str, Any]:
    # LlamaTransformerDecoder saves the backbone's rope_position_scaling_factor as rope_scaling_factor
    rope = {"rope_scaling_factor": args.number("rope_position_scaling_factor", 1.0),
            **{k: args.raw(k) for k in ("rope_frequency_adjustment_factor", "rope_low_freq_factor",
                                        "rope_high_freq_factor", "rope_pretraining_sequence_length")}}
    return _decoder_lm(args, "LlamaTransformerDecoder", "LlamaLayerNorm", rope, "llama",
                       args.bool("tie_word_embeddings", False))


@builds("MistralBackbone")
def mistral(args: Args) -> dict[str, Any]:
    head_dim = args.raw("head_dim")
    if head_dim is not None:
        head_dim = args.int("head_dim")
    window = args.raw("sliding_window", 512)
    if window is not None:
        window = args.int("sliding_window")
    block = {"rope_scaling_factor": args.number("rope_scaling_factor", 1.0), "sliding_window": window,
             "head_dim": head_dim}
    return _decoder_lm(args, "MistralTransformerDecoder", "MistralLayerNormalization", block, "mistral", False)


@builds("Qwen3Backbone")
def qwen3(args: Args) -> dict[str, Any]:
    window = args.raw("sliding_window_size", 32768)
    if window is not None:
        window = args.int("sliding_window_size", minimum=0)
    block = {"head_dim": args.int("head_dim"), "rope_scaling_factor": args.number("rope_scaling_factor", 1.0),
             "sliding_window_size": window}
    return _decoder_lm(args, "Qwen3TransformerDecoder", "Qwen3LayerNorm", block, "qwen3",
                       args.bool("tie_word_embeddings", True))


GEMMA_BLOCK_EPSILON = 1e-6  # GemmaDecoderBlock's default layer_norm_epsilon


@builds("GemmaBackbone")
def gemma(args: Args) -> dict[str, Any]:
    """Gemma (and Gemma 2's options): embeddings scaled by sqrt(hidden_dim), GemmaDecoderBlocks (every
    other one with a sliding window when asked), a final RMSNormalization."""
    g = FunctionalGraph(args.name, args.dtype)
    hidden, epsilon = args.int("hidden_dim"), args.number("layer_norm_epsilon", 1e-6)
    ids = g.input("token_ids", (None,), "int32")
    x = g.layer("ReversibleEmbedding", "token_embedding", {
        "input_dim": args.int("vocabulary_size"), "output_dim": hidden, "tie_weights": True,
        "logit_soft_cap": args.raw("final_logit_soft_cap")}, ids)
    # x * ops.cast(ops.sqrt(hidden_dim), x.dtype): Keras saves the constant as a float32 tensor
    x = g.op("Multiply", "keras.src.ops.numpy", "multiply", {}, x,
             {"class_name": "__tensor__", "config": {"value": float(np.float32(np.sqrt(hidden))), "dtype": "float32"}})
    mask = g.input("padding_mask", (None,), "int32")
    windowed = args.bool("use_sliding_window_attention", False)
    config = {"hidden_dim": hidden, "intermediate_dim": args.int("intermediate_dim"), "head_dim": args.int("head_dim"),
              "num_query_heads": args.int("num_query_heads"), "num_key_value_heads": args.int("num_key_value_heads"),
              # keras-hub 0.32's GemmaBackbone builds its blocks without layer_norm_epsilon: their four norms keep
              # GemmaDecoderBlock's default; only final_normalization gets the backbone's value
              "layer_norm_epsilon": GEMMA_BLOCK_EPSILON, "dropout": args.number("dropout", 0),
              "use_post_ffw_norm": args.bool("use_post_ffw_norm", False),
              "use_post_attention_norm": args.bool("use_post_attention_norm", False),
              "logit_soft_cap": args.raw("attention_logit_soft_cap"),
              "sliding_window_size": args.int("sliding_window_size", 4096),
              "query_head_dim_normalize": args.bool("query_head_dim_normalize", True)}
    for i in range(args.int("num_layers")):
        x = g.layer("GemmaDecoderBlock", f"decoder_block_{i}", {**config, "use_sliding_window_attention":
                    windowed and i % 2 == 0}, x, module="keras_hub.src.models.gemma.gemma_decoder_block",
                    registered="keras_hub>GemmaDecoderBlock", padding_mask=mask)
    x = g.layer("RMSNormalization", "final_normalization", {"epsilon": epsilon}, x,
                module="keras_hub.src.models.gemma.rms_normalization", registered="keras_hub>RMSNormalization")
    return g.model(args.class_name, x)
