"""keras-hub's Llama-style decoder-only LMs: a token embedding, pre-norm decoder blocks (RMS norms, rotary
grouped-query attention, a SiLU-gated MLP) fed the padding mask, and a final RMS norm. Llama, Mistral
(a sliding attention window, an optional head size) and Qwen3 (per-head query/key RMS norms).

Written from keras-hub 0.32's ``llama/llama_backbone.py``, ``mistral/mistral_backbone.py`` and
``qwen3/qwen3_backbone.py``. Llama 3.1's
frequency smoothing (``rope_low_freq_factor`` …) and rope scaling other than 1 are refused by the converter.
"""

from __future__ import annotations

from typing import Any

from . import Args, builds
from .functional import FunctionalGraph


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


@builds("LlamaBackbone")
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
