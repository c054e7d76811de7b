"""keras-hub's Qwen 2 / 2.5 decoder-only LM (``QwenBackbone``, exported as ``Qwen2Backbone`` too): a token
embedding, pre-norm ``QwenTransformerDecoder`` blocks (RMS norms, rotary grouped-query attention with biased
query/key/value projections, a SiLU-gated MLP) fed the padding mask, and a final ``QwenLayerNorm``.

Written from keras-hub 0.32's ``qwen/qwen_backbone.py``, ``qwen_decoder.py`` and ``qwen_attention.py``. Every
backbone argument reaches its op: ``layer_norm_epsilon`` both block norms and the final one (the attention
has no norm); ``rope_max_wavelength`` and ``rope_scaling_factor`` the attention's base ``RotaryEmbedding``
(linear: the inverse frequencies divided by the factor); ``use_sliding_window_attention`` and
``sliding_window_size`` the attention (the decoder's ``get_config`` leaves them out, so the graph carries
the live layer's attributes); head size is ``hidden_dim // num_query_heads`` (no argument).

``QwenCausalLM`` is the shared causal-LM head (``tasks/builder.py``'s ``causal_lm``), registered here.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..tasks.builder import causal_lm

_MODULE = "keras_hub.src.models.qwen"

builds("QwenCausalLM")(causal_lm)  # the backbone's token embedding in reverse, as Llama's


@builds("QwenBackbone")
def qwen(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    hidden, epsilon = args.int("hidden_dim"), args.number("layer_norm_epsilon", 1e-6)
    ids = g.input("token_ids", (None,), "int32")
    x = g.layer("ReversibleEmbedding", "token_embedding", {
        "input_dim": args.int("vocabulary_size"), "output_dim": hidden,
        "tie_weights": args.bool("tie_word_embeddings", True)}, ids)
    mask = g.input("padding_mask", (None,), "int32")
    windowed = args.bool("use_sliding_window_attention", False)
    window = args.raw("sliding_window_size", 32768)
    if windowed or window is not None:  # unused (and may be None, as in some Hugging Face configs) without the flag
        window = args.int("sliding_window_size", 32768, minimum=1 if windowed else 0)
    config = {"intermediate_dim": args.int("intermediate_dim"), "num_query_heads": args.int("num_query_heads"),
              "num_key_value_heads": args.int("num_key_value_heads"),
              "rope_max_wavelength": args.number("rope_max_wavelength", 10000),
              "rope_scaling_factor": args.number("rope_scaling_factor", 1.0), "activation": "silu",
              "layer_norm_epsilon": epsilon, "dropout": args.number("dropout", 0),
              "use_sliding_window_attention": windowed, "sliding_window_size": window}
    for i in range(args.int("num_layers")):
        x = g.layer("QwenTransformerDecoder", f"transformer_layer_{i}", config, x, module=f"{_MODULE}.qwen_decoder",
                    registered="keras_hub>QwenTransformerDecoder", decoder_padding_mask=mask)
    x = g.layer("QwenLayerNorm", "sequence_output_layernorm", {"epsilon": epsilon}, x,
                module=f"{_MODULE}.qwen_layernorm", registered="keras_hub>QwenLayerNorm")
    return g.model(args.class_name, x)
