"""keras-hub's T5Backbone: one token embedding shared by the encoder and the decoder, pre-norm
T5TransformerLayers (the first of each stack computes the relative position bias, masked, and hands it
on), T5LayerNorms. Written from keras-hub 0.32's ``t5/t5_backbone.py``.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref, sliced

_MODULE = "keras_hub.src.models.t5"


@builds("T5Backbone")
def t5(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    hidden, heads, layers = args.int("hidden_dim"), args.int("num_heads"), args.int("num_layers")
    kv_dim = args.raw("key_value_dim")
    kv_dim = hidden // heads if kv_dim is None else args.int("key_value_dim")
    dropout, epsilon = args.number("dropout", 0.1), args.number("layer_norm_epsilon", 1e-6)
    block = {"hidden_dim": hidden, "intermediate_dim": args.int("intermediate_dim"), "key_value_dim": kv_dim,
             "dropout": dropout, "activation": args.raw("activation", "relu"), "layer_norm_epsilon": epsilon,
             "num_heads": heads, "use_gated_activation": args.bool("use_gated_activation", True)}
    embedding = {"input_dim": args.int("vocabulary_size"), "output_dim": hidden,
                 "tie_weights": args.bool("tie_embedding_weights", True)}

    def layer(name: str, x: Ref, decoder: bool, first: bool, bias: Ref | None, **tensors: Any) -> tuple[Ref, Ref]:
        out = g.layer("T5TransformerLayer", name, {**block, "is_decoder": decoder, "use_relative_attention_bias": first},
                      x, module=f"{_MODULE}.t5_transformer_layer", registered="keras_hub>T5TransformerLayer",
                      position_bias=bias, use_causal_mask=decoder, **tensors)
        return out, Ref(out.layer, out.node, 1)

    def norm(name: str, x: Ref) -> Ref:
        return g.layer("T5LayerNorm", name, {"epsilon": epsilon}, x, module=f"{_MODULE}.t5_layer_norm",
                       registered="keras_hub>T5LayerNorm")

    encoder_ids = g.input("encoder_token_ids", (None,), "int32")
    encoder_mask = g.input("encoder_padding_mask", (None,), "int32")
    decoder_ids = g.input("decoder_token_ids", (None,), "int32")
    decoder_mask = g.input("decoder_padding_mask", (None,), "int32")
    x = g.layer("ReversibleEmbedding", "token_embedding", embedding, encoder_ids)
    x = g.layer("Dropout", "encoder_embedding_dropout", {"rate": dropout}, x)
    encoder_attention = g.op("GetItem", "keras.src.ops.numpy", g.auto_name("get_item"), {}, encoder_mask,
                             [sliced(), None, sliced()])  # mask[:, None, :]
    bias: Ref | None = None
    for i in range(layers):
        x, bias = layer(f"transformer_encoder_layer_{i}", x, False, i == 0, bias, attention_mask=encoder_attention)
    encoded = g.layer("Dropout", "encoder_output_dropout", {"rate": dropout}, norm("encoder_output_layer_norm", x))
    x = g.layer("ReversibleEmbedding", "token_embedding", embedding, decoder_ids)  # the same layer again
    x = g.layer("Dropout", "decoder_embedding_dropout", {"rate": dropout}, x)
    decoder_attention = g.op("GetItem", "keras.src.ops.numpy", g.auto_name("get_item"), {}, decoder_mask,
                             [sliced(), None, sliced()])
    bias = None
    for i in range(layers):
        x, bias = layer(f"transformer_decoder_layer_{i}", x, True, i == 0, bias, attention_mask=decoder_attention,
                        encoder_hidden_states=encoded, encoder_attention_mask=encoder_attention)
    decoded = g.layer("Dropout", "decoder_output_dropout", {"rate": dropout}, norm("decoder_output_layer_norm", x))
    return g.model(args.class_name, {"encoder_sequence_output": encoded, "decoder_sequence_output": decoded})
