"""keras-hub's GPT-style decoders built from ``TransformerDecoder`` (no cross-attention, causal, pre-norm):
GPT-2 (token + position embeddings added, tanh GELU) and OPT (TokenAndPositionEmbedding, ReLU).

Written from keras-hub 0.32's ``gpt2/gpt2_backbone.py`` and ``opt/opt_backbone.py``.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import GELU_TANH


def _decoder_layers(g: FunctionalGraph, x: Ref, args: Args, activation: Any) -> Ref:
    mask = g.input("padding_mask", (None,), "int32")
    heads, inner, dropout = args.int("num_heads"), args.int("intermediate_dim"), args.float("dropout", 0.1)
    for i in range(args.int("num_layers")):
        x = g.hub("TransformerDecoder", f"transformer_layer_{i}", {
            "intermediate_dim": inner, "num_heads": heads, "dropout": dropout, "activation": activation,
            "layer_norm_epsilon": 1e-5, "normalize_first": True}, x, decoder_padding_mask=mask)
    return g.layer("LayerNormalization", "layer_norm", {"axis": [-1], "epsilon": 1e-5}, x)


@builds("GPT2Backbone")
def gpt2(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    hidden = args.int("hidden_dim")
    ids = g.input("token_ids", (None,), "int32")
    tokens = g.layer("ReversibleEmbedding", "token_embedding",
                     {"input_dim": args.int("vocabulary_size"), "output_dim": hidden, "tie_weights": True}, ids)
    positions = g.hub("PositionEmbedding", "position_embedding",
                      {"sequence_length": args.int("max_sequence_length", 1024)}, tokens)
    x = g.layer("Add", "embeddings_add", {}, (tokens, positions))
    x = g.layer("Dropout", "embeddings_dropout", {"rate": args.float("dropout", 0.1)}, x)
    return g.model(args.class_name, _decoder_layers(g, x, args, GELU_TANH))


@builds("OPTBackbone")
def opt(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    ids = g.input("token_ids", (None,), "int32")
    x = g.hub("TokenAndPositionEmbedding", "embeddings", {
        "vocabulary_size": args.int("vocabulary_size"), "sequence_length": args.int("max_sequence_length", 2048),
        "embedding_dim": args.int("hidden_dim"), "tie_weights": True, "mask_zero": False}, ids)
    return g.model(args.class_name, _decoder_layers(g, x, args, "relu"))
