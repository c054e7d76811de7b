"""The BERT family of keras-hub encoders: BERT, ELECTRA and ALBERT (token, position and segment embeddings
added, then a LayerNorm; ALBERT shares each group's encoder layers across its calls), RoBERTa and DistilBERT (TokenAndPositionEmbedding), each followed by post-norm
``TransformerEncoder`` layers fed the padding mask; BERT and ELECTRA also pool the first token.

Written from each class's constructor in keras-hub 0.32 (``keras_hub/src/models/<model>/<model>_backbone.py``):
layer names, order, epsilons and activations as there.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref, sliced
from ..common.keras_layers import GELU_TANH


def encoder_layers(g: FunctionalGraph, x: Ref, args: Args, *, activation: Any, epsilon: float) -> Ref:
    """The padding-mask input (Keras lists it just before its first use), then the encoder layers."""
    mask = g.input("padding_mask", (None,), "int32")
    heads, inner, dropout = args.int("num_heads"), args.int("intermediate_dim"), args.float("dropout", 0.1)
    for i in range(args.int("num_layers")):
        x = g.hub("TransformerEncoder", f"transformer_layer_{i}", {
            "intermediate_dim": inner, "num_heads": heads, "dropout": dropout, "activation": activation,
            "layer_norm_epsilon": epsilon, "normalize_first": False}, x, padding_mask=mask)
    return x


def _segment_embedded(args: Args, vocabulary_key: str, width_key: str,
                      dropout: float = 0.1) -> tuple[FunctionalGraph, Ref, int]:
    """BERT/ELECTRA embeddings: (graph, x after the embedding LayerNorm and dropout, width)."""
    g = FunctionalGraph(args.name, args.dtype)
    width = args.int(width_key)
    ids = g.input("token_ids", (None,), "int32")
    tokens = g.layer("ReversibleEmbedding", "token_embedding",
                     {"input_dim": args.int(vocabulary_key), "output_dim": width, "tie_weights": True}, ids)
    segment_ids = g.input("segment_ids", (None,), "int32")
    positions = g.hub("PositionEmbedding", "position_embedding",
                      {"sequence_length": args.int("max_sequence_length", 512)}, tokens)
    segments = g.layer("Embedding", "segment_embedding",
                       {"input_dim": args.int("num_segments", 2), "output_dim": width}, segment_ids)
    x = g.layer("Add", "embeddings_add", {}, (tokens, positions, segments))
    x = g.layer("LayerNormalization", "embeddings_layer_norm", {"axis": [-1], "epsilon": 1e-12}, x)
    x = g.layer("Dropout", "embeddings_dropout", {"rate": args.float("dropout", dropout)}, x)
    return g, x, width


def _pooled(g: FunctionalGraph, x: Ref, hidden: int) -> dict[str, Ref]:
    first = g.op("GetItem", "keras.src.ops.numpy", "get_item", {}, x, [sliced(), 0, sliced()])
    pooled = g.layer("Dense", "pooled_dense", {"units": hidden, "activation": "tanh", "use_bias": True}, first)
    return {"sequence_output": x, "pooled_output": pooled}


@builds("BertBackbone")
def bert(args: Args) -> dict[str, Any]:
    g, x, hidden = _segment_embedded(args, "vocabulary_size", "hidden_dim")
    x = encoder_layers(g, x, args, activation=GELU_TANH, epsilon=1e-12)
    return g.model(args.class_name, _pooled(g, x, hidden))


@builds("ElectraBackbone")
def electra(args: Args) -> dict[str, Any]:
    g, x, width = _segment_embedded(args, "vocab_size", "embedding_dim")
    hidden = args.int("hidden_dim")
    if hidden != width:  # the embeddings are narrower than the encoder
        x = g.layer("Dense", "embeddings_projection", {"units": hidden, "use_bias": True}, x)
    x = encoder_layers(g, x, args, activation=GELU_TANH, epsilon=1e-12)
    return g.model(args.class_name, _pooled(g, x, hidden))


def _token_and_position(args: Args, layer_name: str, epsilon: float) -> dict[str, Any]:
    """RoBERTa/DistilBERT: one TokenAndPositionEmbedding, LayerNorm, dropout, exact-GELU encoders."""
    g = FunctionalGraph(args.name, args.dtype)
    ids = g.input("token_ids", (None,), "int32")
    x = g.hub("TokenAndPositionEmbedding", layer_name, {
        "vocabulary_size": args.int("vocabulary_size"), "sequence_length": args.int("max_sequence_length", 512),
        "embedding_dim": args.int("hidden_dim"), "tie_weights": True, "mask_zero": False}, ids)
    x = g.layer("LayerNormalization", "embeddings_layer_norm", {"axis": [-1], "epsilon": epsilon}, x)
    x = g.layer("Dropout", "embeddings_dropout", {"rate": args.float("dropout", 0.1)}, x)
    x = encoder_layers(g, x, args, activation="gelu", epsilon=epsilon)
    return g.model(args.class_name, x)


@builds("RobertaBackbone")
def roberta(args: Args) -> dict[str, Any]:
    return _token_and_position(args, "embeddings", 1e-5)


@builds("DistilBertBackbone")
def distil_bert(args: Args) -> dict[str, Any]:
    return _token_and_position(args, "token_and_position_embedding", 1e-12)


@builds("AlbertBackbone")
def albert(args: Args) -> dict[str, Any]:
    g, x, _ = _segment_embedded(args, "vocabulary_size", "embedding_dim", dropout=0.0)
    hidden = args.int("hidden_dim")
    x = g.layer("Dense", "embedding_projection", {"units": hidden, "use_bias": True}, x)
    mask = g.input("padding_mask", (None,), "int32")
    layers, groups, inner = args.int("num_layers"), args.int("num_groups", 1), args.int("num_inner_repetitions", 1)
    if layers % groups:
        raise args.fail("num_groups", f"a divisor of num_layers={layers} (keras-hub checks this)")
    config = {"intermediate_dim": args.int("intermediate_dim"), "num_heads": args.int("num_heads"),
              "dropout": args.float("dropout", 0.0), "activation": GELU_TANH, "layer_norm_epsilon": 1e-12,
              "normalize_first": False}
    for group in range(groups):
        for _ in range(layers // groups):  # the same layers again: a shared layer's next call
            for i in range(inner):
                x = g.hub("TransformerEncoder", f"group_{group}_inner_layer_{i}", config, x, padding_mask=mask)
    return g.model(args.class_name, _pooled(g, x, hidden))
